"""``LinAlgError`` and the checks every linalg function shares: operand shapes and dtypes,
and the ``info`` of a factorization turned into PyTorch's error naming the batch element."""

from __future__ import annotations

from typing import Callable

import numpy as np

from tensorweaver.contract import dtypes
from tensorweaver.contract.errors import LinAlgError
from tensorweaver.ops.apply import check_backends
from tensorweaver.tensor import Tensor

#: The dtypes every linalg function takes, and those with ``complex_ok``: the checks below
#: test these sets first, since they run on every call.
_REAL = frozenset({dtypes.float32, dtypes.float64})
_ANY = _REAL | frozenset(dtypes.COMPLEX)


#: The functions whose PyTorch kernel, not an argument check, refuses integer input: a
#: NotImplementedError naming the kernel and PyTorch's name of the dtype.
_KERNELS = {
    "linalg.eigh": "linalg_eigh_cpu",
    "linalg.eigvalsh": "linalg_eigh_cpu",
    "linalg.lu_factor_ex": "lu_cpu",
    "linalg.lu": "lu_cpu",
    "linalg.solve_triangular": "triangular_solve_cpu",
    "cholesky_solve": "cholesky_solve_cpu",
    "cholesky_inverse": "cholesky_inverse_out_cpu",
    "linalg.householder_product": "orgqr_cpu",
    "geqrf": "geqrf_cpu",
    "ormqr": "ormqr_cpu",
}
#: The kernels that refuse float16 and bfloat16 with that NotImplementedError: those above,
#: and those of functions whose argument check refuses integers first (a RuntimeError).
_HALF_KERNELS = {
    **_KERNELS,
    "torch.linalg.ldl_factor_ex": "ldl_factor_kernel_cpu",
    "torch.linalg.ldl_solve": "ldl_solve_kernel_cpu",
    "linalg.qr": "geqrf_cpu",
    "linalg.svd": "linalg_svd_cpu",
    "linalg.svdvals": "linalg_svd_cpu",
    "linalg.eig": "linalg_eig_out_cpu",
    "linalg.eigvals": "linalg_eig_out_cpu",
    "linalg.det": "lu_cpu",
    "linalg.solve": "lu_cpu",
    "linalg.cholesky": "cholesky_cpu",
}


def check_float(name: str, *tensors: Tensor, complex_ok: bool = False) -> None:
    """float32 or float64 (or, with ``complex_ok``, complex64 or complex128) tensors."""
    for t in tensors:
        if complex_ok and t.dtype.is_complex:
            continue
        if not t.dtype.is_floating_point or t.dtype.itemsize < 4:
            kernel = (_HALF_KERNELS if t.dtype.is_floating_point else _KERNELS).get(name)
            if kernel is not None:
                raise NotImplementedError(
                    f"\"{kernel}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[t.dtype.name]}' "
                    f"({name} of a {t.dtype.name} tensor; cast with .double() or .float())"
                )
            also = " or complex" if complex_ok else ""
            raise RuntimeError(
                f"{name}: Expected a floating point{also} tensor as input. Got {t.dtype.name} "
                f"(linalg supports float32 and float64{also}; cast with .double() or .float())"
            )


def need_tensor(name: str, a: object, arg: str) -> None:
    """A TypeError for a list or number where a tensor belongs, as PyTorch's parser raises."""
    if not isinstance(a, Tensor):
        raise TypeError(
            f"{name.replace('.', '_')}(): argument '{arg}' (position 1) must be Tensor, not "
            f"{type(a).__name__} (wrap it in tw.tensor)"
        )


def check_matrix(name: str, a: Tensor, arg: str = "A", complex_ok: bool = False) -> None:
    try:
        if len(a.shape) >= 2 and a.dtype in (_ANY if complex_ok else _REAL):
            return
    except AttributeError:  # no tensor (free in the usual case, where nothing is raised)
        need_tensor(name, a, arg)
        raise
    if a.ndim < 2:
        raise RuntimeError(
            f"{name}: The input tensor {arg} must have at least 2 dimensions, got shape "
            f"{list(a.shape)}"
        )
    check_float(name, a, complex_ok=complex_ok)


def check_square(name: str, a: Tensor, arg: str = "A", complex_ok: bool = False) -> None:
    try:
        shape = a.shape
    except AttributeError:  # no tensor (free in the usual case, where nothing is raised)
        need_tensor(name, a, arg)
        raise
    if len(shape) >= 2 and shape[-1] == shape[-2] and a.dtype in (_ANY if complex_ok else _REAL):
        return
    check_matrix(name, a, arg, complex_ok)
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(
            f"{name}: {arg} must be batches of square matrices, but they are "
            f"{a.shape[-2]} by {a.shape[-1]} matrices"
        )


def check_square_and_matrix(name: str, a: Tensor, b: Tensor, a_arg: str, b_arg: str) -> None:
    """``check_square`` of ``a``, ``check_matrix`` of ``b`` and one backend for both, in that
    order; the usual case (real matrices on one backend) is one test."""
    sa, sb = a.shape, b.shape
    if (
        len(sa) >= 2
        and len(sb) >= 2
        and sa[-1] == sa[-2]
        and a.dtype in _REAL
        and b.dtype in _REAL
        and a.backend is b.backend
    ):
        return
    check_square(name, a, a_arg, complex_ok=True)
    check_matrix(name, b, b_arg, complex_ok=True)
    check_backends(name, (a, b))


def raise_for_info(
    name: str,
    info: Tensor,
    message: Callable[[int], str],
    error: type[RuntimeError] = LinAlgError,
) -> None:
    """Raise ``error`` for the first batch element whose ``info`` is nonzero, with
    ``message(info)`` after PyTorch's "(Batch element i): " prefix."""
    # The usual case, checked once per call: read in place where the backend can show its
    # memory (a copy took 0.8 us more); a small batch's raw bytes compared with zeros cost
    # half of count_nonzero, which a large one needs (the bytes are copied).
    view = getattr(info.backend, "host_view", None)
    codes = None if view is None else view(info.native)
    if codes is None:
        codes = np.asarray(info.backend.to_host(info.native))
    if codes.nbytes <= 256:
        if codes.tobytes() == bytes(codes.nbytes):
            return
    elif not np.count_nonzero(codes):
        return
    codes = codes.reshape(-1)
    first = int(np.flatnonzero(codes)[0])
    where = f"(Batch element {first}): " if info.ndim else ""
    raise error(f"{name}: {where}{message(int(codes[first]))}")
