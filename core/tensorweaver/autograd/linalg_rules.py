"""Gradient rules of the optional linalg primitives (API 2.3; tril and triu, 2.4), merged into
:data:`tensorweaver.autograd.gradients.GRADIENTS` and written by that module's conventions
(a rule takes the node and its output's gradient, returns one gradient per input).

The formulas are PyTorch's (``torch/csrc/autograd/FunctionsManual.cpp``), written with
tensor ops so they run on every backend and differentiate again. A factorization's node
packs its outputs (``tensorweaver.linalg.primitives``): :func:`outputs` and
:func:`output_grads` unpack them, the gradient of an unused output being zeros. eigh's and
svd's rules take an all-zero eigenvector (singular-vector) gradient for PyTorch's undefined
one, whose terms PyTorch skips: eigenvalues alone stay differentiable at repeated
eigenvalues, while a gradient through the vectors there is inf or NaN, as PyTorch's
division by the gaps gives. eig's formula is ``tensorweaver.linalg.eig_gradient``'s, shared
with a backend's whole eig; qr's, eigh's and svd's are
``tensorweaver.linalg.decomposition_gradients``', shared with those calls' one node.
"""

from __future__ import annotations

from typing import Any, Callable

from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.linalg import primitives as p
from tensorweaver.linalg._shared import eye_like, is_given, mH, mT
from tensorweaver.linalg.decomposition_gradients import (
    eigh_backward,
    qr_backward,
    svd_backward,
    tri_solve_right,
)
from tensorweaver.linalg.determinants import det_gradient
from tensorweaver.linalg.eig_gradient import eig_backward
from tensorweaver.linalg.factorizations import unpack
from tensorweaver.linalg.fused_backward import function_backward, output_backward, outputs_backward
from tensorweaver.linalg.primitives import output_grads, outputs, saved
from tensorweaver.linalg.solvers import cholesky_solve_value, inverse_gradient, solve_triangular
from tensorweaver.ops import complex as cx
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops.complex import conj_physical
from tensorweaver.ops.creation import zeros_like
from tensorweaver.ops.linalg import matmul
from tensorweaver.tensor import Tensor


def _needs(node: Any, i: int) -> bool:
    return node.parents[i] is not None


def _cholesky(node: Any, g: Tensor) -> tuple:
    (low,) = outputs(node)
    return (cholesky_gradient(low, g),)


def cholesky_gradient(low: Tensor, g: Tensor) -> Tensor:
    """PyTorch's cholesky_backward: A's gradient from that of its lower factor ``low``
    (also the torch:cpu whole call's rule under create_graph, linalg/fused.py)."""
    # L^{-H} Phi L^{-1}, Phi = tril(L^H gL) with its diagonal halved, symmetrized
    phi = mv.tril(matmul(mH(low), g))
    phi = ew.mul(ew.add(phi, mH(mv.tril(phi, -1))), 0.5)
    ga = p.solve_triangular(mH(low), phi, True, False)
    return tri_solve_right(low, ga, False)


def _solve(node: Any, g: Tensor) -> tuple:
    """Without a graph from A as it was at the call (PyTorch's LU factors of it), with one
    from A as it is now (PyTorch solves with its saved A then)."""
    a, _ = node.inputs
    if not is_grad_enabled():
        a = Tensor(saved(node), a.backend, a.dtype)
    (x,) = outputs(node)
    gb = p.solve_ex(mH(a), g)[0]
    return (ew.neg(matmul(gb, mH(x))) if _needs(node, 0) else None), gb


def _inv(node: Any, g: Tensor) -> tuple:
    """From the inverse the node kept (a write through ``.data`` reaches it), as PyTorch's."""
    (y,) = outputs(node)
    return (inverse_gradient(y, g),)


def _solve_triangular(node: Any, g: Tensor) -> tuple:
    a, _ = node.inputs
    upper, unit = saved(node)
    (x,) = outputs(node)
    gb = p.solve_triangular(mH(a), g, not upper, unit)
    ga = None
    if _needs(node, 0):
        ga = ew.neg(matmul(gb, mH(x)))
        offset = 1 if unit else 0
        ga = mv.triu(ga, offset) if upper else mv.tril(ga, -offset)
    return ga, gb


def _given(g: Tensor) -> Tensor | None:
    """A primitive node's gradient of one output, None where it counts as unused (all zeros:
    :func:`output_grads` gives zeros for an output without one)."""
    return g if is_given(g) else None


def _eigh(node: Any, g: Tensor) -> tuple:
    values, vectors = outputs(node)
    g_values, g_vectors = output_grads(node, g)
    g_vectors = _given(g_vectors)
    if g_vectors is not None and vectors.dtype.is_complex:
        g_values = _given(g_values)  # (the diagonal's imaginary part stays without one)
    return (eigh_backward(values, vectors, g_values, g_vectors),)


def _eig(node: Any, g: Tensor) -> tuple:
    return (eig_backward(*outputs(node), *output_grads(node, g)),)


def _svd(node: Any, g: Tensor) -> tuple:
    u, s, vh = outputs(node)
    gu, gs, gvh = output_grads(node, g)
    return (svd_backward(u, s, vh, _given(gu), gs, _given(gvh)),)


def _qr(node: Any, g: Tensor) -> tuple:
    return (qr_backward(*outputs(node), *output_grads(node, g)),)


def _lu_factor(node: Any, g: Tensor) -> tuple:
    (lu,) = outputs(node)
    perm, low, up = unpack(lu, saved(node))
    m, n = lu.shape[-2:]
    k = min(m, n)
    g_low = mv.narrow(mv.tril(g, -1), -1, 0, k)
    g_up = mv.narrow(mv.triu(g), -2, 0, k)
    if m == n:
        ga = ew.add(mv.tril(matmul(mH(low), g_low), -1), mv.triu(matmul(g_up, mH(up))))
        ga = tri_solve_right(mH(up), ga, False)
        ga = p.solve_triangular(mH(low), ga, True, True)
    elif m < n:  # wide: U = [U1 | U2]
        u1 = mv.narrow(up, -1, 0, k)
        ga = ew.sub(matmul(mH(low), g_low), matmul(mv.triu(g_up), mH(up)))
        ga = tri_solve_right(mH(u1), mv.tril(ga, -1), False)
        ga = mv.cat(
            [ew.add(ga, mv.triu(mv.narrow(g_up, -1, 0, k))), mv.narrow(g_up, -1, k, n - k)], -1
        )
        ga = p.solve_triangular(mH(low), ga, True, True)
    else:  # tall: L = [L1; L2]
        l1 = mv.narrow(low, -2, 0, k)
        ga = ew.sub(matmul(g_up, mH(up)), matmul(mH(low), mv.tril(g_low, -1)))
        ga = p.solve_triangular(mH(l1), mv.triu(ga), True, True)
        ga = mv.cat(
            [ew.add(ga, mv.tril(mv.narrow(g_low, -2, 0, k), -1)), mv.narrow(g_low, -2, k, m - k)],
            -2,
        )
        ga = tri_solve_right(mH(up), ga, False)
    return (matmul(perm, ga),)


def _det(node: Any, g: Tensor) -> tuple:
    """g conj(det) A^{-H}. Where det is 0, PyTorch's first-order gradient is 0 (its LU solve of
    0 * I); under create_graph linalg/determinants.py det_gradient's."""
    (a,) = node.inputs
    (d,) = outputs(node)
    if is_grad_enabled():
        return (det_gradient(a, d, g),)
    # (from A as it was: PyTorch's LU factors of it; under saved_tensors_hooks the node
    # keeps its packed result alone, and A is what unpack gave of A as it was)
    then = saved(node)
    if then is not None:
        a = Tensor(then, a.backend, a.dtype)
    scale = mv.unsqueeze(mv.unsqueeze(ew.mul(g, conj_physical(d)), -1), -1)
    eye = mv.expand(eye_like(a, a.shape[-1]), a.shape)
    singular = mv.unsqueeze(mv.unsqueeze(ew.eq(d, 0), -1), -1)
    inverse_h = p.solve_ex(mH(a), eye)[0]
    return (ew.mul(scale, ew.where(singular, 0.0, inverse_h)),)


def _slogdet(node: Any, g: Tensor) -> tuple:
    """g A^{-H}, g = g_logabsdet (plus i Im(conj(sign) g_sign) for complex A: the sign of a
    real one is piecewise constant)."""
    (a,) = node.inputs
    sign, _ = outputs(node)
    g_sign, g_log = output_grads(node, g)
    if a.dtype.is_complex:
        turn = ew.mul(cx.conj_physical(sign), g_sign)
        g_log = ew.add(cx.real(g_log), ew.mul(ew.sub(turn, cx.conj_physical(turn)), 0.5))
    n = a.shape[-1]
    inverse_h = p.solve_ex(mH(a), mv.expand(eye_like(a, n), a.shape))[0]
    return (ew.mul(mv.unsqueeze(mv.unsqueeze(g_log, -1), -1), inverse_h),)


def _pinv(node: Any, g: Tensor) -> tuple:
    (a,) = node.inputs
    (pinv,) = outputs(node)
    return (pinv_backward(a, pinv, g),)


def pinv_backward(a: Tensor, pinv: Tensor, g: Tensor) -> Tensor:
    """PyTorch's pinv_backward (A's gradient from that of ``pinv`` = pinv(A)), arranged to
    multiply the smaller matrices."""
    pinv_t, g_t = mH(pinv), mH(g)
    if a.shape[-2] <= a.shape[-1]:
        k = matmul(g_t, pinv)
        k_pinv_t = matmul(k, pinv_t)
        ga = ew.add(ew.neg(mH(matmul(pinv, k))), k_pinv_t)
        ga = ew.sub(ga, matmul(matmul(a, pinv), k_pinv_t))
        return ew.add(ga, matmul(matmul(pinv_t, pinv), ew.sub(g_t, matmul(k, a))))
    k = matmul(pinv, g_t)
    pinv_t_k = matmul(pinv_t, k)
    ga = ew.add(
        ew.neg(mH(matmul(k, pinv))), matmul(matmul(ew.sub(g_t, matmul(a, k)), pinv), pinv_t)
    )
    ga = ew.add(ga, pinv_t_k)
    return ew.sub(ga, matmul(matmul(pinv_t_k, pinv), a))


def lstsq_backward(saved: tuple, grads: tuple) -> tuple:
    """PyTorch's LinalgLstsqBackward0: the gradients of (A, B) from those of the solution X
    and the residuals (None: unused). ``saved`` is (A, B, X, the residuals, pinv(A) as
    PyTorch's backward computes it, at the default tolerance). The residuals |A X - B|^2 are
    minimal in X, so their gradient does not pass through X: 2 (A X - B) X^H for A,
    -2 (A X - B) for B."""
    a, b, x, _, pinv = saved
    gx, g_res = grads
    needs_a, needs_b = a.requires_grad, b.requires_grad
    vector = b.ndim == a.ndim - 1
    if vector:  # a vector B: its solution and gradient as one column
        b, x = mv.unsqueeze(b, -1), mv.unsqueeze(x, -1)
        gx = None if gx is None else mv.unsqueeze(gx, -1)
    ga = gb = None
    if gx is not None:
        if needs_a:
            ga = pinv_backward(a, pinv, matmul(gx, mH(b)))
        if needs_b:
            gb = matmul(mH(pinv), gx)
    if g_res is not None and g_res.numel():  # (empty where no residuals were computed)
        weighted = ew.mul(mv.unsqueeze(g_res, -2), ew.sub(matmul(a, x), b))
        if needs_a:
            term = ew.mul(matmul(weighted, mH(x)), 2.0)
            ga = term if ga is None else ew.add(ga, term)
        if needs_b:
            term = ew.mul(weighted, -2.0)
            gb = term if gb is None else ew.add(gb, term)
    if vector and gb is not None:
        gb = mv.squeeze(gb, -1)
    return ga, gb


def triangular_solve_backward(
    saved: tuple, grads: tuple, upper: bool, transpose: bool, unitriangular: bool
) -> tuple:
    """PyTorch's TriangularSolveBackward0: the gradients of (b, A) from those of the
    solution X (A X = b, or A^T X = b with ``transpose``) and of A's copy (None: unused).
    ``saved`` is (b, A, X, A's copy). Where only the copy's gradient is given, b's is zeros,
    as PyTorch's."""
    b, a, x, _ = saved
    gx, g_copy = grads
    gb = ga = None
    if gx is not None:
        if transpose:  # conj(A) gB = gX
            gb = solve_triangular(conj_physical(a), gx, upper=upper, unitriangular=unitriangular)
            if a.requires_grad:
                ga = matmul(ew.neg(conj_physical(x)), mT(gb))
        else:  # A^H gB = gX
            gb = solve_triangular(mH(a), gx, upper=not upper, unitriangular=unitriangular)
            if a.requires_grad:  # (X is as small as B: negated before the product)
                ga = matmul(gb, ew.neg(mH(x)))
        if ga is not None:  # only A's triangle was read
            offset = 1 if unitriangular else 0
            ga = mv.triu(ga, offset) if upper else mv.tril(ga, -offset)
    elif b.requires_grad:
        gb = zeros_like(b)
    if g_copy is not None and a.requires_grad:
        ga = g_copy if ga is None else ew.add(ga, g_copy)
    return (gb if b.requires_grad else None), ga  # (A's needs gB: b's is shown only if wanted)


def _cholesky_solve(node: Any, g: Tensor) -> tuple:
    """PyTorch's cholesky_solve_backward: gB = A^{-1} g, and for the factor
    -(gB X^H + X gB^H) L (L times it with ``upper``), over the whole matrix."""
    b, low = node.inputs
    upper = saved(node)
    (x,) = outputs(node)
    gb = cholesky_solve_value(g, low, upper)
    gl = None
    if _needs(node, 1):
        common = matmul(gb, mH(x))
        common = ew.add(common, mH(common))
        gl = ew.neg(matmul(low, common) if upper else matmul(common, low))
    return gb, gl


def _cdist(node: Any, g: Tensor) -> tuple:
    """PyTorch's ``_cdist_backward`` from the distances the node kept (ops/structure.py
    cdist), as its CdistBackward0 reads its saved result: each gap ``x1[i] - x2[j]``'s
    gradient, summed over the other set's rows."""
    x1, x2 = node.inputs
    power = saved(node)
    kept = node.saved[2]  # (a Tensor where saved_tensors_hooks packed it: what unpack gave)
    (dist,) = (node.output(kept.native),) if isinstance(kept, Tensor) else outputs(node)
    dist, g = mv.unsqueeze(dist, -1), mv.unsqueeze(g, -1)
    diff = ew.sub(mv.unsqueeze(x1, -2), mv.unsqueeze(x2, -3))
    if power == 0:
        gaps = ew.mul(diff, 0)
    elif power == 1:
        gaps = ew.mul(ew.sign(diff), g)
    elif power == float("inf"):  # (the gaps as large as their distance)
        gaps = ew.mul(ew.mul(ew.sign(diff), ew.eq(ew.abs(diff), dist)), g)
    else:  # 0 where the distance is 0, and below p = 1 where the gap is
        zero = ew.eq(dist, 0)
        scale = ew.div(g, ew.pow(ew.where(zero, 1.0, dist), power - 1))
        if power == 2:
            gaps = ew.mul(diff, scale)
        else:
            flat = ew.eq(diff, 0)
            size = ew.pow(ew.where(flat, 1.0, ew.abs(diff)), power - 1)
            gaps = ew.mul(ew.where(flat, 0.0, ew.mul(ew.sign(diff), size)), scale)
        gaps = ew.where(zero, 0.0, gaps)
    return (
        rd.sum(gaps, -2) if _needs(node, 0) else None,
        ew.neg(rd.sum(gaps, -3)) if _needs(node, 1) else None,
    )


def _undefined(node: Any, g: Tensor) -> tuple:
    """No gradient at all (the count of nonzeros): PyTorch leaves the input's grad None."""
    return (None,)


def _tril(node: Any, g: Tensor) -> tuple:
    return (mv.tril(g, node.saved),)


def _triu(node: Any, g: Tensor) -> tuple:
    return (mv.triu(g, node.saved),)


LINALG_GRADIENTS: dict[str, Callable[[Any, Tensor], tuple]] = {
    "tril": _tril,
    "triu": _triu,
    "linalg_cholesky": _cholesky,
    "linalg_solve": _solve,
    "linalg_inv": _inv,
    "linalg_solve_triangular": _solve_triangular,
    "linalg_eigh": _eigh,
    "linalg_eig": _eig,
    "linalg_svd": _svd,
    "linalg_qr": _qr,
    "linalg_lu_factor": _lu_factor,
    "linalg_det": _det,
    "linalg_slogdet": _slogdet,
    "linalg_pinv": _pinv,
    "linalg_cholesky_solve": _cholesky_solve,
    "linalg_vector_norm_0": _undefined,
    "cdist": _cdist,
    # Whole functions as one backend call (tensorweaver.linalg.fused).
    "linalg_function": function_backward,
    "linalg_outputs": outputs_backward,
    "linalg_output": output_backward,
}
