"""The linalg primitives as tensor ops: the backend's kernel or the host's (through
:func:`~tensorweaver.ops.host_fallback.run_optional`), one graph node per call.

A factorization has several outputs and a node has one, so where a graph is recorded the
outputs are packed side by side along one last axis into the node's output and handed out
as slices of it: a gradient rule gets them back with :func:`outputs` and their gradients
with :func:`output_grads` (zeros for the outputs a program did not use).
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Callable

from tensorweaver.autograd.graph import _Packed, _unpacks_through
from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS, HooksOff, shape_of
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.linalg import host
from tensorweaver.ops import complex as cx
from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import apply, labelled
from tensorweaver.ops.host_fallback import run_optional
from tensorweaver.tensor import Tensor


def _run(name: str, host_fn: Callable[..., Any], x: Tensor, *args: Any) -> Any:
    return run_optional(x.backend, name, host_fn, x.dtype, *args)


def _run_real(name: str, host_fn: Callable[..., Any], x: Tensor, *args: Any) -> Any:
    """:func:`_run` of a primitive whose float results are real for complex ``x``
    (eigenvalues of a Hermitian matrix, singular values): the host's come back in the real
    dtype of ``x``'s precision."""
    dtype = x.dtype.to_real() if x.dtype.is_complex else x.dtype
    return run_optional(x.backend, name, host_fn, dtype, *args)


def _graph(inputs: tuple) -> bool:
    return is_grad_enabled() and any(t.requires_grad for t in inputs)


#: PyTorch's grad_fn names of the primitives' outputs.
GRAD_FN = {
    "linalg_cholesky": "LinalgCholeskyExBackward0",
    "linalg_lu_factor": "LinalgLuFactorExBackward0",
    "linalg_solve": "LinalgSolveExBackward0",
    "linalg_solve_triangular": "LinalgSolveTriangularBackward0",
    "linalg_qr": "LinalgQrBackward0",
    "linalg_eigh": "LinalgEighBackward0",
    "linalg_eig": "LinalgEigBackward0",
    "linalg_svd": "LinalgSvdBackward0",
    "linalg_det": "LinalgDetBackward0",
    "linalg_inv": "LinalgInvExBackward0",
    "linalg_slogdet": "LinalgSlogdetBackward0",
    "linalg_pinv": "LinalgPinvBackward0",
    "linalg_cholesky_solve": "CholeskySolveBackward0",
    # A result that does not depend on the input's values, yet requires grad as PyTorch's does
    "linalg_vector_norm_0": "LinalgVectorNormBackward0",
}


def _wrap(
    natives: tuple,
    x: Tensor,
    op: str,
    inputs: tuple,
    saved: Any = None,
    dtype: DType | None = None,
    real: tuple = (),
) -> tuple:
    """Tensors of the float ``natives`` (of ``dtype``, else ``x``'s), one node ``op`` for all;
    those numbered ``real`` are of the real dtype where ``dtype`` is complex (eigenvalues of
    a Hermitian matrix, singular values)."""
    dtype = dtype or x.dtype
    real = real if dtype.is_complex else ()
    if not _graph(inputs):
        if not real:
            return tuple(Tensor(n, x.backend, dtype) for n in natives)
        return tuple(
            Tensor(n, x.backend, dtype.to_real() if i in real else dtype)
            for i, n in enumerate(natives)
        )
    backend = x.backend
    if real:  # the node packs its outputs as complex numbers: the real ones are their parts
        natives = tuple(backend.cast(n, dtype) if i in real else n for i, n in enumerate(natives))
    if len(natives) == 1:
        # One output of the first input's dtype, nothing else saved: the node keeps its array
        # alone, so that a write through ``.data`` into the output reaches it (autograd/node.py
        # output_rewritten), as PyTorch's node reads its saved result's memory
        kept = natives[0] if saved is None and dtype is inputs[0].dtype else None
        if kept is None:
            kept = (saved, None, natives[0], dtype)
        outs: tuple = (apply(op, natives[0], dtype, inputs, kept),)
        if op in ("linalg_inv", "linalg_cholesky"):  # (PyTorch's node saves the inverse
            # or the factor alone, as the rule reads: an in-place change of A is no error)
            outs[0]._node.inputs = (shape_of(inputs[0]),)
        if SAVED_TENSORS_HOOKS and op in _PACKS_RESULT:
            node = outs[0]._node
            if op == "linalg_det":
                _pack_matrix_as_called(node, inputs[0])
            _pack_result(node, natives[0], x.backend, dtype)
    else:
        batch = len(x.shape) - 2
        tails = tuple(tuple(n.shape)[batch:] for n in natives)
        lead = tuple(natives[0].shape)[:batch]
        flat = [backend.reshape(n, (*lead, math.prod(t))) for n, t in zip(natives, tails)]
        packed = backend.cat(flat, batch)
        outs = _unpack(apply(op, packed, dtype, inputs, (saved, tails, packed, dtype)), tails)
    if real:
        outs = tuple(cx.real(out) if i in real else out for i, out in enumerate(outs))
    return tuple(labelled(out, GRAD_FN[op], *inputs) for out in outs)


#: The primitives whose PyTorch node saves their one result: under saved_tensors_hooks it
#: goes through the pack hook (det's also packs A as it was at the call, for the LU factors
#: PyTorch's node saves: :func:`_pack_matrix_as_called`).
_PACKS_RESULT = frozenset(("linalg_det", "linalg_inv", "linalg_cholesky"))


def _pack_matrix_as_called(node: Any, a: Tensor) -> None:
    """det's node under saved_tensors_hooks: A as it is at the call goes through the pack
    hook too (a tensor of its own over A's array, as PyTorch's node packs A's LU factors,
    which a later write into A leaves), and its first-order rule reads what unpack gives of
    it, in place of what unpack gives of A."""
    stand = Tensor(a.native, a.backend, a.dtype)
    with HooksOff() as (pack, _):
        node.inputs = (_Packed(stand, pack(stand)),)


def _pack_result(node: Any, native: Any, backend: Any, dtype: DType) -> None:
    """Pass the result ``node`` keeps through the innermost pack hook, as PyTorch's node
    packs its saved result: the node keeps what pack returned, its rule reads what unpack
    gives, and the tensor pack was given follows later changes of the output (in place or
    through ``.data``: autograd/graph.py ``packed_output_follows``), unchecked by version."""
    given = Tensor(native, backend, dtype)  # (not the output: no cycle through the node)
    with HooksOff() as (pack, unpack):
        packed = _Packed(given, pack(given))
    packed.output = weakref.ref(given)
    node.saved = packed
    _unpacks_through(node, unpack)


def _unpack(packed: Tensor, tails: tuple) -> tuple:
    lead = packed.shape[:-1]
    out, start = [], 0
    for tail in tails:
        size = math.prod(tail)
        piece = mv.narrow(packed, -1, start, size)
        out.append(mv.reshape(piece, (*lead, *tail)))
        start += size
    return tuple(out)


def outputs(node: Any) -> tuple:
    """The node's outputs, still attached to it (so a gradient rule is differentiable)."""
    kept = node.saved
    if type(kept) is not tuple:  # (one output, kept alone: see _wrap)
        return (node.output(kept),)
    _, tails, packed, dtype = kept
    out = node.output(packed)
    out._dtype = dtype  # node.output gives the input's dtype: eig's outputs are complex
    return (out,) if tails is None else _unpack(out, tails)


def output_grads(node: Any, g: Tensor) -> tuple:
    """The gradients of the node's outputs, cut from the packed gradient ``g``."""
    kept = node.saved
    return (g,) if type(kept) is not tuple or kept[1] is None else _unpack(g, kept[1])


def saved(node: Any) -> Any:
    """What the op saved for its rule (mode, uplo, pivots, ...)."""
    kept = node.saved
    return kept[0] if type(kept) is tuple else None


def _int(native: Any, x: Tensor) -> Tensor:
    return Tensor(native, x.backend, dtypes.int32)


def composite(op: str, value: Tensor, *inputs: Tensor, saved: Any = None) -> Tensor:
    """``value`` (computed from ``inputs`` without a graph) as the output of one node
    ``op``, whose gradient rule is PyTorch's formula rather than the composition's."""
    return _wrap((value.native,), inputs[0], op, inputs, saved, value.dtype)[0]


def cholesky_ex(a: Tensor) -> tuple[Tensor, Tensor]:
    """(L, info): the lower factor of A's lower triangle; info as LAPACK's potrf."""
    factor, info = _run("linalg_cholesky_ex", host.cholesky_ex, a, a.native)
    return (*_wrap((factor,), a, "linalg_cholesky", (a,)), _int(info, a))


def lu_factor_ex(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(LU, pivots, info) as LAPACK's getrf (pivots 1-based)."""
    lu, pivots, info = _run("linalg_lu_factor_ex", host.lu_factor_ex, a, a.native)
    pivots = _int(pivots, a)
    return (*_wrap((lu,), a, "linalg_lu_factor", (a,), pivots), pivots, _int(info, a))


def solve_ex(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """(X, info) with A X = B; A and B share one batch shape."""
    x, info = _run("linalg_solve_ex", host.solve_ex, a, a.native, b.native)
    # (A's array kept for the first-order rule, as det's)
    return (*_wrap((x,), a, "linalg_solve", (a, b), a.native), _int(info, a))


def solve_triangular(a: Tensor, b: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """X with A X = B for triangular A (one batch shape)."""
    args = (a.native, b.native, upper, unitriangular)
    x = _run("linalg_solve_triangular", host.solve_triangular, a, *args)
    return _wrap((x,), a, "linalg_solve_triangular", (a, b), (upper, unitriangular))[0]


def qr(a: Tensor, mode: str) -> tuple[Tensor, Tensor]:
    q, r = _run("linalg_qr", host.qr, a, a.native, mode)
    return _wrap((q, r), a, "linalg_qr", (a,), mode)


def eigh(a: Tensor, uplo: str) -> tuple[Tensor, Tensor]:
    values, vectors = _run_real("linalg_eigh", host.eigh, a, a.native, uplo)
    return _wrap((values, vectors), a, "linalg_eigh", (a,), uplo, real=(0,))


def eig(a: Tensor) -> tuple[Tensor, Tensor]:
    """(eigenvalues, eigenvectors) of square matrices, complex whatever ``a``'s dtype."""
    dtype = a.dtype.to_complex()
    values, vectors = run_optional(a.backend, "linalg_eig", host.eig, dtype, a.native)
    return _wrap((values, vectors), a, "linalg_eig", (a,), dtype=dtype)


def svd(a: Tensor, full_matrices: bool) -> tuple[Tensor, Tensor, Tensor]:
    u, s, vh = _run_real("linalg_svd", host.svd, a, a.native, full_matrices)
    return _wrap((u, s, vh), a, "linalg_svd", (a,), full_matrices, real=(1,))


def det(a: Tensor) -> Tensor:
    # (A's array now: the first-order rule reads it, as PyTorch's reads the LU factors of A
    # it saved, which a later write through A's .data does not reach)
    value = _run("linalg_det", host.det, a, a.native)
    return _wrap((value,), a, "linalg_det", (a,), a.native)[0]


def slogdet(a: Tensor) -> tuple[Tensor, Tensor]:
    sign, logabs = _run_real("linalg_slogdet", host.slogdet, a, a.native)
    return _wrap((sign, logabs), a, "linalg_slogdet", (a,), real=(1,))
