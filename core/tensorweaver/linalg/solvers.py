"""Solvers: linear systems (general, triangular, from a Cholesky factor), inverses, least
squares and the pseudo-inverse."""

from __future__ import annotations

import functools
import math
from typing import Any

from tensorweaver.amp import autocast_dtype, float32_operands, outside_autocast
from tensorweaver.autograd.engine import sum_to
from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.contract import dtypes
from tensorweaver.linalg import primitives as p
from tensorweaver.linalg._shared import broadcast_batch, eye_like, mH, mT, result, to_batch
from tensorweaver.linalg.eigen import eigh, svd, svdvals
from tensorweaver.linalg.errors import (
    check_float,
    check_matrix,
    check_square,
    check_square_and_matrix,
    need_tensor,
    raise_for_info,
)
from tensorweaver.linalg.fused import (
    OUTPUTS_ONLY,
    REAL,
    WITH_INFO,
    computes_whole,
    fused_or_reference,
)
from tensorweaver.linalg.one_node import formula_call
from tensorweaver.linalg.out import write
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops.apply import check_backends, labelled
from tensorweaver.ops.linalg import matmul
from tensorweaver.tensor import Tensor

SolveEx = result("linalg_solve_ex", "result", "info")
InvEx = result("linalg_inv_ex", "inverse", "info")
Lstsq = result("linalg_lstsq", "solution", "residuals", "rank", "singular_values")


def _singular(k: int) -> str:
    return "The solver failed because the input matrix is singular."


def _check_pair(name: str, A: Tensor, B: Tensor) -> None:
    check_square(name, A, complex_ok=True)
    if B.dtype is A.dtype and B.backend is A.backend and B.ndim:  # the usual case
        return
    if B.ndim == 0:  # a vector B has one dimension at least
        raise RuntimeError(f"{name}: The input tensor B must have at least 2 dimensions.")
    check_float(name, B, complex_ok=True)
    check_backends(name, (A, B))
    if A.dtype is not B.dtype:
        raise RuntimeError(
            f"{name}: Expected A and B to have the same dtype, but found A of type "
            f"{A.dtype.name} and B of type {B.dtype.name} instead"
        )


def solve_ex(
    A: Tensor,
    B: Tensor,
    *,
    left: bool = True,
    check_errors: bool = False,
) -> tuple:
    """(X, info) with A X = B (X A = B without ``left``); B a vector or a batch of them
    when its shape is A's but the last."""
    x, info = _solve_with_info(A, B, left)
    if check_errors:
        raise_for_info("torch.linalg.solve_ex", info, _singular)
    return SolveEx(x, info)


def _solve_with_info(A: Tensor, B: Tensor, left: bool) -> tuple[Tensor, Tensor]:
    _check_pair("linalg.solve", A, B)
    return fused_or_reference(
        "solve_ex",
        "LinalgSolveExBackward0",
        _solve_ex,
        (A, B),
        (left,),
        WITH_INFO,
        rule=_SOLVE_RULES[left],
    )


def _solve_gradient(inputs: tuple, x: Tensor, g: Tensor, left: bool) -> tuple:
    """PyTorch's solve gradient under ``create_graph`` where the backend computed the call:
    gB = A^{-H} gX (gX A^{-H} without ``left``) with A as it is now, gA = -gB X^H
    (-X^H gB) from the call's own X, as PyTorch's reads its saved A and result."""
    A, B = inputs
    gb = _solve_with_info(mH(A), g, left)[0]
    ga = None
    if A.requires_grad:
        if _vector(A, B):  # (one column)
            ga = matmul(mv.unsqueeze(gb, -1), mH(mv.unsqueeze(x, -1)))
        else:
            ga = matmul(gb, mH(x)) if left else matmul(mH(x), gb)
        ga = sum_to(ew.neg(ga), A.shape)
    return ga, (sum_to(gb, B.shape) if B.requires_grad else None)


def _solved_left(inputs: tuple, outputs: tuple, grads: tuple) -> tuple:
    return _solve_gradient(inputs, outputs[0], grads[0], True)


def _solved_right(inputs: tuple, outputs: tuple, grads: tuple) -> tuple:
    return _solve_gradient(inputs, outputs[0], grads[0], False)


#: solve's rule (linalg/fused.py), by ``left``.
_SOLVE_RULES = (_solved_right, _solved_left)


def _vector(A: Tensor, B: Tensor) -> bool:
    """Whether solve takes ``B`` for a vector (a batch of them)."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


def _solve_ex(A: Tensor, B: Tensor, left: bool) -> tuple[Tensor, Tensor]:
    vector = _vector(A, B)
    if vector:
        B = mv.unsqueeze(B, -1)
    if not left:
        if vector:
            raise RuntimeError(
                "linalg.solve: Vector broadcasting of the left hand side is not "
                "supported for left=False. In this case linalg.solve is "
                "equivalent to B / A.squeeze(-1)"
            )
        # (X as a view of the factor's node output: a write through X.data reaches it;
        # contiguous as torch's where the backend keeps X column-major, else a copy)
        x, info = _solve_ex(A.mT, B.mT, True)  # (views that follow A and B)
        x = x.mT
        return (x if x.is_contiguous() else x.contiguous()), info
    n = A.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(
            f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
            f"({A.shape[-2]}x{n} and {B.shape[-2]}x{B.shape[-1]})"
        )
    A, B = broadcast_batch("linalg.solve", A, B)
    x, info = p.solve_ex(A, B)
    # (a view of the node's output: a write through X.data reaches the array it keeps)
    return x.squeeze(-1) if vector else x, info


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """X with A X = B; LinAlgError naming the batch element where A is singular."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32),
        A, B = float32_operands(A, B)  # solve_ex is not
    _check_pair("linalg.solve", A, B)
    # A backend computing torch.linalg.solve whole checks its info itself, with this error
    # (no read of the info on the host: 1 us a call)
    return fused_or_reference(
        "solve",
        "LinalgSolveExBackward0",
        _checked_solve,
        (A, B),
        (left,),
        (None,),
        rule=_SOLVE_RULES[left],
    )[0]


def _checked_solve(A: Tensor, B: Tensor, left: bool) -> tuple:
    x, info = _solve_ex(A, B, left)
    raise_for_info("torch.linalg.solve", info, _singular)
    return (x,)


def solve_triangular(
    A: Tensor,
    B: Tensor,
    *,
    upper: bool,
    left: bool = True,
    unitriangular: bool = False,
    out: Tensor | None = None,
) -> Tensor:
    """X with A X = B (X A = B without ``left``), reading only A's upper or lower triangle
    (taking its diagonal as ones with ``unitriangular``). ``out=`` is PyTorch's, here rather
    than in ``tw.linalg``'s wrapper: this call's whole cost is a few us."""
    check_square_and_matrix("linalg.solve_triangular", A, B, "A", "B")
    x = fused_or_reference(
        "solve_triangular",
        "LinalgSolveTriangularBackward0",
        _solve_triangular,
        (A, B),
        (upper, left, unitriangular),
        (None,),
    )[0]
    return x if out is None else write("linalg.solve_triangular", x, out)


def _solve_triangular(A: Tensor, B: Tensor, upper: bool, left: bool, unitriangular: bool) -> tuple:
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return (mT(_solve_triangular(mT(A), mT(B), not upper, True, unitriangular)[0]),)
    if B.shape[-2] != A.shape[-1]:
        raise RuntimeError(
            "linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
            f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})"
        )
    A, B = broadcast_batch("linalg.solve_triangular", A, B)
    return (p.solve_triangular(A, B, upper, unitriangular),)


def _inverse_message(k: int) -> str:
    return (
        f"The diagonal element {k} is zero, the inversion could not be completed because the "
        "input matrix is singular."
    )


def inv_ex(A: Tensor, *, check_errors: bool = False) -> tuple:
    """(A^-1, info), info as LAPACK's getrf (the first zero pivot, 1-based)."""
    x, info = _inv_with_info(A)
    if check_errors:
        raise_for_info("linalg.inv_ex", info, _inverse_message)
    return InvEx(x, info)


def _inv_with_info(A: Tensor) -> tuple[Tensor, Tensor]:
    return fused_or_reference(
        "inv_ex",
        "LinalgInvExBackward0",
        _inv_ex,
        (_inv_operand(A),),
        (),
        WITH_INFO,
        rule=_inv_from_output,
    )


def _inv_operand(A: Tensor) -> Tensor:
    """``A`` checked, in float32 under autocast (on PyTorch's CPU list, amp.CPU_FLOAT32)."""
    if autocast_dtype() is not None:
        (A,) = float32_operands(A)
    check_square("linalg.inv", A, complex_ok=True)
    return A


def _inv_ex(A: Tensor) -> tuple[Tensor, Tensor]:
    with no_grad():
        x, info = p.solve_ex(A, to_batch(eye_like(A, A.shape[-1]), A.shape[:-2]))
    # One node keeping the inverse, whose rule reads it alone (:func:`inverse_gradient`), as
    # PyTorch's LinalgInvExBackward0: a write through ``.data`` into it reaches the gradient
    return p.composite("linalg_inv", x, A), info


def inv(A: Tensor) -> Tensor:
    """A^-1; LinAlgError naming the batch element and the zero pivot where A is singular."""
    # A backend computing torch.linalg.inv whole checks its info itself, with this error
    # (no read of the info on the host: 1 us a call)
    return fused_or_reference(
        "inv",
        "LinalgInvExBackward0",
        _checked_inv,
        (_inv_operand(A),),
        (),
        (None,),
        rule=_inv_from_output,
    )[0]


def _inv_from_output(inputs: tuple, outputs: tuple, grads: tuple) -> tuple:
    """The inverse's gradient under ``create_graph``, PyTorch's formula on the call's own
    output Y: -Y^H (G Y^H), so that a second backward passes the call's node again."""
    (y,), (g,) = outputs, grads
    return (inverse_gradient(y, g),)


OUTPUTS_ONLY.add(_inv_from_output)


def inverse_gradient(y: Tensor, g: Tensor) -> Tensor:
    """PyTorch's gradient of A from that of its inverse ``y``: -Y^H (G Y^H)."""
    yh = mH(y)
    return ew.neg(matmul(yh, matmul(g, yh)))


def _checked_inv(A: Tensor) -> tuple:
    x, info = _inv_ex(A)
    raise_for_info("linalg.inv", info, _inverse_message)
    return (x,)


def _cutoff(s_max: Tensor, m: int, n: int, atol: Any, rtol: Any, dtype: Any) -> Tensor:
    """max(atol, rtol * largest singular value), PyTorch's defaults: rtol = eps * max(m, n)
    when neither is given, 0 when only atol is."""
    eps = {dtypes.float32: 1.1920928955078125e-07, dtypes.float64: 2.220446049250313e-16}
    if rtol is None:
        rtol = eps[dtype] * max(m, n) if atol is None or _is_zero(atol) else 0.0
    atol = 0.0 if atol is None else atol
    return ew.maximum(_as_tensor(atol, s_max), ew.mul(s_max, _as_tensor(rtol, s_max)))


def _is_zero(value: Any) -> bool:
    return not isinstance(value, Tensor) and value == 0


def _as_tensor(value: Any, like: Tensor) -> Tensor:
    if isinstance(value, Tensor):  # one tolerance per matrix: it broadcasts over the batch
        return mv.unsqueeze(value.to(like.dtype), -1)
    return cr.full((), value, dtype=like.dtype, device=like.device)


def pinv(
    A: Tensor,
    rcond: Any = None,
    hermitian: bool = False,
    *,
    atol: Any = None,
    rtol: Any = None,
) -> Tensor:
    """The Moore-Penrose pseudo-inverse, dropping singular values at or below
    max(atol, rtol * the largest); its gradient is PyTorch's, finite where A is rank
    deficient (for perturbations that keep the rank). ``rcond`` is PyTorch's older
    spelling of ``rtol``."""
    check_matrix("linalg.pinv", A, complex_ok=True)
    if rcond is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.pinv(): give either rcond or atol/rtol, not both")
        rtol = rcond
    if autocast_dtype() is not None:  # PyTorch's is composed: autocast lowers its matmul
        return _pinv(A, atol, rtol, hermitian)
    if isinstance(atol, Tensor) or isinstance(rtol, Tensor):  # tensor tolerances: composed
        return _pinv_node(A, atol, rtol, hermitian)[0]
    return fused_or_reference(
        "pinv", "LinalgPinvBackward0", _pinv_node, (A,), (atol, rtol, hermitian), (None,)
    )[0]


def _pinv_node(A: Tensor, atol: Any, rtol: Any, hermitian: bool) -> tuple[Tensor]:
    with no_grad():
        value = _pinv(A.detach(), atol, rtol, hermitian)
    return (p.composite("linalg_pinv", value, A),)


def _pinv(A: Tensor, atol: Any, rtol: Any, hermitian: bool) -> Tensor:
    m, n = A.shape[-2:]
    if 0 in (m, n):
        return cr.zeros_like_shape(A, (*A.shape[:-2], n, m))
    if hermitian:
        values, vectors = eigh(A)
        size = ew.abs(values)
        cutoff = _cutoff(rd.amax(size, -1, keepdim=True), m, n, atol, rtol, size.dtype)
        keep = ew.gt(size, cutoff)
        scale = ew.where(keep, ew.reciprocal(ew.where(keep, values, 1.0)), 0.0)
        return matmul(ew.mul(vectors, mv.unsqueeze(scale, -2)), mH(vectors))
    u, s, vh = svd(A, full_matrices=False)
    keep = ew.gt(s, _cutoff(mv.narrow(s, -1, 0, 1), m, n, atol, rtol, s.dtype))
    scale = ew.where(keep, ew.reciprocal(ew.where(keep, s, 1.0)), 0.0)
    return matmul(ew.mul(mH(vh), mv.unsqueeze(scale, -2)), mH(u))


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> tuple:
    """(solution, residuals, rank, singular_values) of min ||A X - B||, as PyTorch's CPU
    drivers report them: rank for all but 'gels', singular values for 'gelsd' and 'gelss',
    residuals (squared, per column) where m > n, the driver is not 'gelsy' (the default)
    and every matrix has full rank (always taken so by 'gels')."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32): in float32
        # throughout (its matmul too: PyTorch's kernel runs below autocast)
        run = functools.partial(lstsq, driver=driver)
        return outside_autocast(run, *float32_operands(A, B), rcond)
    check_matrix("linalg.lstsq", A, complex_ok=True)
    driver = driver or None  # (None: the device's default, 'gelsy' on a CPU)
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(
            f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, "
            f"gelss), got {driver}"
        )
    if B.ndim == 0:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    static = (rcond, driver)
    graph = is_grad_enabled() and (A.requires_grad or B.requires_grad)
    if graph and not computes_whole(A.backend):
        # PyTorch's one node for the solution and the residuals, over (A, B), with its formula
        found = formula_call("LinalgLstsqBackward0", _lstsq, (A, B), static, (0, 1), _lstsq_rule)
        return Lstsq(*found)
    # The backend's lstsq where it computes it whole (its drivers, then its gradient)
    kinds = (None, REAL, dtypes.int64, A.dtype.to_real())
    found = fused_or_reference("lstsq", "LinalgLstsqBackward0", _lstsq, (A, B), static, kinds)
    return Lstsq(*found)


def _lstsq_rule(saved: tuple, grads: tuple) -> tuple:
    # (imported here: linalg_rules imports this module)
    from tensorweaver.autograd.linalg_rules import lstsq_backward

    # PyTorch's backward takes pinv(A) then, at the default tolerance whatever rcond, from A
    # as it is (its saved A, whose memory a write through ``.data`` reaches)
    return lstsq_backward((*saved, pinv(saved[0])), grads)


def _lstsq(A: Tensor, B: Tensor, rcond: float | None, driver: str | None) -> tuple:
    """lstsq's four outputs, by A's pseudo-inverse (at ``rcond``)."""
    driver = driver or "gelsy"
    vector = B.ndim == A.ndim - 1
    B = mv.unsqueeze(B, -1) if vector else B
    _check_pair_shapes(A, B)
    m, n = A.shape[-2:]
    inverse = pinv(A, rtol=rcond)
    solution = matmul(inverse, B)
    empty = cr.zeros(0, dtype=A.dtype.to_real(), device=A.device)  # real, as S and residuals
    ranks = matrix_rank(A, rtol=rcond)
    rank = empty.to(dtypes.int64) if driver == "gels" else ranks
    # Not differentiable, as PyTorch's
    values = svdvals(A.detach()) if driver in ("gelsd", "gelss") else empty
    # PyTorch's residuals are a differentiable output even when empty: an empty slice of
    # the solution's magnitudes carries the graph (real, as the residuals are).
    residuals = mv.narrow(mv.reshape(ew.abs(solution), (-1,)), 0, 0, 0)
    # 'gels' reports no rank, so PyTorch takes every matrix for full rank and always gives them
    full_rank = driver == "gels" or bool(rd.all(ew.eq(ranks, n)).item())
    if m > n and driver != "gelsy" and full_rank:
        residuals = rd.sum(ew.square(ew.abs(ew.sub(matmul(A, solution), B))), -2)
        if driver == "gels" and n == 0:  # LAPACK's gels returns at once: zeros, as PyTorch's
            residuals = ew.mul(residuals, 0.0)
    if vector:  # the residuals keep their column dimension, as PyTorch's
        solution = mv.squeeze(solution, -1)
    return solution, residuals, rank, values


def _check_pair_shapes(A: Tensor, B: Tensor) -> None:
    if A.shape[-2] != B.shape[-2]:
        raise RuntimeError(
            f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), got A of shape "
            f"{list(A.shape)} and B of shape {list(B.shape)}"
        )


def matrix_rank(
    A: Tensor,
    tol: Any = None,
    hermitian: bool = False,
    *,
    atol: Any = None,
    rtol: Any = None,
) -> Tensor:
    """The number of singular values above max(atol, rtol * the largest), int64; ``tol`` is
    PyTorch's older spelling of ``atol`` with ``rtol=0``."""
    if tol is not None:
        if atol is not None or rtol is not None:
            raise TypeError("linalg.matrix_rank(): give either tol or atol/rtol, not both")
        atol, rtol = tol, 0.0
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        A, atol, rtol = float32_operands(A, atol, rtol)
    check_matrix("linalg.matrix_rank", A, complex_ok=True)
    if isinstance(atol, Tensor) or isinstance(rtol, Tensor):  # tensor tolerances: composed
        return _matrix_rank(A, atol, rtol, hermitian)[0]
    static = (atol, rtol, hermitian)
    return fused_or_reference("matrix_rank", "", _matrix_rank, (A,), static, (dtypes.int64,))[0]


def _matrix_rank(A: Tensor, atol: Any, rtol: Any, hermitian: bool) -> tuple[Tensor]:
    m, n = A.shape[-2:]
    s = ew.abs(eigh(A)[0]) if hermitian else svdvals(A)
    if 0 in (m, n):
        return (cr.zeros(A.shape[:-2], dtype=dtypes.int64, device=A.device),)
    cutoff = _cutoff(rd.amax(s, -1, keepdim=True), m, n, atol, rtol, s.dtype)
    return (rd.sum(ew.gt(s, cutoff).to(dtypes.int64), -1),)


def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    """X with A X = ``input`` where A = L L^T for L = ``input2`` (U^T U with ``upper``),
    ``torch.cholesky_solve`` (PyTorch's keyword names)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        input, input2 = float32_operands(input, input2)
    check_square_and_matrix("cholesky_solve", input2, input, "input2", "input")
    if input.dtype is not input2.dtype:
        names = dtypes.SCALAR_TYPE_NAMES
        raise RuntimeError(
            f"Expected b and A to have the same dtype, but found b of type "
            f"{names[input.dtype.name]} and A of type {names[input2.dtype.name]} instead."
        )
    if input2.shape[-1] != input.shape[-2]:
        raise RuntimeError(
            f"Incompatible matrix sizes for cholesky_solve: each A matrix is {input2.shape[-1]} "
            f"by {input2.shape[-1]} but each b matrix is {input.shape[-2]} by {input.shape[-1]} "
            f"(input {list(input.shape)}, input2 {list(input2.shape)})"
        )
    return fused_or_reference(
        "cholesky_solve",
        "CholeskySolveBackward0",
        _cholesky_solve,
        (input, input2),
        (upper,),
        (None,),
    )[0]


def _cholesky_solve(B: Tensor, L: Tensor, upper: bool) -> tuple:
    L, B = broadcast_batch("cholesky_solve", L, B)
    # One node with PyTorch's rule: its gradient reaches the whole of L (the formula's), where
    # the triangular solves' would reach one triangle
    with no_grad():
        value = cholesky_solve_value(B.detach(), L.detach(), upper)
    return (p.composite("linalg_cholesky_solve", value, B, L, saved=upper),)


def cholesky_solve_value(B: Tensor, L: Tensor, upper: bool) -> Tensor:
    """X with L L^H X = B (U^H U X = B with ``upper``) by two triangular solves, L and B of
    one batch shape."""
    factor = mH(L) if upper else L
    y = p.solve_triangular(factor, B, False, False)
    return p.solve_triangular(mH(factor), y, True, False)


def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:  # noqa: A002
    """A^-1 where A = L L^T for L = ``input`` (U^T U with ``upper``),
    ``torch.cholesky_inverse``."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (input,) = float32_operands(input)
    check_square("cholesky_inverse", input, "input", complex_ok=True)
    eye = to_batch(eye_like(input, input.shape[-1]), input.shape[:-2])
    # PyTorch's node for it: its one input, the factor
    return labelled(cholesky_solve(eye, input, upper), "CholeskyInverseBackward0", input)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """The inverse of A read as a matrix of its first ``ind`` dimensions by the rest, shaped
    ``A.shape[ind:] + A.shape[:ind]``."""
    need_tensor("linalg.tensorinv", A, "input")
    rows, cols = A.shape[:ind], A.shape[ind:]
    if ind <= 0 or math.prod(rows) != math.prod(cols):
        raise RuntimeError(
            f"linalg.tensorinv: Expected self to satisfy the requirement "
            f"prod(self.shape[ind:]) == prod(self.shape[:ind]), but got {math.prod(cols)} != "
            f"{math.prod(rows)} (shape {list(A.shape)}, ind={ind})"
        )
    square = mv.reshape(A, (math.prod(rows), math.prod(cols)))
    return mv.reshape(inv(square), (*cols, *rows))


def tensorsolve(A: Tensor, B: Tensor, dims: tuple[int, ...] | None = None) -> Tensor:
    """X with tensordot(A, X, X.ndim) = B; ``dims`` of A move to its end first."""
    if dims is not None:
        A = mv.movedim(A, tuple(dims), tuple(range(A.ndim - len(dims), A.ndim)))
    result = A.shape[B.ndim :]
    matrix = mv.reshape(A, (B.numel(), math.prod(result)))
    return mv.reshape(solve(matrix, mv.reshape(B, (B.numel(),))), result)
