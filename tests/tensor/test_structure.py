"""Structured constructions against PyTorch: diagonals (and writes through ``diagonal``'s view),
``diag``, ``diag_embed``, ``trace``, triangle indices, ``meshgrid``, ``cartesian_prod``,
``repeat_interleave``, ``tile``, ``diff``, ``kron``, ``tensordot``, ``cross`` and ``cdist``:
values over shapes, offsets, negative dims, dtypes and empty inputs, gradients, and errors.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch
from gradcheck import gradcheck
from tensor_reference import grads_like_torch, like_torch, raises_like_torch, uniform

CUBE = uniform((3, 4, 5))


@pytest.mark.cunumeric
@pytest.mark.parametrize("offset", [0, 1, -2, 4, -3, 7])
@pytest.mark.parametrize(("dim1", "dim2"), [(0, 1), (1, 0), (-1, 0), (2, -2)])
def test_diagonal_like_torch(backend: str, offset: int, dim1: int, dim2: int) -> None:
    like_torch(lambda m, t: m.diagonal(t, offset, dim1, dim2), CUBE)
    like_torch(lambda m, t: t.diagonal(offset=offset, dim1=dim1, dim2=dim2), CUBE, dtype="int32")


def test_diagonal_of_empty_and_its_gradient_like_torch(backend: str) -> None:
    like_torch(lambda m, t: m.diagonal(t), np.zeros((0, 3)))
    like_torch(lambda m, t: m.diagonal(t, 1, 1, 2), np.zeros((2, 0, 4)))
    grads_like_torch(lambda m, t: m.diagonal(t, -1, 2, 0), CUBE)
    gradcheck(lambda t: tw.diagonal(t, 1, -1, -2) * 2, CUBE)


def test_writes_through_diagonal_reach_the_base_like_torch(backend: str) -> None:
    def write(m, t):
        t = t.clone()
        t.diagonal(1, 0, 2).mul_(10)
        m.diagonal(t, -1).fill_(-7)
        m.diag(t[0]).fill_(5)  # a copy: the write stays there
        return t

    like_torch(write, CUBE)


@pytest.mark.parametrize("offset", [0, 2, -1])
def test_diag_of_vectors_and_matrices_like_torch(backend: str, offset: int) -> None:
    like_torch(lambda m, t: m.diag(t, offset), uniform((4,)))
    like_torch(lambda m, t: t.diag(diagonal=offset), uniform((3, 5)), dtype="int64")
    like_torch(lambda m, t: m.diag(t, offset), np.zeros((0,)))
    grads_like_torch(lambda m, t: m.diag(t, offset), uniform((4,)))


@pytest.mark.cunumeric
@pytest.mark.parametrize("offset", [0, 1, -2])
@pytest.mark.parametrize(("dim1", "dim2"), [(-2, -1), (0, 2), (-1, 1), (3, 0)])
def test_diag_embed_like_torch(backend: str, offset: int, dim1: int, dim2: int) -> None:
    like_torch(lambda m, t: m.diag_embed(t, offset, dim1, dim2), CUBE)


def test_diag_embed_of_bool_and_empty_and_its_gradient_like_torch(backend: str) -> None:
    like_torch(lambda m, t: t.diag_embed(), CUBE > 0)
    like_torch(lambda m, t: m.diag_embed(t, 1), np.zeros((2, 0)))
    gradcheck(lambda t: tw.diag_embed(t, -1, 0, 2), uniform((2, 3)))


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8"])
def test_trace_like_torch(backend: str, dtype: str) -> None:
    like_torch(lambda m, t: m.trace(t), uniform((4, 3)) * 3, dtype=dtype)
    like_torch(lambda m, t: t.trace(), uniform((2, 6)) * 3, dtype=dtype)


def test_trace_of_empty_and_its_gradient_like_torch(backend: str) -> None:
    like_torch(lambda m, t: m.trace(t), np.zeros((0, 3)))
    grads_like_torch(lambda m, t: m.trace(t), uniform((3, 3)))


@pytest.mark.cunumeric
@pytest.mark.parametrize(("row", "col"), [(4, 4), (3, 5), (5, 2), (0, 3), (1, 0)])
@pytest.mark.parametrize("offset", [0, 1, -2, 6])
def test_triangle_indices_like_torch(backend: str, row: int, col: int, offset: int) -> None:
    like_torch(lambda m: m.tril_indices(row, col, offset))
    like_torch(lambda m: m.triu_indices(row, col, offset=offset, dtype=m.int32))


@pytest.mark.cunumeric
@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_like_torch(backend: str, indexing: str) -> None:
    a, b, c = uniform((3,)), uniform((2,), seed=1), np.array(5.0)
    like_torch(lambda m, x, y, z: m.meshgrid(x, y, z, indexing=indexing), a, b, c)
    like_torch(lambda m, x, y: m.meshgrid([x, y], indexing=indexing), a, np.zeros(0))
    like_torch(lambda m, x: m.meshgrid(x, indexing=indexing), a, dtype="int64")


def test_meshgrid_without_indexing_warns_and_uses_ij(backend: str) -> None:
    with pytest.warns(UserWarning, match="indexing"):
        x, y = tw.meshgrid(tw.arange(3), tw.arange(2))
    assert x.tolist() == [[0, 0], [1, 1], [2, 2]] and y.tolist() == [[0, 1]] * 3


def test_meshgrid_and_cartesian_prod_gradients_like_torch(backend: str) -> None:
    a, b = uniform((3,)), uniform((4,), seed=1)
    grads_like_torch(lambda m, x, y: m.meshgrid(x, y, indexing="xy")[0] * 2, a, b)
    grads_like_torch(lambda m, x, y: m.cartesian_prod(x, y), a, b)


def test_cartesian_prod_like_torch(backend: str) -> None:
    a, b, c = uniform((3,)), uniform((2,), seed=1), uniform((4,), seed=2)
    like_torch(lambda m, x, y, z: m.cartesian_prod(x, y, z), a, b, c)
    like_torch(lambda m, x: m.cartesian_prod(x), a, dtype="int64")
    like_torch(lambda m, x, y: m.cartesian_prod(x, y), a, np.zeros(0))


@pytest.mark.cunumeric
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("repeats", [0, 2, "tensor1"])
def test_repeat_interleave_by_a_number_like_torch(backend: str, dim: int, repeats) -> None:
    def fn(m, t):
        r = m.tensor([3]) if repeats == "tensor1" else repeats
        return m.repeat_interleave(t, r, dim)

    like_torch(fn, uniform((2, 3)))
    like_torch(lambda m, t: t.repeat_interleave(2, dim=dim), uniform((2, 3)), dtype="int32")


@pytest.mark.parametrize("dim", [0, -1])
def test_repeat_interleave_by_counts_like_torch(backend: str, dim: int) -> None:
    counts = np.array([2, 0, 3])
    x = uniform((3, 3))
    like_torch(lambda m, t, r: m.repeat_interleave(t, r, dim=dim), x, counts)
    like_torch(lambda m, t, r: t.repeat_interleave(r, dim, output_size=5), x, counts)
    like_torch(lambda m, r: m.repeat_interleave(r), counts)
    like_torch(lambda m, r: m.repeat_interleave(r), counts, dtype="int32")
    grads_like_torch(lambda m, t: m.repeat_interleave(t, m.tensor([2, 0, 3]), dim), x)
    grads_like_torch(lambda m, t: t.repeat_interleave(3), x)


def test_repeat_interleave_of_0d_and_empty_like_torch(backend: str) -> None:
    like_torch(lambda m, t: m.repeat_interleave(t, 3), np.array(1.5))
    like_torch(lambda m, t: m.repeat_interleave(t, 2, 1), np.zeros((2, 0)))
    like_torch(lambda m, r: m.repeat_interleave(r), np.zeros(0, dtype=np.int64))


@pytest.mark.parametrize("dims", [(2,), (1, 3), (2, 1, 2), (3, 1, 1, 2), ()])
def test_tile_like_torch(backend: str, dims: tuple) -> None:
    like_torch(lambda m, t: m.tile(t, dims), uniform((2, 3)))
    like_torch(lambda m, t: t.tile(dims), uniform((2, 3)) > 0)
    like_torch(lambda m, t: m.tile(t, dims), np.zeros((0, 2)))
    grads_like_torch(lambda m, t: m.tile(t, dims), uniform((2, 3)))


@pytest.mark.cunumeric
@pytest.mark.parametrize(("n", "dim"), [(1, -1), (2, 0), (0, 1), (3, 1), (6, -1)])
def test_diff_like_torch(backend: str, n: int, dim: int) -> None:
    like_torch(lambda m, t: m.diff(t, n, dim), uniform((3, 4)))
    like_torch(lambda m, t: t.diff(n=n, dim=dim), uniform((3, 4)) * 4, dtype="int32")
    like_torch(lambda m, t: m.diff(t, n, dim), uniform((3, 4)) > 0)


def test_diff_with_prepend_and_append_like_torch(backend: str) -> None:
    x, before, after = uniform((3, 4)), uniform((3, 2), seed=1), uniform((3, 1), seed=2)
    like_torch(lambda m, t, p, a: m.diff(t, 2, prepend=p, append=a), x, before, after)
    like_torch(lambda m, t, p: m.diff(t, dim=0, prepend=p), x, uniform((1, 4), seed=3))
    like_torch(lambda m, t: m.diff(t), np.zeros((2, 0)))
    grads_like_torch(lambda m, t, p: m.diff(t, 2, 1, prepend=p), x, before)


@pytest.mark.cunumeric
@pytest.mark.parametrize(("sa", "sb"), [((2, 3), (3, 2)), ((3,), (2, 2)), ((2, 1, 2), (3,))])
def test_kron_like_torch(backend: str, sa: tuple, sb: tuple) -> None:
    a, b = uniform(sa), uniform(sb, seed=1)
    like_torch(lambda m, x, y: m.kron(x, y), a, b)
    like_torch(lambda m, x, y: x.kron(y), a * 3, b * 3, dtype="int64")
    grads_like_torch(lambda m, x, y: m.kron(x, y), a, b)


def test_kron_of_empty_like_torch(backend: str) -> None:
    like_torch(lambda m, x, y: m.kron(x, y), np.zeros((2, 0)), uniform((3, 2)))


@pytest.mark.cunumeric
@pytest.mark.parametrize(
    ("dims", "shape"),
    [
        (2, (4, 2, 3)),
        (1, (2, 3)),
        (0, (2,)),
        (([0, 2], [1, 0]), (2, 3, 4)),
        (([-1], [1]), (3, 2)),
        ([[1], [0]], (4, 3)),
        (([], []), (2,)),
    ],
)
def test_tensordot_like_torch(backend: str, dims, shape: tuple) -> None:
    a, b = uniform((3, 4, 2)), uniform(shape, seed=1)
    like_torch(lambda m, x, y: m.tensordot(x, y, dims), a, b)
    like_torch(lambda m, x, y: m.tensordot(x, y, dims), a * 3, b * 3, dtype="int64")
    grads_like_torch(lambda m, x, y: m.tensordot(x, y, dims=dims), a, b)


def test_tensordot_of_empty_like_torch(backend: str) -> None:
    like_torch(lambda m, x, y: m.tensordot(x, y, 1), np.zeros((2, 0)), np.zeros((0, 3)))
    like_torch(lambda m, x, y: m.tensordot(x, y, 1), np.zeros((0, 2)), np.ones((2, 3)))


@pytest.mark.cunumeric
@pytest.mark.parametrize("dim", [0, -1, 1])
def test_cross_like_torch(backend: str, dim: int) -> None:
    a, b = uniform((3, 3, 3)), uniform((3, 3, 3), seed=1)
    like_torch(lambda m, x, y: m.cross(x, y, dim=dim), a, b)
    like_torch(lambda m, x, y: x.cross(y, dim), a * 3, b * 3, dtype="int64")
    grads_like_torch(lambda m, x, y: m.cross(x, y, dim), a, b)


def test_cross_broadcasts_and_defaults_to_the_first_dim_of_size_3_like_torch(
    backend: str,
) -> None:
    a, b = uniform((2, 1, 3)), uniform((1, 4, 3), seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        like_torch(lambda m, x, y: m.cross(x, y, -1), a, b)
        like_torch(lambda m, x, y: m.cross(x, y), uniform((2, 3, 3)), uniform((2, 3, 3), seed=2))
        like_torch(lambda m, x, y: m.cross(x, y), uniform((0, 3)), uniform((0, 3), seed=2))
    with pytest.warns(UserWarning, match="dim"):
        tw.cross(tw.ones(3), tw.ones(3))


@pytest.mark.cunumeric
@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, math.inf, 3.0, 0.5])
@pytest.mark.parametrize(
    ("s1", "s2"), [((4, 3), (5, 3)), ((2, 3, 2), (1, 4, 2)), ((0, 3), (2, 3)), ((3, 0), (2, 0))]
)
def test_cdist_like_torch(backend: str, p: float, s1: tuple, s2: tuple) -> None:
    like_torch(lambda m, x, y: m.cdist(x, y, p), uniform(s1), uniform(s2, seed=1))
    like_torch(
        lambda m, x, y: m.cdist(x, y, p=p), uniform(s1), uniform(s2, seed=1), dtype="float32"
    )


@pytest.mark.parametrize(
    "mode",
    [
        "use_mm_for_euclid_dist_if_necessary",
        "use_mm_for_euclid_dist",
        "donot_use_mm_for_euclid_dist",
    ],
)
def test_cdist_euclidean_modes_like_torch(backend: str, mode: str) -> None:
    a, b = uniform((30, 4)), uniform((6, 4), seed=1)
    like_torch(lambda m, x, y: m.cdist(x, y, compute_mode=mode), a, b)
    grads_like_torch(lambda m, x, y: m.cdist(x, y, compute_mode=mode), a, b)


@pytest.mark.parametrize("p", [2.0, 1.0, math.inf, 3.0, 1.5, 0.0])
def test_cdist_gradients(backend: str, p: float) -> None:
    a, b = uniform((2, 3, 4)), uniform((2, 2, 4), seed=1)
    gradcheck(lambda x, y: tw.cdist(x, y, p), a, b)
    grads_like_torch(lambda m, x, y: m.cdist(x, y, p), a, b)


def _grads_with_a_zero_distance(m, p: float, mode: str) -> tuple:
    a = uniform((3, 2))
    b = np.concatenate([a[1:2], uniform((2, 2), seed=1)])  # row 1 of a equals row 0 of b
    x, y = (m.tensor(v, requires_grad=True) for v in (a, b))
    m.cdist(x, y, p, compute_mode=mode).backward(m.tensor(uniform((3, 3), seed=2)))
    return x.grad, y.grad


@pytest.mark.parametrize("p", [2.0, 3.0])
def test_cdist_gradient_at_zero_distance_is_zero_like_torch(backend: str, p: float) -> None:
    like_torch(lambda m: _grads_with_a_zero_distance(m, p, "donot_use_mm_for_euclid_dist"))


def test_cdist_by_mm_has_finite_gradients_at_zero_distance_like_torch(backend: str) -> None:
    # The matmul form cancels to about 1e-16 for equal points, whose root then amplifies
    # rounding: PyTorch's gradient agrees only to about 1e-8 there.
    ours, theirs = (
        _grads_with_a_zero_distance(m, 2.0, "use_mm_for_euclid_dist") for m in (tw, torch)
    )
    for g, h in zip(ours, theirs):
        np.testing.assert_allclose(g.numpy(), h.numpy(), rtol=1e-6, atol=1e-6)


def test_errors_like_torch(backend: str) -> None:
    x = uniform((2, 3, 4))
    raises_like_torch(lambda m, t: m.trace(t), x, match=["trace", "dim 3"])
    raises_like_torch(lambda m, t: m.trace(t), np.eye(2) > 0, match=["trace", "bool"])
    raises_like_torch(lambda m, t: m.diagonal(t, 0, 1, -2), x, match=["identical"])
    raises_like_torch(lambda m, t: m.diagonal(t, 0, 0, 3), x, match=["out of range"])
    raises_like_torch(lambda m, t: m.diag(t), x, match=["diag"])
    raises_like_torch(lambda m, t: m.diff(t), np.array(1.0), match=["one-dimensional"])
    raises_like_torch(lambda m, t: m.repeat_interleave(t, -1), x, match=["negative"])
    raises_like_torch(lambda m, t: m.tensordot(t, t, 1), x, match=["4", "2"])
    raises_like_torch(lambda m, t: m.cross(t, t, 2), x, match=["length 3"])
    raises_like_torch(lambda m, t: m.cross(t, t, dim=1), uniform((2, 4)), match=["length 3"])
    raises_like_torch(lambda m, t: m.cdist(t, t), x, dtype="int64", match=["floating"])
    raises_like_torch(lambda m, t: m.cdist(t, t[..., :2]), x, match=["columns"])
    raises_like_torch(lambda m, t: m.cdist(t, t, -1.0), x, match=["non-negative"])
    raises_like_torch(lambda m, t: m.cdist(t, t), uniform((3,)), match=["2D"])


def test_cross_without_a_dim_of_size_3_raises_like_torch(backend: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        raises_like_torch(lambda m, t: m.cross(t, t), uniform((2, 4)), match=["size 3"])
