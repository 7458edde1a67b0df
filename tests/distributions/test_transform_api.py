"""Transforms and constraints as PyTorch's objects behave: ``sign`` (raising where there is
none), equality (what KL between TransformedDistributions compares), the names exported by
``transforms`` and ``constraints``, and the constraints' verdicts, against ``torch``."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.distributions as D
import torch
import torch.distributions as td
from tensorweaver.distributions import constraints
from tensorweaver.distributions import transforms as T
from torch.distributions import constraints as tc
from torch.distributions import transforms as tt


def _pair(build: str) -> tuple:
    """``build`` evaluated against our modules and PyTorch's (``T``/``C``/``t``)."""
    ours = eval(build, {"T": T, "C": constraints, "t": lambda v: tw.tensor(np.asarray(v))})
    theirs = eval(build, {"T": tt, "C": tc, "t": lambda v: torch.tensor(np.asarray(v))})
    return ours, theirs


def _sign(transform: object) -> object:
    try:
        sign = transform.sign  # type: ignore[attr-defined]
    except NotImplementedError:
        return NotImplementedError
    return np.asarray(sign).tolist() if not isinstance(sign, int) else sign


SIGNED = [
    "T.ExpTransform()", "T.SigmoidTransform()", "T.TanhTransform()", "T.SoftplusTransform()",
    "T.PowerTransform(t([-2.0, 0.5]))", "T.PowerTransform(t(-2.0)).inv",
    "T.AffineTransform(0.0, t([-1.0, 2.0]))", "T.AffineTransform(1.0, -3.0)",
    "T.ComposeTransform([T.PowerTransform(t(-1.0)), T.AffineTransform(0.0, -2.0)])",
    "T.identity_transform", "T.IndependentTransform(T.PowerTransform(t(-1.0)), 1)",
    "T.SoftmaxTransform()", "T.AbsTransform()", "T.SoftmaxTransform().inv",
    "T.StickBreakingTransform()", "T.LowerCholeskyTransform()",
    "T.IndependentTransform(T.AbsTransform(), 1)", "T.Transform()",
]  # fmt: skip


@pytest.mark.parametrize("build", SIGNED)
def test_sign_like_torch(build: str) -> None:
    ours, theirs = _pair(build)
    assert _sign(ours) == _sign(theirs)


EQUAL = [
    ("T.ExpTransform()", "T.ExpTransform()"), ("T.ExpTransform().inv", "T.ExpTransform().inv"),
    ("T.ExpTransform()", "T.ExpTransform().inv"), ("T.ExpTransform()", "T.SigmoidTransform()"),
    ("T.AffineTransform(0.0, 2.0)", "T.AffineTransform(t(0.0), 2.0)"),
    ("T.AffineTransform(0.0, 2.0)", "T.AffineTransform(0.0, 3.0)"),
    ("T.AffineTransform(t([0.0, 1.0]), 2.0)", "T.AffineTransform(t([0.0, 1.0]), 2.0)"),
    ("T.PowerTransform(t(2.0))", "T.PowerTransform(t(2.0))"),
    ("T.PowerTransform(t(2.0))", "T.PowerTransform(t(3.0))"),
    ("T.ComposeTransform([T.ExpTransform(), T.TanhTransform()])",
     "T.ComposeTransform([T.ExpTransform(), T.TanhTransform()])"),
    ("T.ComposeTransform([T.ExpTransform(), T.TanhTransform()])",
     "T.ComposeTransform([T.TanhTransform(), T.ExpTransform()])"),
    ("T.identity_transform", "T.ComposeTransform([])"),
    ("T.ReshapeTransform((2,), (2,))", "T.ReshapeTransform((2,), (2,))"),
    ("T.SoftplusTransform()", "T.SoftplusTransform()"), ("T.AbsTransform()", "T.AbsTransform()"),
    ("T.StickBreakingTransform()", "T.StickBreakingTransform()"),
    ("T.CorrCholeskyTransform()", "T.CorrCholeskyTransform()"),
]  # fmt: skip


@pytest.mark.parametrize(("a", "b"), EQUAL)
def test_equality_like_torch(a: str, b: str) -> None:
    (ours_a, theirs_a), (ours_b, theirs_b) = _pair(a), _pair(b)
    assert (ours_a == ours_b) == (theirs_a == theirs_b)
    assert (ours_a != ours_b) == (theirs_a != theirs_b)


def test_transforms_are_unhashable_as_in_torch() -> None:
    with pytest.raises(TypeError):
        hash(tt.ExpTransform())
    with pytest.raises(TypeError):
        hash(T.ExpTransform())


def test_transforms_module_exports_torchs_names() -> None:
    assert set(tt.__all__) <= set(T.__all__)
    for name in tt.__all__:
        assert getattr(T, name) is not None
    assert T.CatTransform is D.CatTransform and T.AbsTransform is D.AbsTransform


def test_kl_of_transformed_distributions_compares_transforms_by_value() -> None:
    def kl(module: object, tensor: object, scale: float) -> object:
        def build(loc: float) -> object:
            base = module.Normal(tensor([loc]), tensor([1.0]))  # type: ignore[attr-defined]
            affine = module.transforms.AffineTransform(tensor(0.0), scale)  # type: ignore
            return module.TransformedDistribution(base, [affine])  # type: ignore[attr-defined]

        try:
            return np.asarray(module.kl_divergence(build(0.0), build(1.0)))  # type: ignore
        except NotImplementedError:
            return NotImplementedError

    for scale in (2.0, -1.0):
        ours = kl(D, lambda v: tw.tensor(np.asarray(v)), scale)
        theirs = kl(td, lambda v: torch.tensor(np.asarray(v)), scale)
        np.testing.assert_allclose(ours, theirs)


def test_constraints_module_exports_torchs_names() -> None:
    assert set(tc.__all__) - {"MixtureSameFamilyConstraint"} <= set(constraints.__all__)
    assert constraints.is_dependent(D.Uniform.support)
    assert constraints.is_dependent(D.Multinomial.support)
    assert D.Multinomial.support.event_dim == 1 and D.Multinomial.support.is_discrete
    assert constraints.dependent(is_discrete=True, event_dim=1).is_discrete
    assert D.LKJCholesky.support is constraints.corr_cholesky


CHECKS = [
    ("C.square", [[[1.0, 2.0], [3.0, 4.0]]]),
    ("C.square", np.zeros((3, 2, 3))),
    ("C.symmetric", [[[1.0, 2.0], [2.0, 4.0]], [[1.0, 2.0], [2.0 + 1e-4, 4.0]]]),
    ("C.symmetric", [[[1.0, 2.0], [2.0 + 1e-7, 4.0]]]),
    ("C.positive_semidefinite", [[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ("C.positive_definite", [[[1.0, 1.0], [1.0, 1.0]], [[2.0, 0.5], [0.5, 1.0]]]),
    ("C.positive_definite", [[[2.0, 0.5], [0.5 + 1e-7, 1.0]]]),
    ("C.multinomial(3)", [[1.0, 2.0], [2.0, 2.0], [-1.0, 1.0]]),
    ("C.corr_cholesky", [[[1.0, 0.0], [0.6, 0.8]], [[1.0, 0.0], [0.6, 0.7]]]),
    ("C.cat([C.positive, C.real], 0, [1, 2])", [-1.0, -1.0, 2.0]),
    ("C.cat([C.positive, C.unit_interval], -1)", [[1.0, 0.5], [-1.0, 2.0]]),
    ("C.stack([C.positive, C.real], 1)", [[1.0, -3.0], [-1.0, 2.0]]),
]  # fmt: skip


@pytest.mark.parametrize(("build", "value"), CHECKS)
def test_constraint_checks_like_torch(build: str, value: object) -> None:
    ours, theirs = _pair(build)
    assert ours.event_dim == theirs.event_dim and ours.is_discrete == theirs.is_discrete
    got = ours.check(tw.tensor(np.asarray(value, dtype=np.float64)))
    want = theirs.check(torch.tensor(np.asarray(value, dtype=np.float64)))
    np.testing.assert_array_equal(np.asarray(got), want.numpy())


def test_stack_constraint_event_dim_like_torch() -> None:
    for build in ("C.stack([C.real_vector, C.real_vector], -1)", "C.stack([C.real], 0)"):
        ours, theirs = _pair(build)
        assert ours.event_dim == theirs.event_dim
