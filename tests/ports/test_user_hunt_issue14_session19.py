"""Issue 14's areas (``linalg``, ``fft``, ``special``, complex dtypes, ``distributions``) as a
demanding PyTorch user meets them: snippets run on torch 2.13 and on tensorweaver with only
the import changed (``fn(torch)`` and ``fn(tw)``), on the NumPy, torch:cpu and cuPyNumeric
backends, comparing values, gradients, dtypes, shapes and exception classes.

The strict xfails are divergences found in the nineteenth session's hunt that are not fixed
(each reason names the file at fault); the tests that say "before:" failed before their fix;
the rest keep corners of the hunt that matched, so that they keep matching.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from test_user_hunt_session18 import CUNUMERIC, _check, _check_raises
from tw_backends import FAST, entered


@pytest.fixture(params=[*FAST, *CUNUMERIC])
def spec(request: pytest.FixtureRequest) -> str:
    return request.param


_RNG = np.random.default_rng(1419)
_A = _RNG.standard_normal((3, 4, 4)) + 3 * np.eye(4)
_SPD = _A @ _A.transpose(0, 2, 1) + np.eye(4)
_W = _RNG.standard_normal((3, 5, 3))
_RHS = _RNG.standard_normal((3, 2, 4))
_Z = _RNG.standard_normal((3, 4)) + 1j * _RNG.standard_normal((3, 4))
_X = _RNG.standard_normal((2, 4, 5))


def _f64(m: Any, x: Any, grad: bool = False) -> Any:
    return m.tensor(x, dtype=m.float64, requires_grad=grad)


def _check_complex(spec: str, fn: Any) -> None:
    """:func:`_check` of a list of tensors, complex ones compared as (real, imag) pairs (the
    shared comparison casts to float64, which would drop the imaginary parts)."""

    def pairs(m: Any) -> list:
        out = fn(m)
        return [m.view_as_real(t.resolve_conj()) if t.is_complex() else t for t in out]

    _check(spec, pairs)


# -- fixed: silent wrong answers ------------------------------------------------------------


# before: cholesky(A, upper=True) factored A's lower triangle on the NumPy and cuPyNumeric
# backends (linalg/factorizations.py); PyTorch (LAPACK's uplo='U') reads the upper one, so a
# matrix whose triangles differ got another factor, and another gradient
@pytest.mark.parametrize("op", ["linalg", "legacy", "ex"])
def test_cholesky_upper_reads_the_upper_triangle(spec: str, op: str) -> None:
    lopsided = np.tril(_SPD[0]) + 0.5 * np.triu(_SPD[0], 1)

    def fn(m: Any) -> Any:
        a = _f64(m, lopsided, grad=True)
        if op == "linalg":
            u = m.linalg.cholesky(a, upper=True)
        elif op == "legacy":
            u = m.cholesky(a, upper=True)
        else:
            u = m.linalg.cholesky_ex(a, upper=True).L
        (u * m.arange(16.0, dtype=m.float64).reshape(4, 4)).sum().backward()
        return [u, a.grad]

    _check(spec, fn)


# before: the complex case's gradient of cholesky(upper=True), once the upper triangle was
# read through A^H, came back conjugate-transposed; PyTorch's is the lower factor's rule
def test_complex_cholesky_upper_gradient(spec: str) -> None:
    c = _Z[:, :3]
    hermitian = c @ c.conj().T + np.eye(3)
    lopsided = np.tril(hermitian) + 0.3 * np.triu(hermitian, 1)

    def fn(m: Any) -> Any:
        a = m.tensor(lopsided, dtype=m.complex128, requires_grad=True)
        u = m.linalg.cholesky(a, upper=True)
        weights = m.tensor(np.arange(9.0).reshape(3, 3) + 1j, dtype=m.complex128)
        (u * weights).abs().sum().backward()
        return [u, a.grad]

    _check_complex(spec, fn)


# before: the complex SVD's gradient of a loss that depends on the singular vectors' phases
# was returned on the NumPy and cuPyNumeric backends (autograd/linalg_rules.py); PyTorch
# raises RuntimeError, since the phases are arbitrary
def test_complex_svd_gradient_refuses_a_phase_dependent_loss(spec: str) -> None:
    def fn(m: Any) -> Any:
        a = m.tensor(_Z[:, :3], dtype=m.complex128, requires_grad=True)
        m.linalg.svd(a)[0].real.sum().backward()

    _check_raises(spec, fn)

    def invariant(m: Any) -> Any:  # |U S Vh| does not depend on them: the same gradient
        a = m.tensor(_Z[:, :3], dtype=m.complex128, requires_grad=True)
        u, s, vh = m.linalg.svd(a, full_matrices=False)
        (u @ m.diag_embed(s.to(u.dtype)) @ vh).abs().sum().backward()
        return [a.grad]

    _check_complex(spec, invariant)


# before: IndexError from amax; PyTorch raises RuntimeError for max, min and negative powers
# over an empty dimension (linalg/norms.py)
@pytest.mark.parametrize("ord_", [math.inf, -math.inf, -1])
@pytest.mark.parametrize("dim", [-1, None])
def test_vector_norm_without_identity_over_empty_dimension(spec: str, ord_: Any, dim: Any) -> None:
    shape = (3, 0) if dim is not None else (0,)
    _check_raises(spec, lambda m: m.linalg.vector_norm(m.zeros(*shape), ord_, dim=dim))


# before: a tensor rtol/atol of one tolerance per matrix multiplied every matrix's largest
# singular value by every tolerance (broadcast (3, 1) against (3,)), so pinv and matrix_rank
# used the wrong cutoffs (linalg/solvers.py); PyTorch broadcasts it over the batch
@pytest.mark.parametrize("op", ["pinv", "pinv_hermitian", "matrix_rank"])
def test_tensor_tolerances_are_one_per_matrix(spec: str, op: str) -> None:
    def fn(m: Any) -> Any:
        tol = _f64(m, [0.1, 0.5, 0.9])
        if op == "pinv":
            return m.linalg.pinv(_f64(m, _W), rtol=tol)
        if op == "pinv_hermitian":
            return m.linalg.pinv(_f64(m, _SPD), atol=tol * 40, hermitian=True)
        return m.linalg.matrix_rank(_f64(m, _W), rtol=tol)

    _check(spec, fn)


# -- fixed: crashes and missing API ---------------------------------------------------------


# before: TypeError (no ``tol``): PyTorch's matrix_rank(A, tol, hermitian) overload, tol an
# absolute tolerance (linalg/solvers.py)
def test_matrix_rank_takes_tol(spec: str) -> None:
    def fn(m: Any) -> Any:
        w, spd = _f64(m, _W), _f64(m, _SPD)
        per_matrix = _f64(m, [0.1, 1.0, 3.0])
        return [m.linalg.matrix_rank(w, 1.0), m.linalg.matrix_rank(w, tol=per_matrix)] + [
            m.linalg.matrix_rank(spd, 30.0, True)
        ]

    _check(spec, fn)
    _check_raises(spec, lambda m: m.linalg.matrix_rank(_f64(m, _W), tol=1.0, atol=1.0))


# before: LinAlgError from the inverse; PyTorch's cond in the 1, inf and Frobenius norms is
# inf for a singular matrix (linalg/norms.py)
@pytest.mark.parametrize("p", [1, -1, math.inf, -math.inf, "fro"])
def test_cond_of_a_singular_matrix_is_inf(spec: str, p: Any) -> None:
    singular = np.stack([[[1.0, 2.0, 0.0], [2.0, 4.0, 0.0], [0.0, 0.0, 1.0]], 2 * np.eye(3)])
    _check(spec, lambda m: m.linalg.cond(_f64(m, singular), p=p))


# before: OverflowError (the scaling step's ceil(log2(inf))) on the NumPy and cuPyNumeric
# backends (linalg/products.py); PyTorch gives NaN
@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_matrix_exp_of_non_finite_input(spec: str, value: float) -> None:
    _check(spec, lambda m: m.linalg.matrix_exp(_f64(m, [[value, 0.0], [0.0, 1.0]])))


# before: AttributeError: LowRankMultivariateNormal had no precision_matrix
# (distributions/multivariate_normal.py)
def test_low_rank_normal_precision_matrix(spec: str) -> None:
    factor = _RNG.standard_normal((2, 1, 3, 2))
    diag = _RNG.random((4, 3)) + 0.5

    def fn(m: Any) -> Any:
        w = _f64(m, factor, grad=True)
        d = m.distributions.LowRankMultivariateNormal(_f64(m, np.zeros(3)), w, _f64(m, diag))
        precision = d.precision_matrix
        precision.sum().backward()
        return [precision, w.grad]

    _check(spec, fn)


# before: NotImplementedError: biject_to and transform_to had no factory for constraints.cat
# and constraints.stack (distributions/constraint_registry.py); PyTorch's transforms each part
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
@pytest.mark.parametrize("kind", ["cat", "stack"])
def test_transforms_to_cat_and_stack_constraints(spec: str, registry: str, kind: str) -> None:
    def fn(m: Any) -> Any:
        c = m.distributions.constraints
        if kind == "cat":
            constraint = c.cat([c.positive, c.interval(-1.0, 3.0)], dim=1, lengths=[1, 2])
        else:
            constraint = c.stack([c.positive, c.real, c.unit_interval], dim=1)
        transform = getattr(m.distributions, registry)(constraint)
        x = _f64(m, [[-1.5, 0.3, 2.0], [0.5, -0.2, 1.0]], grad=True)
        y = transform(x)
        jacobian = transform.log_abs_det_jacobian(x, y)
        jacobian.sum().backward()
        return [y, transform.inv(y), jacobian, x.grad]

    _check(spec, fn)


# before: linalg.cross promoted mixed dtypes; PyTorch's kernel refuses them (RuntimeError)
# (linalg/products.py)
def test_linalg_cross_refuses_mixed_dtypes(spec: str) -> None:
    _check_raises(spec, lambda m: m.linalg.cross(m.tensor([1, 2, 3]), _f64(m, [4.0, 5.0, 6.0])))


# -- divergences left: silent wrong answers -------------------------------------------------


# before (fixed in the twentieth session, ops/views.py conj): conj(), mH and adjoint() of a
# complex tensor were copies, not views with PyTorch's conjugate bit: a write through them
# did not reach the base, they did not see the base's later changes, is_conj() was False
@pytest.mark.parametrize("view", ["conj", "mH", "adjoint"])
def test_write_through_a_conjugate_view(spec: str, view: str) -> None:
    def fn(m: Any) -> Any:
        z = m.tensor(_Z, dtype=m.complex128)
        v = z.conj() if view == "conj" else z.mH if view == "mH" else z.adjoint()
        v[0].fill_(7j)
        return [z]

    _check_complex(spec, fn)


def test_conjugate_view_sees_the_base(spec: str) -> None:
    def fn(m: Any) -> Any:
        z = m.tensor(_Z, dtype=m.complex128)
        v = z.conj()
        z.mul_(2)
        return [v]

    _check_complex(spec, fn)
    _check(spec, lambda m: m.tensor(_Z, dtype=m.complex128).conj().is_conj())


# -- divergences left: wrong or missing exceptions ------------------------------------------


# before: NumPy's own LinAlgError (a ValueError) escaped on the NumPy backend, torch's
# _LinAlgError (not tw.linalg.LinAlgError) on torch:cpu
@pytest.mark.parametrize("op", ["svd", "svdvals", "pinv"])
def test_svd_of_non_finite_input_raises_linalg_error(
    spec: str, op: str, request: pytest.FixtureRequest
) -> None:
    if spec == "cunumeric":
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason="cuPyNumeric's svd returns NaN singular values for a non-finite input "
                "where PyTorch raises torch.linalg.LinAlgError (plugins/cunumeric-backend "
                "linalg_svd: check the input's finiteness, or the result's, and raise the "
                "contract's LinAlgError)",
            )
        )

    def fn(m: Any) -> Any:
        return getattr(m.linalg, op)(_f64(m, [[math.nan, 0.0], [0.0, 1.0]]))

    with pytest.raises(torch.linalg.LinAlgError):
        fn(torch)
    with entered(spec), pytest.raises(tw.linalg.LinAlgError):
        fn(tw)


# before: with conj() a copy there was no conjugate bit for view_as_real to refuse
def test_view_as_real_of_a_conjugate_view_raises(spec: str) -> None:
    _check_raises(spec, lambda m: m.view_as_real(m.tensor(_Z, dtype=m.complex128).conj()))


def test_backward_of_a_complex_scalar_raises(spec: str) -> None:
    _check_raises(
        spec, lambda m: m.tensor(_Z, dtype=m.complex128, requires_grad=True).sum().backward()
    )


@pytest.mark.xfail(
    strict=True,
    reason="ops/reduce.py (norm): torch.norm(x, inf, dim) over an empty dimension raises "
    "IndexError from amax; PyTorch raises RuntimeError (linalg.vector_norm was fixed)",
)
def test_torch_norm_inf_over_empty_dimension(spec: str) -> None:
    _check_raises(spec, lambda m: m.norm(m.zeros(3, 0), math.inf, dim=1))


def test_torch_cross_refuses_mixed_dtypes(spec: str) -> None:
    _check_raises(spec, lambda m: m.cross(m.tensor([[1, 2, 3]]), _f64(m, [[4.0, 5.0, 6.0]]), dim=1))


# -- corners that match: kept matching ------------------------------------------------------


def test_solvers_with_left_false_and_broadcast_batches(spec: str) -> None:
    def fn(m: Any) -> Any:
        a, b = _f64(m, _A, grad=True), _f64(m, _RHS, grad=True)
        x = m.linalg.solve(a, b, left=False)
        y = m.linalg.solve_triangular(a[0], b, upper=False, left=False, unitriangular=True)
        z = m.linalg.solve(a[:1], _f64(m, _RHS).mT.unsqueeze(0))
        (x.sum() + (y * y).sum()).backward()
        return [x, y, z, a.grad, b.grad]

    _check(spec, fn)


def test_eigh_uplo_and_lstsq_drivers(spec: str) -> None:
    lopsided = np.tril(_SPD[0]) + 2 * np.triu(_A[0], 1)
    deficient = _RNG.standard_normal((6, 2)) @ _RNG.standard_normal((2, 4))
    rhs = _RNG.standard_normal((6, 2))

    def fn(m: Any) -> Any:
        a = _f64(m, lopsided, grad=True)
        values = m.linalg.eigvalsh(a, UPLO="U")
        values.pow(2).sum().backward()
        fit = m.linalg.lstsq(_f64(m, deficient), _f64(m, rhs), driver="gelsd")
        return [values, a.grad, fit.solution, fit.rank, fit.singular_values]

    _check(spec, fn)


@pytest.mark.parametrize("fn_name", ["irfft", "hfft"])
@pytest.mark.parametrize("n", [4, 7, 9])
def test_hermitian_ffts_gradients_with_odd_and_even_n(spec: str, fn_name: str, n: int) -> None:
    def fn(m: Any) -> Any:
        z = m.tensor(_X + 1j * _X[::-1], dtype=m.complex128, requires_grad=True)
        y = getattr(m.fft, fn_name)(z, n=n, norm="ortho")
        (y * m.arange(float(y.numel()), dtype=m.float64).reshape(y.shape)).sum().backward()
        return [y, z.grad]

    _check_complex(spec, fn)


def test_multidim_ffts_and_shifts(spec: str) -> None:
    def fn(m: Any) -> Any:
        x = _f64(m, _X)
        return [
            m.fft.rfftn(x, s=(3, 7), dim=(0, -1), norm="forward"),
            m.fft.ihfft2(x, dim=(-1, -3)),
            m.fft.fftshift(x, dim=(0, -1)),
            m.fft.ifftshift(x, dim=-2),
            m.fft.rfftfreq(7, 2.0),
        ]

    _check_complex(spec, fn)


def test_special_edge_points(spec: str) -> None:
    points = [0.0, -0.0, -1.0, -2.5, 1e-300, 0.5, 30.0, 800.0, math.inf, -math.inf, math.nan]

    def fn(m: Any) -> Any:
        x = _f64(m, points)
        return [
            m.special.digamma(x),
            m.special.log_ndtr(x),
            m.special.erfcx(x),
            m.special.i1e(x),
            m.special.xlogy(_f64(m, [0.0, 0.0, 1.0]), _f64(m, [0.0, math.nan, 0.0])),
            m.special.zeta(_f64(m, [2.0, 1.0, 4.0]), _f64(m, [1.0, 1.0, -1.5])),
            m.special.polygamma(2, m.tensor([1, 2, 3])),
        ]

    _check(spec, fn)


def test_complex_statistics_and_promotion(spec: str) -> None:
    def fn(m: Any) -> Any:
        z = m.tensor(_Z, dtype=m.complex128, requires_grad=True)
        z.std().backward()
        mixed = m.tensor(_Z, dtype=m.complex64) + _f64(m, _Z.real)
        return [z.mean(0), z.var(1), z.grad, mixed, m.view_as_real(z.detach().conj_physical())]

    _check_complex(spec, fn)


def test_distributions_matrices_and_kl(spec: str) -> None:
    covariance = _SPD[0]
    values = _RNG.standard_normal((5, 4))

    def fn(m: Any) -> Any:
        dist = m.distributions
        c = _f64(m, covariance, grad=True)
        by_cov = dist.MultivariateNormal(_f64(m, np.zeros(4)), covariance_matrix=c)
        by_precision = dist.MultivariateNormal(
            _f64(m, np.ones(4)), precision_matrix=_f64(m, np.linalg.inv(covariance))
        )
        kl = dist.kl_divergence(by_cov, by_precision)
        kl.backward()
        cat = dist.Categorical(probs=_f64(m, [[2.0, 6.0, 0.0], [1.0, 1.0, 1.0]]))
        return [by_cov.log_prob(_f64(m, values)), kl, c.grad, cat.logits, cat.entropy()]

    _check(spec, fn)
