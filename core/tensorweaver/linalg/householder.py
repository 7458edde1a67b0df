"""``tw.geqrf`` and ``tw.ormqr``: QR in LAPACK's compact form (R on and above the
diagonal, the Householder vectors below it, their scales ``tau``) and the product of a
matrix with the Q those reflectors make, without forming it."""

from __future__ import annotations

import numpy as np

from tensorweaver.linalg._shared import mH, result
from tensorweaver.linalg.errors import check_matrix
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops.complex import conj
from tensorweaver.ops.host_fallback import run_optional
from tensorweaver.ops.linalg import matmul
from tensorweaver.ops.order_stats import no_derivative
from tensorweaver.tensor import Tensor

Geqrf = result("geqrf", "a", "tau")


def reflector(A: Tensor, i: int) -> Tensor:
    """The Householder vector v_i (a column, ``A``'s rows long): 0 above row i, 1 on it,
    column i of ``A`` below it (LAPACK's storage)."""
    rows = cr.arange(A.shape[-2], device=A.device)
    v = ew.where(ew.lt(rows, i).unsqueeze(-1), 0.0, mv.narrow(A, -1, i, 1))
    return ew.where(ew.eq(rows, i).unsqueeze(-1), 1.0, v)


def _host_geqrf(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m, n = a.shape[-2:]
    if a.size == 0:
        return np.array(a, copy=True), np.zeros((*a.shape[:-2], min(m, n)), a.dtype)
    h, tau = np.linalg.qr(a, mode="raw")  # LAPACK geqrf; h is its output transposed
    return np.ascontiguousarray(np.swapaxes(h, -1, -2)), tau


def geqrf(input: Tensor) -> tuple:  # noqa: A002
    """``torch.geqrf``: (a, tau) of LAPACK's geqrf: R in the upper triangle of ``a``, the
    Householder vectors (unit diagonal implied) below it, Q = H_1 ... H_k with
    H_i = I - tau_i v_i v_i^H. Not differentiable, as PyTorch's."""
    if input.ndim < 2:
        raise RuntimeError(
            f"torch.geqrf: input must have at least 2 dimensions, got shape {list(input.shape)}"
        )
    check_matrix("geqrf", input, complex_ok=True)
    a, tau = run_optional(input.backend, "linalg_geqrf", _host_geqrf, input.dtype, input.native)
    out = (Tensor(a, input.backend, input.dtype), Tensor(tau, input.backend, input.dtype))
    error = NotImplementedError("the derivative for 'geqrf' is not implemented.")
    return Geqrf(*no_derivative(out, (input,), error))


def ormqr(
    input: Tensor,  # noqa: A002
    input2: Tensor,
    input3: Tensor,
    left: bool = True,
    transpose: bool = False,
) -> Tensor:
    """``torch.ormqr``: Q ``input3`` (``left``) or ``input3`` Q, with Q^H for ``transpose``,
    where Q = H_1 ... H_k is made of ``geqrf``'s reflectors ``input`` and scales ``input2``;
    differentiable in all three."""
    tau, other = input2, input3
    side = -2 if left else -1
    _check_ormqr(input, tau, other, side)
    k = tau.shape[-1]
    order = range(k) if left == transpose else reversed(range(k))
    out = other
    for i in order:
        v = reflector(input, i)
        t = mv.unsqueeze(mv.narrow(tau, -1, i, 1), -1)
        t = conj(t) if transpose else t
        if left:  # H C = C - t v (v^H C)
            out = ew.sub(out, ew.mul(t, matmul(v, matmul(mH(v), out))))
        else:  # C H = C - t (C v) v^H
            out = ew.sub(out, ew.mul(t, matmul(matmul(out, v), mH(v))))
    return out


def _check_ormqr(input: Tensor, tau: Tensor, other: Tensor, side: int) -> None:  # noqa: A002
    fn = "torch.ormqr"
    if input.ndim < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if other.ndim < 2:
        raise RuntimeError(f"{fn}: other must have at least 2 dimensions.")
    if tau.ndim < 1 or tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(
            f"{fn}: tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1]), "
            f"got tau of shape {list(tau.shape)}, other of shape {list(other.shape)} and "
            f"input of shape {list(input.shape)}"
        )
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"{fn}: other.shape[{side}] must be equal to input.shape[-2]")
    if input.ndim - tau.ndim != 1:
        raise RuntimeError(
            f"{fn}: Expected tau to have one dimension less than input, but got tau.ndim "
            f"equal to {tau.ndim} and input.ndim is equal to {input.ndim}"
        )
    if input.ndim != other.ndim:
        raise RuntimeError(
            f"{fn}: Expected other to have the same number of dimensions as input, but got "
            f"other.ndim equal to {other.ndim} and input.ndim is equal to {input.ndim}"
        )
    batch = list(input.shape[:-2])
    for name, t in (("tau", tau.shape[:-1]), ("other", other.shape[:-2])):
        if list(t) != batch:
            raise RuntimeError(
                f"{fn}: Expected batch dimensions of {name} to be equal to input.shape[:-2], "
                f"but got {list(t)}"
            )
    for name, t in (("tau", tau), ("other", other)):
        if t.dtype is not input.dtype:
            raise RuntimeError(
                f"{fn}: Expected input and {name} to have the same dtype, but input has dtype "
                f"{input.dtype.name} and {name} has dtype {t.dtype.name}"
            )
    check_matrix("ormqr", input, complex_ok=True)
