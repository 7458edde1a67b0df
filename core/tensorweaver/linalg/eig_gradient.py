"""The gradient of ``linalg.eig``'s outputs (PyTorch's ``linalg_eig_backward``), written with
tensor ops so that it differentiates again: the rule of the core's ``linalg_eig`` primitive
(``autograd/linalg_rules.py``) and of linalg.eig's one node (``linalg/eigen.py``), whose
formula runs on its outputs under ``create_graph``."""

from __future__ import annotations

from tensorweaver.autograd.mode import no_grad
from tensorweaver.contract import dtypes
from tensorweaver.linalg import primitives as p
from tensorweaver.linalg._shared import CONJUGATES_OF, is_given, mH, mT
from tensorweaver.ops import complex as cx
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops import structure as st
from tensorweaver.ops.linalg import matmul
from tensorweaver.tensor import Tensor


def eig_backward(
    values: Tensor, vectors: Tensor, g_values: Tensor | None, g_vectors: Tensor | None
) -> Tensor:
    """V^{-H} (diag(gL) + P / E) V^H: P is V^H gV less V^H V diag(Re diag(V^H gV)) (its
    projection onto the skew-Hermitian matrices), E_ij = conj(L_j - L_i) with ones on its
    diagonal, whose zeros at repeated eigenvalues make inf or NaN, as PyTorch's. A gradient of
    None counts as undefined, and so does an all-zero ``g_vectors`` (an unused output's):
    PyTorch's linalg_eig_backward, its eigvals shortcut, and its error where the loss depends
    on the eigenvectors' phases (their unit norm fixes all else)."""
    vh = mH(vectors)
    # Under create_graph the solve's own copy, which a later write into V misses: PyTorch's
    # solve saves its LU factors, which its backward reads (the formula's mH of V sees it).
    factored = cx.conj_physical(mT(vectors)) if CONJUGATES_OF else vh
    if not is_given(g_vectors):  # (V^{-H} diag(gL) V^H, the diagonal scaling V^H's rows)
        return p.solve_ex(factored, ew.mul(mv.unsqueeze(g_values, -1), vh))[0]
    vh_gv = matmul(vh, g_vectors)
    diagonal = st.diagonal(vh_gv, 0, -2, -1)
    _check_phase_invariant(diagonal)
    scale = mv.unsqueeze(cx.real(diagonal), -2)
    vh_gv = ew.sub(vh_gv, matmul(vh, ew.mul(vectors, scale)))
    conj = cx.conj_physical(values)
    eye = cr.eye(values.shape[-1], dtype=dtypes.bool_, device=values.device)
    gaps = ew.where(eye, 1.0, ew.sub(mv.unsqueeze(conj, -2), mv.unsqueeze(conj, -1)))
    inner = ew.div(vh_gv, gaps)
    if g_values is not None:  # (gL takes the diagonal's place, as in PyTorch)
        inner = ew.where(eye, mv.unsqueeze(g_values, -1), inner)
    return p.solve_ex(factored, matmul(inner, vh))[0]


def _check_phase_invariant(diagonal: Tensor) -> None:
    """The loss does not change with V -> V e^{i phi}: Im diag(V^H gV) = 0, to PyTorch's
    tolerance of 1e-2 (a read back to the host, as PyTorch's check)."""
    with no_grad():
        invariant = bool(rd.all(ew.le(ew.abs(cx.imag(diagonal)), 1e-2)).item())
    if not invariant:
        raise RuntimeError(
            "linalg_eig_backward: The eigenvectors in the complex case are specified up to "
            "multiplication by e^{i phi}. The specified loss function depends on this "
            "quantity, so it is ill-defined."
        )
