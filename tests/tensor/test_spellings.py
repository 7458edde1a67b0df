"""PyTorch's other spellings and small compositions (ops/spellings.py) against PyTorch:
values, dtypes, shapes, gradients and error types, on 0-d, empty and odd-sized inputs."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import grads_like_torch, like_torch, raises_like_torch, uniform

A = uniform((3, 4), seed=1)
B = uniform((3, 4), seed=2)
NAN = np.array([1.0, np.nan, -2.0, np.nan, np.inf, -np.inf])
NAN2 = np.array([np.nan, 3.0, -1.0, np.nan, 0.0, -np.inf])


@pytest.mark.cunumeric
@pytest.mark.parametrize(
    "name", ["greater", "greater_equal", "less", "less_equal", "not_equal", "multiply"]
)
def test_binary_aliases(backend: str, name: str) -> None:
    like_torch(lambda m, a, b: getattr(m, name)(a, b), A, B)
    like_torch(lambda m, a, b: getattr(a, name)(b), A, B)


@pytest.mark.parametrize("name", ["absolute", "negative", "positive", "sgn", "fix", "ravel"])
def test_unary_aliases(backend: str, name: str) -> None:
    like_torch(lambda m, a: getattr(m, name)(a), A)
    like_torch(lambda m, a: getattr(a, name)(), np.array(-2.5))
    like_torch(lambda m, a: getattr(m, name)(a), np.zeros((0, 3)))


def test_positive_of_bool_raises_like_torch(backend: str) -> None:
    raises_like_torch(lambda m, a: m.positive(a), np.array([True, False]))


def test_axes_and_selection(backend: str) -> None:
    x = uniform((2, 3, 4))
    like_torch(lambda m, a: m.swapaxes(a, 0, 2), x)
    like_torch(lambda m, a: a.swapdims(-1, 1), x)
    like_torch(lambda m, a: m.moveaxis(a, 0, -1), x)
    like_torch(lambda m, a: m.select(a, 1, -1), x)
    like_torch(lambda m, a: a.select(0, 1), x)
    like_torch(lambda m, a: m.take(a, m.tensor([[0, 5], [-1, 23]])), x)
    like_torch(lambda m, a: m.fliplr(a), x)
    like_torch(lambda m, a: m.flipud(a), x)
    for k in (-3, -1, 0, 1, 2, 3, 5):
        like_torch(lambda m, a, k=k: m.rot90(a, k, [1, 2]), x)
    raises_like_torch(lambda m, a: m.select(a, 3, 0), x)
    raises_like_torch(lambda m, a: m.fliplr(a), np.ones(3))
    raises_like_torch(lambda m, a: m.rot90(a, 1, [0, 0]), x)


def test_stacking(backend: str) -> None:
    one, vec, mat = np.array(1.5), uniform((3,)), uniform((2, 3))
    like_torch(lambda m, a, b, c: m.atleast_1d(a, b, c), one, vec, mat)
    like_torch(lambda m, a, b, c: m.atleast_2d((a, b, c)), one, vec, mat)
    like_torch(lambda m, a, b, c: m.atleast_3d(a, b, c), one, vec, mat)
    like_torch(lambda m, a: m.atleast_2d(a), one)
    like_torch(lambda m, a, b: m.hstack([a, b]), vec, vec)
    like_torch(lambda m, a, b: m.hstack((a, b)), mat, mat)
    like_torch(lambda m, a, b: m.vstack([a, b]), vec, mat)
    like_torch(lambda m, a, b: m.row_stack([a, b]), vec, vec)
    like_torch(lambda m, a, b: m.dstack([a, b]), mat, mat)
    like_torch(lambda m, a, b: m.column_stack([a, b]), vec, mat.T)
    like_torch(lambda m, a, b, c: m.block_diag(a, b, c), one, vec, mat)
    like_torch(lambda m, a: m.block_diag(a, m.tensor([[1, 2]])), mat)
    like_torch(lambda m: m.block_diag())
    like_torch(lambda m, a: m.broadcast_tensors(a, m.ones(4, 1, 1)), mat)
    assert tw.broadcast_shapes((2, 1), (3, 1, 4), 1) == (3, 2, 4)
    with pytest.raises(RuntimeError, match="Shape mismatch"):
        tw.broadcast_shapes((2, 3), (4,))


@pytest.mark.parametrize("sections", [1, 3, 4, 7, [2], [-2, 10, 3], [0, 0, 5]])
def test_tensor_split_like_torch(backend: str, sections) -> None:
    x = uniform((7, 2))
    like_torch(lambda m, a: m.tensor_split(a, sections), x)
    like_torch(lambda m, a: a.tensor_split(sections, dim=-2), x)


def test_splits(backend: str) -> None:
    x = uniform((4, 6, 2))
    like_torch(lambda m, a: m.hsplit(a, 3), x)
    like_torch(lambda m, a: m.vsplit(a, [1, 3]), x)
    like_torch(lambda m, a: m.dsplit(a, 2), x)
    like_torch(lambda m, a: m.hsplit(a, 2), uniform((6,)))
    like_torch(lambda m, a: a.split_with_sizes([1, 3, 2], 1), x)
    raises_like_torch(lambda m, a: m.hsplit(a, 4), x)
    raises_like_torch(lambda m, a: m.vsplit(a, 2), uniform((6,)))
    raises_like_torch(lambda m, a: a.split_with_sizes([1, 2], 1), x)
    raises_like_torch(lambda m, a: m.tensor_split(a, 0), x)


@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, -2.0), (0, 3.0)])
def test_fused_products_like_torch(backend: str, beta, alpha) -> None:
    k = {"beta": beta, "alpha": alpha}
    like_torch(lambda m, c, a, b: m.addmm(c, a, b, **k), uniform((4,)), A.T, B)
    like_torch(lambda m, c, a, b: c.addmv(a, b, **k), uniform((4,)), A.T, uniform((3,)))
    like_torch(lambda m, c, a, b: m.addr(c, a, b, **k), A, uniform((3,)), uniform((4,)))
    p, q = uniform((2, 3, 4)), uniform((2, 4, 5))
    like_torch(lambda m, c, a, b: m.baddbmm(c, a, b, **k), uniform((2, 3, 5)), p, q)
    like_torch(lambda m, c, a, b: m.addbmm(c, a, b, **k), uniform((3, 5)), p, q)


def test_beta_zero_ignores_nan_in_input_like_torch(backend: str) -> None:
    like_torch(lambda m, c, a: m.addmm(c, a, a.T, beta=0), np.full((3, 3), np.nan), A)


def test_products_and_gradients(backend: str) -> None:
    like_torch(lambda m, a, b: m.inner(a, b), A, B)
    like_torch(lambda m, a, b: m.inner(a, b), np.array(2.0), B)
    like_torch(lambda m, a, b: m.vdot(a, b), A[0], B[0])
    like_torch(lambda m, a, b: m.ger(a, b), A[0], B[1])
    like_torch(lambda m, a: m.diagflat(a, -1), A[:2, :2])
    raises_like_torch(lambda m, a, b: m.inner(a, b), A, B.T)
    grads_like_torch(lambda m, c, a, b: m.addmm(c, a, b, beta=0.5, alpha=2).sum(), B.T @ B, A.T, B)
    grads_like_torch(lambda m, a, b: (m.inner(a, b) ** 2).sum(), A, B)
    grads_like_torch(lambda m, a: m.renorm(a, 2, 0, 1.0).pow(3).sum(), A * 3)


def test_predicates(backend: str) -> None:
    x = tw.tensor(A)
    assert tw.equal(x, tw.tensor(A)) and not tw.equal(x, x + 1) and not tw.equal(x, x[:2])
    assert not tw.equal(tw.tensor([np.nan]), tw.tensor([np.nan]))
    assert tw.tensor([3]).is_nonzero() and not tw.is_nonzero(tw.tensor(0.0))
    for n in (0, 2):
        raises_like_torch(lambda m, a: m.is_nonzero(a), np.zeros(n))
    assert tw.ones(1, dtype=tw.int8).is_signed() and not tw.ones(1, dtype=tw.uint8).is_signed()
    assert not x.is_conj() and not tw.is_neg(x)
    like_torch(lambda m, a: m.isposinf(a), NAN)
    like_torch(lambda m, a: m.isneginf(a), NAN)
    like_torch(lambda m, a: m.isreal(a), NAN)
    like_torch(lambda m, a: m.isreal(a), np.array([1, 2]))


def test_nan_ignoring_extrema_and_steps(backend: str) -> None:
    like_torch(lambda m, a, b: m.fmax(a, b), NAN, NAN2)
    like_torch(lambda m, a, b: a.fmin(b), NAN, NAN2)
    like_torch(lambda m, a, b: m.fmax(a, b), np.array([1, 5]), np.array([3, 2]))
    like_torch(lambda m, a, b: m.heaviside(a, b), np.array([-1.5, 0.0, 2.0]), np.array([0.5]))
    like_torch(lambda m, a, b: m.dist(a, b), A, B)
    like_torch(lambda m, a, b: m.dist(a, b, 1), A, B)
    like_torch(lambda m, a: m.renorm(a, 1, 1, 2.0), A * 3)


def test_statistics(backend: str) -> None:
    x = uniform((3, 6))
    like_torch(lambda m, a: m.cov(a), x)
    like_torch(lambda m, a: a.cov(correction=0), x)
    like_torch(lambda m, a: m.cov(a), x[0])
    like_torch(lambda m, a: m.cov(a, fweights=m.tensor([1, 2, 1, 3, 1, 1])), x)
    like_torch(lambda m, a: m.cov(a, aweights=m.tensor([0.5, 2, 1, 3, 1, 1.5]).double()), x)
    like_torch(lambda m, a: m.corrcoef(a), x)
    grads_like_torch(lambda m, a: m.cov(a).sum() + m.corrcoef(a).pow(2).sum(), x)


def test_combinations_and_logspace(backend: str) -> None:
    v = np.array([3, 1, 4, 1])
    for r in (0, 1, 2, 3, 5):
        like_torch(lambda m, a, r=r: m.combinations(a, r), v)
        like_torch(lambda m, a, r=r: m.combinations(a, r, with_replacement=True), v[:3])
    like_torch(lambda m: m.logspace(-2, 3, 6))
    like_torch(lambda m: m.logspace(0, 4, 5, base=2, dtype=m.float64))
    raises_like_torch(lambda m, a: m.combinations(a), np.ones((2, 2)))


@pytest.mark.parametrize(
    "name, args",
    [
        ("exp", ()),
        ("abs", ()),
        ("sigmoid", ()),
        ("floor", ()),
        ("clamp_min", (0.1,)),
        ("gt", (0.0,)),
        ("multiply", (2.0,)),
        ("cumsum", (1,)),
        ("renorm", (2, 0, 1.0)),
    ],
)
def test_inplace_forms_like_torch(backend: str, name: str, args) -> None:
    def run(m, a):
        b = a.clone()
        out = getattr(b, name + "_")(*args)
        assert out is b
        return b

    like_torch(run, A)


def test_module_level_inplace_functions(backend: str) -> None:
    x = tw.tensor([-1.0, 0.5])
    assert tw.relu_(x) is x and x.tolist() == [0.0, 0.5]
    y = tw.tensor([0.25])
    tw.sqrt_(y)
    assert y.tolist() == [0.5]


@pytest.mark.parametrize("dim, size, step", [(0, 2, 1), (1, 3, 2), (-1, 4, 4), (1, 1, 3)])
def test_unfold_windows_like_torch(backend: str, dim, size, step) -> None:
    x = uniform((3, 7), seed=4)
    like_torch(lambda m, a: a.unfold(dim, size, step), x)
    grads_like_torch(lambda m, a: (a.unfold(dim, size, step) ** 2).sum(), x)
    raises_like_torch(lambda m, a: a.unfold(1, 8, 1), x)
    like_torch(lambda m, a: a.unfold(0, 1, 1), np.array(2.5))


def test_unique_consecutive_like_torch(backend: str) -> None:
    v = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    like_torch(lambda m, a: m.unique_consecutive(a), v)
    like_torch(lambda m, a: a.unique_consecutive(return_inverse=True, return_counts=True), v)
    rows = np.array([[1, 1], [1, 1], [2, 3], [1, 1]])
    like_torch(lambda m, a: m.unique_consecutive(a, return_counts=True, dim=0), rows)
    like_torch(lambda m, a: m.unique_consecutive(a, return_inverse=True, dim=1), rows)
    like_torch(lambda m, a: m.unique_consecutive(a), np.array([np.nan, np.nan, 1.0, 1.0]))
    like_torch(lambda m, a: m.unique_consecutive(a, return_counts=True), np.zeros(0))


def test_scatter_into_views_like_torch(backend: str) -> None:
    x = uniform((3, 4), seed=5)
    like_torch(lambda m, a, s: m.select_scatter(a, s, 0, -1), x, uniform((4,), seed=6))
    like_torch(lambda m, a, s: a.slice_scatter(s, 1, 1, 4, 2), x, uniform((3, 2), seed=7))
    like_torch(lambda m, a, s: m.diagonal_scatter(a, s, 1), x, uniform((3,), seed=8))
    grads_like_torch(
        lambda m, a, s: (m.slice_scatter(a, s, 1, 1, 4, 2) ** 2).sum(), x, uniform((3, 2))
    )
    grads_like_torch(lambda m, a, s: (m.diagonal_scatter(a, s) ** 3).sum(), x, uniform((3,)))
    raises_like_torch(lambda m, a, s: m.select_scatter(a, s, 0, 0), x, uniform((3,)))


def test_sum_to_size_mv_softmax_like_torch(backend: str) -> None:
    x = uniform((2, 3, 4), seed=9)
    like_torch(lambda m, a: a.sum_to_size(3, 1), x)
    like_torch(lambda m, a: a.sum_to_size((1, 3, 4)), x)
    raises_like_torch(lambda m, a: a.sum_to_size(5, 4), x)
    like_torch(lambda m, a, v: m.mv(a, v), A, uniform((4,), seed=10))
    like_torch(lambda m, a: m.softmax(a, 1), A)
    like_torch(lambda m, a: m.log_softmax(a.float(), 0, dtype=m.float64), A)


def test_everyday_attributes_like_torch(backend: str) -> None:
    for m in (tw, torch):
        x = m.tensor(A)
        assert x.get_device() == -1 and m.get_device(x) == -1
        assert not x.is_mps and not x.is_xpu and not x.is_meta and not x.is_shared()
        assert repr(x.layout).split(".")[-1] == "strided" and x.layout is m.strided
        assert x.H.shape == x.mH.shape == x.adjoint().shape == (4, 3)
        assert x.real is x
        with pytest.raises(RuntimeError, match="imag is not implemented"):
            x.imag  # noqa: B018
        y = x.clone().requires_grad_() * 2
        assert not y.retains_grad
        y.retain_grad()
        assert y.retains_grad
        assert m.is_signed(x) and (m.pi, m.e, m.inf) == (np.pi, np.e, np.inf)
        assert np.isnan(m.nan) and m.newaxis is None


def test_normal_draws_with_torchs_shapes_and_statistics(backend: str) -> None:
    tw.manual_seed(0)
    mean, std = tw.zeros(20000) + 3.0, tw.full((20000,), 2.0)
    draws = tw.normal(mean, std)
    assert draws.shape == (20000,)
    assert abs(draws.mean().item() - 3.0) < 0.05 and abs(draws.std().item() - 2.0) < 0.05
    assert tw.normal(0.0, 1.0, size=(2, 3)).shape == torch.normal(0.0, 1.0, size=(2, 3)).shape
    assert tw.normal(tw.zeros(4, 1), 1.0).shape == (4, 1)
    assert tw.normal(2.0, tw.ones(5)).shape == (5,)


@pytest.mark.parametrize("p", [2, 3, 1.5, 1, 0.5, "fro"])
def test_norm_gradient_at_zero_is_zero_like_torch(backend: str, p) -> None:
    x = np.array([[1.0, -2.0, 0.0], [0.0, 0.0, 0.0]])
    grads_like_torch(lambda m, a: a.norm(p=p, dim=1).sum() if p != "fro" else a.norm(p), x)
    grads_like_torch(lambda m, a: a.norm(p) if p != "fro" else a.norm(), np.zeros((2, 2)))


def test_shape_is_a_size_like_torch(backend: str) -> None:
    for m in (tw, torch):
        x = m.zeros(2, 3)
        for shape in (x.shape, x.size(), (x + 1).shape, m.nn.Linear(3, 4)(x).shape):
            assert type(shape) is m.Size and shape == (2, 3) or shape == (2, 4)
        assert x.shape.numel() == 6 and type(x.shape + (5,)) is m.Size
        assert repr(x.shape) == "torch.Size([2, 3])".replace("torch", m.__name__)


def test_legacy_tensor_constructor_like_torch(backend: str) -> None:
    for make in (
        lambda m: m.Tensor(2, 3),
        lambda m: m.Tensor([[1, 2]]),
        lambda m: m.Tensor(),
        lambda m: m.Tensor(4),
        lambda m: m.Tensor((2, 3)),
        lambda m: m.Tensor(m.tensor([1.5])),
    ):
        ours, theirs = make(tw), make(torch)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        assert isinstance(ours, tw.Tensor)
    assert tw.Tensor([[1, 2]]).tolist() == [[1.0, 2.0]]
