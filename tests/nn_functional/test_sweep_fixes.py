"""Edges where tw and PyTorch 2.13 disagreed before the sweep of 2026-12-04: gradients at the
kinks of the hard activations and of logsigmoid, at saturated probabilities in
binary_cross_entropy and at the hinge of the multi-class margin losses; uint8
interpolation and resizes that keep an axis's size; integer average pooling, empty
adaptive pools, over-cropping pads and PyTorch's exception classes. Where PyTorch 2.13
contradicts itself (antialiasing at width 1, the 1-D and 3-D nearest gradients) the test
says so and checks the consistent answer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from functional_reference import assert_close, check, gradcheck, randn
from tensor.tensor_reference import like_torch, raises_like_torch


def uniform(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.05, 0.95, shape)


#: The kinks of relu6, hardtanh, hardsigmoid and hardswish, and points between them.
KINKS = np.array([-4.0, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0, 5.0, 6.0, 7.0])

ACTIVATIONS_AT_KINKS = {
    "logsigmoid": lambda F, x: F.logsigmoid(x),
    "relu6": lambda F, x: F.relu6(x),
    "hardtanh": lambda F, x: F.hardtanh(x),
    "hardtanh bounds": lambda F, x: F.hardtanh(x, -3.0, 0.5),
    "hardtanh equal bounds": lambda F, x: F.hardtanh(x, 0.0, 0.0),
    "hardswish": lambda F, x: F.hardswish(x),
    "relu6 in place": lambda F, x: F.relu6(x * 1, inplace=True),
    "hardswish in place": lambda F, x: F.hardswish(x * 1, inplace=True),
}


@pytest.mark.parametrize("fn", ACTIVATIONS_AT_KINKS.values(), ids=ACTIVATIONS_AT_KINKS)
def test_gradient_at_the_kinks_like_torch(backend: str, fn: Any) -> None:
    # PyTorch passes the gradient of hardtanh only strictly inside its bounds, and
    # logsigmoid's gradient at 0 is sigmoid(0) = 1/2 (tw gave 0 or 1/6 at bounds, 1 at 0).
    check(fn, KINKS)


def test_hardsigmoid_gradient_at_the_kinks_like_torch(backend: str) -> None:
    # PyTorch's float64 kernel multiplies by 1/6 rounded to float32: 3e-8 relative.
    check(lambda F, x: F.hardsigmoid(x), KINKS, rtol=1e-7)


@pytest.mark.parametrize(
    "fn",
    [
        lambda m: m.nn.functional.relu6(m.arange(-3, 9)),
        lambda m: m.nn.functional.hardtanh(m.arange(-3, 9), -1.5, 2.5),
        lambda m: m.nn.Hardtanh(0, 4)(m.arange(-3, 9)),
    ],
    ids=["relu6", "hardtanh fractional bounds", "Hardtanh"],
)
def test_hardtanh_keeps_integer_dtype(backend: str, fn: Any) -> None:
    like_torch(fn)  # int64 in, int64 out (tw gave float64)


def _image(shape: tuple[int, ...], seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, shape).astype(np.uint8)


UINT8_RESIZES = [
    dict(size=(5, 9), mode="bilinear"),
    dict(size=(3, 4), mode="bilinear", antialias=True),
    dict(size=(7, 3), mode="bilinear", align_corners=True),
    dict(size=(9, 11), mode="bicubic"),
    dict(size=(4, 13), mode="bicubic", antialias=True, align_corners=True),
    dict(scale_factor=(0.45, 1.7), mode="bicubic"),
    dict(scale_factor=0.6, mode="bilinear", antialias=True),
    dict(size=(6, 5), mode="bilinear"),  # one axis kept
    dict(size=(6, 5), mode="nearest-exact"),
]


@pytest.mark.parametrize("kwargs", UINT8_RESIZES, ids=lambda k: ",".join(map(str, k.values())))
def test_interpolate_uint8_to_the_last_bit(backend: str, kwargs: dict) -> None:
    # tw gave an int64 tensor of zeros on NumPy (float weights cast to the integer dtype).
    image = _image((2, 3, 6, 5), seed=len(str(kwargs)))
    like_torch(lambda m, x: m.nn.functional.interpolate(x, **kwargs), image)


@pytest.mark.parametrize(
    ("dtype", "mode"),
    [
        ("int64", "bilinear"),
        ("int64", "nearest"),
        ("int32", "bicubic"),
        ("uint8", "area"),
        ("bool", "nearest"),
    ],
)
def test_interpolate_integer_kernels_torch_lacks(backend: str, dtype: str, mode: str) -> None:
    x = np.arange(40).reshape(1, 2, 4, 5) % 2
    raises_like_torch(
        lambda m, x: m.nn.functional.interpolate(x, size=(3, 7), mode=mode), x, dtype=dtype
    )


INTEGER_AVERAGES = {
    "avg_pool1d": lambda F, x: F.avg_pool1d(x[0], 3, 2, 1),
    "avg_pool1d ceil, no pad count": lambda F, x: F.avg_pool1d(
        x[0], 3, 2, 1, ceil_mode=True, count_include_pad=False
    ),
    "avg_pool2d divisor": lambda F, x: F.avg_pool2d(x, 2, divisor_override=3),
    "avg_pool2d unbatched": lambda F, x: F.avg_pool2d(x[0], (2, 3), padding=1),
    "avg_pool3d": lambda F, x: F.avg_pool3d(x[None], (1, 2, 2), ceil_mode=True),
}


@pytest.mark.parametrize("fn", INTEGER_AVERAGES.values(), ids=INTEGER_AVERAGES)
def test_integer_average_pool_rounds_toward_zero(backend: str, fn: Any) -> None:
    # PyTorch averages int64 into int64, rounding toward zero (tw gave float32).
    x = np.random.default_rng(3).integers(-50, 50, (2, 3, 5, 7))
    like_torch(lambda m, x: fn(m.nn.functional, x), x)


@pytest.mark.parametrize("dtype", ["int32", "uint8", "bool"])
def test_average_pool_of_other_integers_raises(backend: str, dtype: str) -> None:
    x = np.ones((1, 2, 4, 4), np.int64)
    raises_like_torch(lambda m, x: m.nn.functional.avg_pool2d(x, 2), x, dtype=dtype)


@pytest.mark.parametrize(
    "fn",
    [
        lambda F, x: F.adaptive_avg_pool2d(x, 0),
        lambda F, x: F.adaptive_avg_pool2d(x, (0, 2)),
        lambda F, x: F.adaptive_max_pool2d(x, (2, 0), return_indices=True),
        lambda F, x: F.adaptive_avg_pool1d(x[0], 0),
        lambda F, x: F.adaptive_max_pool3d(x[None], (0, 1, 1)),
    ],
    ids=["avg 0", "avg (0, 2)", "max (2, 0) indices", "avg1d unbatched 0", "max3d"],
)
def test_adaptive_pool_to_empty_output(backend: str, fn: Any) -> None:
    check(fn, randn(1, 2, 3, 5), grad=())  # tw raised; PyTorch gives an empty output


@pytest.mark.parametrize("name", ["adaptive_avg_pool2d", "adaptive_max_pool2d"])
@pytest.mark.parametrize("dtype", ["int64", "uint8"])
def test_adaptive_pool_of_integers_raises(backend: str, name: str, dtype: str) -> None:
    x = np.arange(30).reshape(1, 2, 3, 5)
    raises_like_torch(lambda m, x: getattr(m.nn.functional, name)(x, 2), x, dtype=dtype)


@pytest.mark.parametrize("widths", [(-3, 1), (-3, 0), (1, -4), (-2, -1)])
def test_pad_cropping_more_than_the_input_raises(backend: str, widths: tuple) -> None:
    raises_like_torch(lambda m, x: m.nn.functional.pad(x, widths), randn(2, 2))


def test_pad_cropping_all_of_the_input(backend: str) -> None:
    check(lambda F, x: F.pad(x, (-2, 0, 1, -1)), randn(3, 2))


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.nn.functional.embedding(m.tensor([1]), m.ones(5, 3), padding_idx=5),
        lambda m: m.nn.functional.embedding(m.tensor([1]), m.ones(5, 3), padding_idx=-6),
        lambda m: m.nn.Embedding(5, 3, padding_idx=5),
        lambda m: m.nn.Embedding.from_pretrained(m.ones(5, 3), padding_idx=-6),
        lambda m: m.nn.EmbeddingBag(5, 3, padding_idx=7),
    ],
    ids=["embedding", "embedding negative", "Embedding", "from_pretrained", "EmbeddingBag"],
)
def test_padding_idx_out_of_range_is_an_assertion_error(backend: str, call: Any) -> None:
    error = raises_like_torch(call)
    assert isinstance(error, ValueError)  # what tw raised before: still caught by old code


@pytest.mark.parametrize(("shape", "groups"), [((1, 6), 6), ((1, 4, 1), 4), ((1, 2, 1, 1, 1), 2)])
def test_group_norm_of_one_value_per_group_raises(backend: str, shape: tuple, groups: int):
    # tw returned zeros; PyTorch raises its batch-norm ValueError.
    raises_like_torch(lambda m, x: m.nn.functional.group_norm(x, groups), randn(*shape))


def test_batch_norm_of_a_vector_raises_index_error(backend: str) -> None:
    raises_like_torch(
        lambda m, x: m.nn.functional.batch_norm(x, None, None, training=True), randn(5)
    )


@pytest.mark.parametrize("reduction", ["none", "sum"])
def test_binary_cross_entropy_gradient_at_saturated_probabilities(
    backend: str, reduction: str
) -> None:
    # A probability of exactly 0 or 1 (a float32 sigmoid of +-20) gave NaN gradients: the
    # clamped logs' derivative is 0 * inf. PyTorch's is (x - y) / max(x (1 - x), 1e-12).
    x = np.array([0.0, 1.0, 0.0, 1.0, 1e-13, 0.3])
    y = np.array([0.0, 1.0, 1.0, 0.0, 0.5, 0.2])
    check(lambda F, x, y: F.binary_cross_entropy(x, y, reduction=reduction), x, y, grad=(0,))
    check(lambda F, x, y: F.binary_cross_entropy(x, y), uniform(3, 4), uniform(3, 4, seed=1))


def test_binary_cross_entropy_of_a_saturated_float32_sigmoid(backend: str) -> None:
    logits = np.array([-200.0, 200.0, 0.0, 30.0], np.float32)
    target = np.array([0.0, 1.0, 1.0, 1.0], np.float32)
    like_torch(
        lambda m, z, y: m.autograd.grad(
            m.nn.functional.binary_cross_entropy(z.requires_grad_().sigmoid(), y), z
        )[0],
        logits,
        target,
    )


MARGIN_TIES = {
    "multi_margin_loss": (
        lambda F, x, t: F.multi_margin_loss(x, t, reduction="sum"),
        np.array([0, 1]),
    ),
    "multi_margin_loss p=2 weight": (
        lambda F, x, t: F.multi_margin_loss(x, t, p=2, weight=x[0].detach().abs() + 1),
        np.array([0, 1]),
    ),
    "multilabel_margin_loss": (
        lambda F, x, t: F.multilabel_margin_loss(x, t, reduction="sum"),
        np.array([[0, -1, 1], [1, -1, 0]]),
    ),
}


@pytest.mark.parametrize("case", MARGIN_TIES.values(), ids=MARGIN_TIES)
def test_multi_class_margins_at_the_hinge_and_nan(backend: str, case: tuple) -> None:
    # PyTorch's kernels count a margin only where it is > 0: no gradient at exactly 0
    # (tw passed one) and a NaN margin adds 0 (tw gave NaN).
    fn, target = case
    check(fn, np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 1.0]]), target, grad=(0,))
    check(fn, np.array([[1.0, np.nan, 0.5], [0.2, 0.1, np.nan]]), target, grad=())


UNCHANGED_AXIS = {
    "nearest 2-D, scale 1.009 keeps the width": lambda F, x: F.interpolate(
        x, scale_factor=(1.4, 1.009)
    ),
    "nearest 2-D, scale 2.2 doubles the width": lambda F, x: F.interpolate(
        x, scale_factor=(0.7, 2.2)
    ),
    "bilinear, scale 1.2 keeps the height": lambda F, x: F.interpolate(
        x, scale_factor=(1.2, 2.0), mode="bilinear"
    ),
    "bicubic, scale 1.2 keeps the height": lambda F, x: F.interpolate(
        x, scale_factor=(1.2, 0.5), mode="bicubic"
    ),
    "linear, scale 1.2": lambda F, x: F.interpolate(x[0], scale_factor=1.2, mode="linear"),
    "trilinear, scale 1.1 keeps the depth": lambda F, x: F.interpolate(
        x[None], scale_factor=(1.1, 1.5, 0.6), mode="trilinear"
    ),
}


@pytest.mark.parametrize("fn", UNCHANGED_AXIS.values(), ids=UNCHANGED_AXIS)
def test_interpolate_axis_whose_size_the_scale_keeps(backend: str, fn: Any) -> None:
    # PyTorch's separable kernels (and its 2-D nearest) copy an axis whose size stays the
    # same (or halve the index for nearest doubling) whatever the scale factor; tw applied
    # the scale (a silently different resize on NumPy).
    check(fn, randn(2, 3, 5, 4))


@pytest.mark.parametrize(
    "fn",
    [
        lambda F, x: F.interpolate(x[0], scale_factor=1.009),
        lambda F, x: F.interpolate(x[0], scale_factor=2.2),
        lambda F, x: F.interpolate(x[None], scale_factor=(2.266, 1.7, 1.1)),
        lambda F, x: F.interpolate(x, scale_factor=(0.5, 1.1), mode="bicubic", antialias=True),
        lambda F, x: F.interpolate(x, scale_factor=(1.3, 1.1), mode="bilinear", antialias=True),
    ],
    ids=["nearest 1-D kept", "nearest 1-D doubled", "nearest 3-D", "bicubic aa", "bilinear aa"],
)
def test_resize_whose_torch_gradient_is_not_its_forwards(backend: str, fn: Any) -> None:
    # The forward is PyTorch's (nearest takes no shortcut in 1-D and 3-D; antialiasing
    # copies an axis that keeps its size); PyTorch's backward takes the shortcuts and
    # rescales that axis, failing its own gradcheck. tw's gradient is the forward's, on
    # every backend (torch:cpu passed PyTorch's on), by finite differences.
    check(fn, randn(2, 3, 5, 4), grad=())
    gradcheck(fn, randn(2, 3, 5, 4))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize(
    ("shape", "size"),
    [((1, 2, 6, 3), (8, 1)), ((1, 2, 4, 1), (2, 1)), ((2, 1, 5, 1), (3, 4))],
    ids=["to width 1", "width 1", "from width 1"],
)
def test_antialias_with_a_width_of_one(backend: str, mode: str, shape: tuple, size: tuple):
    # PyTorch 2.13's antialiased kernel resizes the height wrongly when the width is 1
    # (on torch:cpu tw passed that on): the answer is PyTorch's on the transposed image.
    x = randn(*shape)
    ours = tw.nn.functional.interpolate(tw.tensor(x), size, mode=mode, antialias=True)
    transposed = torch.tensor(x).transpose(2, 3)
    theirs = torch.nn.functional.interpolate(transposed, size[::-1], mode=mode, antialias=True)
    assert_close(ours, theirs.transpose(2, 3))


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_huber_loss_keeps_the_input_dtype(backend: str, reduction: str) -> None:
    # float32 input, float64 target: PyTorch's huber_loss is float32 (tw gave float64).
    like_torch(
        lambda m, x, y: m.nn.functional.huber_loss(x, y, reduction=reduction, delta=0.7),
        randn(2, 3).astype(np.float32),
        randn(2, 3, seed=1),
    )


NEGATIVE_PADS = {
    "reflect crops 2, pads 1": ("reflect", (2, 4), (-2, 1)),
    "reflect pads 1, crops 2": ("reflect", (2, 4), (1, -2)),
    "reflect crops 4, pads 2": ("reflect", (2, 3), (-4, 2)),
    "replicate crops 2 of 1": ("replicate", (2, 1), (2, -2)),
    "replicate crops 5, pads 6": ("replicate", (2, 1), (-5, 6)),
}


@pytest.mark.parametrize("case", NEGATIVE_PADS.values(), ids=NEGATIVE_PADS)
def test_reflect_and_replicate_crop_then_read_the_input(backend: str, case: tuple) -> None:
    # PyTorch reads each output position at its own index into the uncropped input; tw
    # cropped first and refused pads wider than what was left.
    mode, shape, widths = case
    check(lambda F, x: F.pad(x, widths, mode=mode), randn(1, *shape))


@pytest.mark.parametrize(
    ("mode", "shape", "widths"),
    [("replicate", (1, 2, 3), (0, 0, -2, 0)), ("reflect", (1, 2, 3, 4), (0, 0, -3, 0, -2, 0))],
    ids=["replicate 2-D, one side empty", "reflect 3-D, two sides empty"],
)
def test_reflect_and_replicate_to_an_empty_side(
    backend: str, mode: str, shape: tuple, widths: tuple
) -> None:
    # PyTorch's output; its gradient there is uninitialised memory, tw's is zero.
    check(lambda F, x: F.pad(x, widths, mode=mode), randn(1, *shape), grad=())
    x = tw.tensor(randn(1, *shape), requires_grad=True)
    tw.nn.functional.pad(x, widths, mode=mode).sum().backward()
    assert not x.grad.numpy().any()


@pytest.mark.parametrize(
    ("mode", "widths"),
    [("replicate", (-3, 0, -2, 0)), ("reflect", (-3, 0, -2, 0)), ("reflect", (-1, -2))],
)
def test_reflect_and_replicate_to_nothing_raise(backend: str, mode: str, widths: tuple):
    raises_like_torch(lambda m, x: m.nn.functional.pad(x, widths, mode=mode), randn(1, 1, 2, 3))
