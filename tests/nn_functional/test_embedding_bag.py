"""embedding_bag and one_hot's edge cases against torch.nn.functional (float64)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from functional_reference import assert_close, check, check_same, randn

MODES = ["sum", "mean", "max"]
INDICES = np.array([1, 2, 4, 5, 4, 3, 2, 0, 2])
OFFSETS = np.array([0, 2, 2, 5])  # an empty bag, and a last bag running to the end


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_bag_offsets(backend: str, mode: str, padding_idx) -> None:
    check(
        lambda F, i, w, o: F.embedding_bag(i, w, o, mode=mode, padding_idx=padding_idx),
        INDICES,
        randn(6, 3),
        OFFSETS,
    )


@pytest.mark.parametrize("mode", MODES)
# The last offset is the input's length, as PyTorch documents, or short of it: then the last
# bag runs to the end, as in PyTorch's float64 kernels (its float32 sum/mean fast path
# without padding_idx disagrees).
@pytest.mark.parametrize("offsets", [[0, 2, 2, 9], [0, 3, 9], [0, 2, 5], [0, 3, 3, 6]])
def test_embedding_bag_include_last_offset(backend: str, mode: str, offsets: list) -> None:
    check(
        lambda F, i, w, o: F.embedding_bag(i, w, o, mode=mode, include_last_offset=True),
        INDICES,
        randn(6, 3),
        np.array(offsets),
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_bag_2d_input(backend: str, mode: str, padding_idx) -> None:
    indices = np.array([[1, 1, 3], [1, 0, 4], [1, 1, 1], [5, 2, 2]])  # an all-padding bag
    check(
        lambda F, i, w: F.embedding_bag(i, w, mode=mode, padding_idx=padding_idx),
        indices,
        randn(6, 3),
    )


def test_embedding_bag_max_gives_ties_to_the_first(backend: str) -> None:
    weight = randn(6, 3)
    weight[3] = weight[1]
    check(lambda F, i, w: F.embedding_bag(i, w, mode="max"), np.array([[1, 3], [3, 1]]), weight)


@pytest.mark.parametrize("layout", ["offsets", "2d"])
def test_embedding_bag_per_sample_weights(backend: str, layout: str) -> None:
    if layout == "offsets":
        arrays = [INDICES, randn(6, 3), randn(9, seed=1), OFFSETS]
    else:
        arrays = [INDICES[:8].reshape(2, 4), randn(6, 3), randn(2, 4, seed=1)]
    check(
        lambda F, i, w, s, *o: F.embedding_bag(
            i, w, *o, mode="sum", per_sample_weights=s, padding_idx=2
        ),
        *arrays,
    )


def test_embedding_bag_empty_input_gives_zero_bags(backend: str) -> None:
    check(
        lambda F, i, w, o: F.embedding_bag(i, w, o, mode="mean"),
        np.zeros(0, dtype=np.int64),
        randn(6, 3),
        np.array([0, 0]),
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("offsets", "include_last_offset"), [([0], True), ([], False)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_embedding_bag_no_bag_at_all(
    backend: str, mode: str, offsets: list, include_last_offset: bool, dtype: str
) -> None:
    """Offsets that start no bag give a (0, dim) result with a zero gradient, as torch's
    float32 sum/mean kernels do; torch 2.13's float64 kernels and its max kernel segfault
    on it (so the torch:cpu backend took the process down, and torch gives no reference)."""
    weight = tw.tensor(randn(6, 3), dtype=getattr(tw, dtype), requires_grad=True)
    out = tw.nn.functional.embedding_bag(
        tw.tensor([1, 2]),
        weight,
        tw.tensor(offsets, dtype=tw.int64),
        mode=mode,
        include_last_offset=include_last_offset,
    )
    out.sum().backward()
    assert tuple(out.shape) == (0, 3) and out.dtype is weight.dtype
    assert not weight.grad.abs().sum().item()


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_max_norm(backend: str, mode: str) -> None:
    weight = randn(6, 4, scale=2)
    ours, theirs = tw.tensor(weight), torch.tensor(weight)
    bags = np.array([[0, 2], [5, 2]])
    out = tw.nn.functional.embedding_bag(tw.tensor(bags), ours, max_norm=1.2, mode=mode)
    expected = torch.nn.functional.embedding_bag(
        torch.tensor(bags), theirs, max_norm=1.2, mode=mode
    )
    assert_close(out, expected)
    assert_close(ours, theirs)  # the rows looked up were renormalised in place


def test_embedding_bag_scale_grad_by_freq_sum_is_embeddings(backend: str) -> None:
    # Each row's gradient divided by its index's frequency in the batch, as in F.embedding
    # (compared with PyTorch there) and PyTorch's documentation; PyTorch 2.13's CPU
    # embedding_bag divides by the wrong count (pytorch/pytorch#190063, fixed after 2.13).
    check_same(
        lambda i, w: tw.nn.functional.embedding_bag(i, w, mode="sum", scale_grad_by_freq=True),
        lambda i, w: tw.nn.functional.embedding(i, w, scale_grad_by_freq=True).sum(1),
        np.array([[1, 1, 3], [1, 0, 0]]),
        randn(6, 3),
    )


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda F, i, w: F.embedding_bag(i, w, t(OFFSETS[1:])), RuntimeError, "offsets\\[0\\]"),
        (lambda F, i, w: F.embedding_bag(i, w, t([0, 10])), RuntimeError, "greater than"),
        (lambda F, i, w: F.embedding_bag(i.reshape(3, 3), w, t([0, 1])), ValueError, "2-D"),
        (lambda F, i, w: F.embedding_bag(i, w), ValueError, "offsets"),
        (lambda F, i, w: F.embedding_bag(i, w, t([0, 2]), mode="min"), ValueError, "mode"),
        (lambda F, i, w: F.embedding_bag(i.reshape(3, 3, 1), w), ValueError, "1-D or 2-D"),
        (
            lambda F, i, w: F.embedding_bag(
                i, w, t([0, 2]), mode="mean", per_sample_weights=w[0, :1].expand(9)
            ),
            NotImplementedError,
            "only supported for mode='sum'",
        ),
        (
            lambda F, i, w: F.embedding_bag(
                i, w, t([0, 2]), mode="sum", per_sample_weights=w[0, :1].expand(8)
            ),
            ValueError,
            "shape",
        ),
        (lambda F, i, w: F.embedding_bag(i, w, t([0]), padding_idx=6), RuntimeError, "padding"),
    ],
)
def test_embedding_bag_errors(backend: str, call, error: type, match: str) -> None:
    global t
    t = tw.tensor
    with pytest.raises(error, match=match):
        call(tw.nn.functional, tw.tensor(INDICES), tw.tensor(randn(6, 3)))
    t = torch.tensor
    with pytest.raises(error):  # PyTorch's classes
        call(torch.nn.functional, torch.tensor(INDICES), torch.tensor(randn(6, 3)))


def test_embedding_bag_rejects_out_of_range_index(backend: str) -> None:
    with pytest.raises(RuntimeError, match="index 6 is out of bounds"):
        tw.nn.functional.embedding_bag(tw.tensor([[0, 6]]), tw.ones(6, 2))


@pytest.mark.parametrize(
    ("shape", "num_classes"), [((0,), 4), ((2, 0), 3), ((3,), -1), ((2, 2), 5)]
)
def test_one_hot_edge_cases(backend: str, shape: tuple, num_classes: int) -> None:
    values = np.arange(int(np.prod(shape))).reshape(shape) % 3
    check(lambda F, x: F.one_hot(x, num_classes), values)


@pytest.mark.parametrize(
    ("values", "num_classes", "match"),
    [
        ([], -1, "empty"),
        ([], 0, "empty"),
        ([1, -1], 3, "non-negative"),
        ([0, 1], 0, "smaller than num_classes"),
    ],
)
def test_one_hot_errors_like_torch(
    backend: str, values: list, num_classes: int, match: str
) -> None:
    with pytest.raises(RuntimeError, match=match):
        tw.nn.functional.one_hot(tw.tensor(values, dtype=tw.int64), num_classes)
    with pytest.raises(RuntimeError):
        torch.nn.functional.one_hot(torch.tensor(values, dtype=torch.int64), num_classes)
