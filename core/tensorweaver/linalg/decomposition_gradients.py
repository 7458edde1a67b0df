"""PyTorch's gradients of ``linalg.qr``, ``linalg.eigh``, ``linalg.svd`` and ``linalg.lu``
(``linalg_qr_backward``, ``linalg_eig_backward`` for Hermitian matrices, ``svd_backward``
and ``linalg_lu_backward`` in torch/csrc/autograd/FunctionsManual.cpp) as functions of the
decomposition's outputs and their gradients alone, written with tensor ops so that they
differentiate again.

A gradient of None is PyTorch's undefined one (an output the loss did not use), whose terms
the formulas skip. They read only the outputs, never the input, as PyTorch's nodes save
only them: one call's node (linalg/one_node.py ``formula_call``) reads what a write through
``Q.data`` left there, as PyTorch's reads the saved outputs' memory; the primitives' nodes
(autograd/linalg_rules.py) use them too.
"""

from __future__ import annotations

from tensorweaver.autograd.mode import no_grad
from tensorweaver.linalg import primitives as p
from tensorweaver.linalg._shared import mH, mT
from tensorweaver.ops import complex as cx
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops import structure as st
from tensorweaver.ops.creation import zeros_like
from tensorweaver.ops.linalg import matmul
from tensorweaver.tensor import Tensor


def skew(x: Tensor) -> Tensor:
    """x - x^H: twice the skew-Hermitian part."""
    return ew.sub(x, mH(x))


def tri_solve_right(a: Tensor, b: Tensor, upper: bool, unit: bool = False) -> Tensor:
    """X with X A = B for triangular A."""
    return mT(p.solve_triangular(mT(a), mT(b), not upper, unit))


def _over_gaps(x: Tensor, gaps: Tensor) -> Tensor:
    """``x`` divided by the eigenvalue or singular-value ``gaps`` (zero on the diagonal), the
    diagonal ones taken as 1 (PyTorch's E): a repeated value makes inf or NaN, as PyTorch's."""
    return ew.div(x, ew.add(gaps, cr.eye(gaps.shape[-1], dtype=gaps.dtype, device=gaps.device)))


def _times(inner: Tensor, diagonal: Tensor | None, right: Tensor) -> Tensor:
    """(inner + diag(diagonal)) @ right, the diagonal's part as ``diagonal`` scaling the rows
    of ``right`` (None: no diagonal): no matrix of it is made (diag_embed costs more than the
    rest of the sum)."""
    product = matmul(inner, right)
    if diagonal is None:
        return product
    return ew.add(product, ew.mul(mv.unsqueeze(diagonal, -1), right))


def _times_left(left: Tensor, inner: Tensor, diagonal: Tensor | None) -> Tensor:
    """left @ (inner + diag(diagonal)), as :func:`_times` (``diagonal`` scaling columns)."""
    product = matmul(left, inner)
    if diagonal is None:
        return product
    return ew.add(product, ew.mul(left, mv.unsqueeze(diagonal, -2)))


def check_phases(left: Tensor, right: Tensor | None, message: str) -> None:
    """PyTorch's check that the loss does not change with the complex vectors' phases
    (V -> V e^{i phi}): the imaginary diagonals ``left`` and ``right`` (None: zeros) close as
    its allclose with lax tolerances of 1e-2 (a read back to the host, as PyTorch's), else
    ``message``."""
    with no_grad():
        if right is None:  # (|left| <= 1e-2: allclose to zeros)
            close = ew.le(ew.abs(left), 1e-2)
        else:
            bound = ew.add(ew.mul(ew.abs(right), 1e-2), 1e-2)
            close = ew.le(ew.abs(ew.sub(left, right)), bound)
            close = ew.logical_or(ew.eq(left, right), close)  # (equal infinities)
        invariant = bool(rd.all(close).item())
    if not invariant:
        raise RuntimeError(message)


def eigh_backward(
    values: Tensor, vectors: Tensor, g_values: Tensor | None, g_vectors: Tensor | None
) -> Tensor | None:
    """A's gradient: V (skew(V^H gV) / 2 / (L_j - L_i) + diag(gL)) V^H, where gL, if given,
    takes the diagonal's place; V diag(gL) V^H alone without gV (PyTorch's eigvalsh
    shortcut)."""
    if g_vectors is None:
        if g_values is None:
            return None
        return matmul(ew.mul(vectors, mv.unsqueeze(g_values, -2)), mH(vectors))
    vh_gv = matmul(mH(vectors), g_vectors)
    if vh_gv.dtype.is_complex:
        check_phases(
            cx.imag(st.diagonal(vh_gv, 0, -2, -1)),
            None,
            "linalg_eigh_backward: The eigenvectors in the complex case are specified up to "
            "multiplication by e^{i phi}. The specified loss function depends on this "
            "quantity, so it is ill-defined.",
        )
    gaps = ew.sub(mv.unsqueeze(values, -2), mv.unsqueeze(values, -1))
    inner = _over_gaps(ew.mul(skew(vh_gv), 0.5), gaps)
    if inner.dtype.is_complex and g_values is not None:
        # (gL takes the place of the imaginary diagonal, which PyTorch keeps without one)
        g_values = ew.sub(g_values, st.diagonal(inner, 0, -2, -1))
    return matmul(vectors, _times(inner, g_values, mH(vectors)))


SVD_PHASE_MESSAGE = (
    "svd_backward: The singular vectors in the complex case are specified up to "
    "multiplication by e^{i phi}. The specified loss function depends on this phase "
    "term, making it ill-defined."
)


def svd_backward(
    u: Tensor, s: Tensor, vh: Tensor, gu: Tensor | None, gs: Tensor | None, gvh: Tensor | None
) -> Tensor | None:
    """A's gradient from U, S, Vh and theirs; the columns of U and rows of Vh past S's count
    (``full_matrices``) carry no information about A and are dropped first."""
    if gu is None and gs is None and gvh is None:
        return None
    k = s.shape[-1]
    if u.shape[-1] > k:
        u = mv.narrow(u, -1, 0, k)
        gu = None if gu is None else mv.narrow(gu, -1, 0, k)
    if vh.shape[-2] > k:
        vh = mv.narrow(vh, -2, 0, k)
        gvh = None if gvh is None else mv.narrow(gvh, -2, 0, k)
    m, n = u.shape[-2], vh.shape[-1]
    if gu is None and gvh is None:  # (PyTorch's svdvals shortcut: U diag(gS) Vh)
        if m >= n:
            return matmul(u, ew.mul(mv.unsqueeze(gs, -1), vh))
        return matmul(ew.mul(u, mv.unsqueeze(gs, -2)), vh)
    s_row, s_col = mv.unsqueeze(s, -2), mv.unsqueeze(s, -1)
    squares = ew.mul(s, s)
    gaps = ew.sub(mv.unsqueeze(squares, -2), mv.unsqueeze(squares, -1))
    uhgu = None if gu is None else skew(matmul(mH(u), gu))
    vhgv = None if gvh is None else skew(matmul(vh, mH(gvh)))
    if u.dtype.is_complex:
        u_phases, vh_phases = (
            cx.imag(st.diagonal(x, 0, -2, -1)) if x is not None else zeros_like(s)
            for x in (uhgu, vhgv)
        )
        check_phases(u_phases, ew.neg(vh_phases), SVD_PHASE_MESSAGE)
    # (a complex one's imaginary diagonal, S (Im diag(U^H gU + V^H gV)), is PyTorch's too)
    if uhgu is not None and vhgv is not None:
        inner = _over_gaps(ew.add(ew.mul(uhgu, s_row), ew.mul(s_col, vhgv)), gaps)
    elif uhgu is not None:
        inner = ew.mul(_over_gaps(uhgu, gaps), s_row)
    else:
        inner = ew.mul(s_col, _over_gaps(vhgv, gaps))
    diagonal = gs
    if u.dtype.is_complex and uhgu is not None and vhgv is not None:
        # PyTorch's phase term: diag(U^H gU) / 2S
        phase = ew.div(st.diagonal(uhgu, 0, -2, -1), ew.mul(s, 2.0))
        diagonal = phase if diagonal is None else ew.add(diagonal, phase)
    if m > n and gu is not None:
        ga = _times_left(u, inner, diagonal)
        gu_scaled = ew.div(gu, s_row)
        ga = ew.sub(ew.add(ga, gu_scaled), matmul(u, matmul(mH(u), gu_scaled)))
        return matmul(ga, vh)
    if m < n and gvh is not None:
        ga = _times(inner, diagonal, vh)
        gvh_scaled = ew.div(gvh, s_col)
        ga = ew.sub(ew.add(ga, gvh_scaled), matmul(matmul(gvh_scaled, mH(vh)), vh))
        return matmul(u, ga)
    return matmul(u, _times(inner, diagonal, vh))


def qr_backward(q: Tensor, r: Tensor, gq: Tensor | None, gr: Tensor | None) -> Tensor | None:
    """A's gradient from Q, R and theirs. With M = gR R^H - Q^H gQ: (gQ + Q copyltu(M^H))
    R^{-H} for m >= n, where copyltu mirrors the strictly lower triangle onto the upper one
    (conjugated) and keeps the real part of the diagonal; for m < n, Q tril(-M + M^H) (the
    diagonal's imaginary part halved) R_1^{-H} beside zeros, plus Q gR, R_1 being R's
    leading square."""
    rows, cols = q.shape[-2], r.shape[-1]
    if q.shape[-1] > cols:  # (mode='complete' of a tall matrix: Q is m x m)
        raise RuntimeError(
            "The QR decomposition is not differentiable when mode='complete' and nrows > ncols."
        )
    if gq is None and gr is None:
        return None
    if gq is None:
        m = matmul(gr, mH(r))
    elif gr is None:
        m = ew.neg(matmul(mH(q), gq))
    else:
        m = ew.sub(matmul(gr, mH(r)), matmul(mH(q), gq))
    if rows >= cols:  # (M's upper triangle, mirrored conjugated below it)
        mirrored = ew.add(mH(mv.triu(m)), mv.triu(m, 1))
        if mirrored.dtype.is_complex:
            diagonal = st.diagonal(mirrored, 0, -2, -1)
            mirrored = ew.sub(mirrored, st.diag_embed(ew.sub(diagonal, cx.real(diagonal))))
        ga = matmul(q, mirrored)
        if gq is not None:
            ga = ew.add(ga, gq)
        return tri_solve_right(mH(r), ga, False)
    lower = mv.tril(ew.sub(mH(m), m))
    if lower.dtype.is_complex:
        halved = ew.mul(cx.imag(st.diagonal(lower, 0, -2, -1)), 0.5)
        lower = ew.sub(lower, st.diag_embed(cx.complex(zeros_like(halved), halved)))
    ga = tri_solve_right(mH(mv.narrow(r, -1, 0, rows)), matmul(q, lower), False)
    zeros = cr.zeros_like_shape(ga, (*ga.shape[:-1], cols - rows))
    ga = mv.cat([ga, zeros], -1)
    if gr is not None:
        ga = ew.add(ga, matmul(q, gr))
    return ga


def qr_rule(saved: tuple, grads: tuple) -> tuple:
    """The rule of linalg.qr's one node (``saved``: A, Q, R)."""
    _, q, r = saved
    return (qr_backward(q, r, *grads),)


def eigh_rule(saved: tuple, grads: tuple) -> tuple:
    """The rule of linalg.eigh's one node (``saved``: A, L, V)."""
    _, values, vectors = saved
    return (eigh_backward(values, vectors, *grads),)


def svd_rule(saved: tuple, grads: tuple) -> tuple:
    """The rule of linalg.svd's one node (``saved``: A, U, S, Vh)."""
    _, u, s, vh = saved
    return (svd_backward(u, s, vh, *grads),)


def lu_backward(
    perm: Tensor, lower: Tensor, upper: Tensor, gl: Tensor | None, gu: Tensor | None
) -> Tensor | None:
    """A's gradient from A = P L U and the gradients of L and U (PyTorch's
    ``linalg_lu_backward``), k = min(m, n): for a square A, P L^{-H} (tril(L^H gL, -1) +
    triu(gU U^H)) U^{-H}; a wide one's columns past k, and a tall one's rows past k, take
    the part of gU, gL that carries A's there (U_2's, L_2's)."""
    if gl is None and gu is None:
        return None
    m, n = lower.shape[-2], upper.shape[-1]
    k = min(m, n)
    lh = mH(lower)
    if m == n:
        ga = None if gl is None else mv.tril(matmul(lh, gl), -1)
        if gu is not None:
            part = mv.triu(matmul(gu, mH(upper)))
            ga = part if ga is None else ew.add(ga, part)
        ga = tri_solve_right(mH(upper), ga, False)
        ga = p.solve_triangular(lh, ga, True, True)
    elif m < n:  # wide: U = [U_1 U_2], U_1 k x k
        ga = None if gl is None else matmul(lh, gl)
        if gu is not None:
            part = matmul(mv.triu(gu), mH(upper))
            ga = ew.neg(part) if ga is None else ew.sub(ga, part)
        ga = tri_solve_right(mH(mv.narrow(upper, -1, 0, k)), mv.tril(ga, -1), False)
        if gu is not None:
            ga = ew.add(ga, mv.triu(mv.narrow(gu, -1, 0, k)))
            ga = mv.cat([ga, mv.narrow(gu, -1, k, n - k)], -1)
        ga = p.solve_triangular(lh, ga, True, True)
        if gu is None:
            ga = mv.cat([ga, cr.zeros_like_shape(ga, (*ga.shape[:-1], n - k))], -1)
    else:  # tall: L = [L_1; L_2], L_1 k x k
        ga = None if gu is None else matmul(gu, mH(upper))
        if gl is not None:
            part = matmul(lh, mv.tril(gl, -1))
            ga = ew.neg(part) if ga is None else ew.sub(ga, part)
        ga = p.solve_triangular(mH(mv.narrow(lower, -2, 0, k)), mv.triu(ga), True, True)
        if gl is not None:
            ga = ew.add(ga, mv.tril(mv.narrow(gl, -2, 0, k), -1))
            ga = mv.cat([ga, mv.narrow(gl, -2, k, m - k)], -2)
        ga = tri_solve_right(mH(upper), ga, False)
        if gl is None:
            ga = mv.cat([ga, cr.zeros_like_shape(ga, (*ga.shape[:-2], m - k, n))], -2)
    return matmul(perm, ga)


def lu_rule(saved: tuple, grads: tuple) -> tuple:
    """The rule of linalg.lu's one node (``saved``: A, L, U, then P)."""
    _, lower, upper, perm = saved
    return (lu_backward(perm, lower, upper, *grads),)
