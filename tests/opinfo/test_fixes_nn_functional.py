"""Regression tests for what PyTorch's op database found in ``tw.nn.functional``: each case
failed before its fix; every answer is compared with torch 2.13 itself."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch
import torch.nn.functional as TF

_HALVES = [("numpy", torch.float16), ("torch:cpu", torch.float16), ("torch:cpu", torch.bfloat16)]


def _tw(t: torch.Tensor, device: str) -> tw.Tensor:
    dtype = getattr(tw, str(t.dtype).split(".")[1])
    return tw.tensor(
        t.to(torch.float64 if t.is_floating_point() else t.dtype).numpy(), device=device
    ).to(dtype)


def _np(t: tw.Tensor) -> np.ndarray:
    return np.asarray(t.double() if t.dtype in (tw.float16, tw.bfloat16) else t)


_NORMS = {
    # (function of the module F or TF, input, its parameters)
    "rms_norm": lambda M, x, w, b, rm, rv: M.rms_norm(x, (5, 3)),
    "rms_norm_weight": lambda M, x, w, b, rm, rv: M.rms_norm(x, (3,), w[:3]),
    "layer_norm": lambda M, x, w, b, rm, rv: M.layer_norm(x, (3,), w[:3], b[:3]),
    "group_norm": lambda M, x, w, b, rm, rv: M.group_norm(x, 3, w, b),
    "batch_norm_eval": lambda M, x, w, b, rm, rv: M.batch_norm(x, rm, rv, w, b, False),
}


@pytest.mark.parametrize("name", list(_NORMS))
@pytest.mark.parametrize(("device", "dtype"), _HALVES)
def test_half_normalizations_round_once_as_torch(name: str, device: str, dtype) -> None:
    # Before: squares of half inputs overflowed (rms_norm gave 0.0 where torch 1.6455) and
    # half statistics differed from torch's float32 ones by several units in the last place.
    torch.manual_seed(0)
    x = (torch.randn(4, 6, 5, 3) * 300).to(dtype)
    params = [torch.randn(6).to(dtype) for _ in range(3)] + [(torch.rand(6) + 0.5).to(dtype)]
    expected = _NORMS[name](TF, x, *params)
    got = _NORMS[name](F, _tw(x, device), *[_tw(p, device) for p in params])
    assert got.dtype.name == str(dtype).split(".")[1]
    np.testing.assert_array_equal(_np(got), expected.double().numpy())


@pytest.mark.parametrize(("device", "dtype"), _HALVES)
def test_half_batch_norm_training_updates_half_running_stats(device: str, dtype) -> None:
    torch.manual_seed(1)
    x = (torch.randn(5, 4, 3) * 20).to(dtype)
    rm, rv = torch.zeros(4, dtype=dtype), torch.ones(4, dtype=dtype)
    ours_rm, ours_rv = _tw(rm, device), _tw(rv, device)
    expected = TF.batch_norm(x, rm, rv, training=True)
    got = F.batch_norm(_tw(x, device), ours_rm, ours_rv, training=True)
    np.testing.assert_allclose(_np(got), expected.double().numpy(), rtol=0, atol=2e-2)
    np.testing.assert_allclose(_np(ours_rm), rm.double().numpy(), rtol=1e-2)
    np.testing.assert_allclose(_np(ours_rv), rv.double().numpy(), rtol=1e-2)


@pytest.mark.parametrize("name", ["softmin", "softmax", "log_softmax"])
def test_softmax_family_with_dtype_matches_torch_on_uint8(name: str) -> None:
    # Before: softmin cast to float64 and then negated; torch negates the uint8 input first
    # (so it wraps), then casts.
    x = torch.tensor([[3, 200, 7], [0, 1, 255]], dtype=torch.uint8)
    expected = getattr(TF, name)(x, 1, dtype=torch.float64)
    got = getattr(F, name)(tw.tensor(x.numpy()), 1, dtype=tw.float64)
    assert got.dtype is tw.float64
    np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_rms_norm_complex(dtype) -> None:
    # Before: KeyError 'complex128' looking up the default eps.
    torch.manual_seed(2)
    z = torch.randn(2, 3, dtype=dtype)
    expected = TF.rms_norm(z, (3,))
    got = F.rms_norm(tw.tensor(z.numpy()), (3,))
    np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-5)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_on_an_empty_1d_input(training: bool) -> None:
    # Before: IndexError (torch returns the empty input).
    stats = (None, None) if training else (torch.zeros(0), torch.ones(0))
    expected = TF.batch_norm(torch.zeros(0), *stats, training=training)
    ours = (None, None) if training else (tw.zeros(0), tw.ones(0))
    got = F.batch_norm(tw.zeros(0), *ours, training=training)
    assert tuple(got.shape) == tuple(expected.shape)
    with pytest.raises(IndexError):
        TF.batch_norm(torch.zeros(3), None, None, training=True)
    with pytest.raises(IndexError):
        F.batch_norm(tw.zeros(3), None, None, training=True)


@pytest.mark.parametrize("name", ["avg_pool2d", "max_pool2d"])
def test_pool_with_an_empty_stride_tuple_uses_the_kernel(name: str) -> None:
    # Before: avg_pool2d(..., stride=()) raised; torch reads () as the kernel size.
    x = torch.randn(1, 4, 6, dtype=torch.float64)
    expected = getattr(TF, name)(x, 2, stride=())
    got = getattr(F, name)(tw.tensor(x.numpy()), 2, stride=())
    np.testing.assert_allclose(np.asarray(got), expected.numpy())


@pytest.mark.parametrize("name", ["multi_margin_loss", "multilabel_margin_loss"])
def test_margin_losses_check_reduction_before_targets(name: str) -> None:
    # Before: a RuntimeError about the float targets; torch's ValueError names the reduction.
    x, t = torch.randn(3, 4), torch.randn(3, 4)
    with pytest.raises(ValueError, match="abc is not a valid value for reduction"):
        getattr(TF, name)(x, t, reduction="abc")
    with pytest.raises(ValueError, match="abc is not a valid value for reduction"):
        getattr(F, name)(tw.tensor(x.numpy()), tw.tensor(t.numpy()), reduction="abc")


@pytest.mark.parametrize("training", [False, True])
def test_feature_alpha_dropout_of_a_1d_input_without_a_mask(training: bool) -> None:
    # Before: RuntimeError in eval; torch checks the rank only where it draws a mask.
    x = torch.randn(5)
    p = 0.5 if not training else 0.0
    expected = TF.feature_alpha_dropout(x, p, training=training)
    got = F.feature_alpha_dropout(tw.tensor(x.numpy()), p, training=training)
    np.testing.assert_array_equal(np.asarray(got), expected.numpy())
    with pytest.raises(RuntimeError):
        TF.feature_alpha_dropout(x, 0.5, training=True)
    with pytest.raises(RuntimeError):
        F.feature_alpha_dropout(tw.tensor(x.numpy()), 0.5, training=True)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.complex128, torch.complex64])
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_distances_of_integer_and_complex_inputs(dtype, p: float) -> None:
    # Before: RuntimeError "expected floating-point inputs"; torch promotes through + eps.
    torch.manual_seed(4)
    a, b, c = ((torch.randn(3, 4) * 5).to(dtype) for _ in range(3))
    ours = [tw.tensor(t.numpy()) for t in (a, b, c)]
    for expected, got in (
        (TF.pairwise_distance(a, b, p), F.pairwise_distance(*ours[:2], p)),
        (TF.triplet_margin_loss(a, b, c, p=p), F.triplet_margin_loss(*ours, p=p)),
    ):
        assert got.dtype.name == str(expected.dtype).split(".")[1]
        np.testing.assert_allclose(np.asarray(got), expected.numpy(), rtol=1e-5)


def test_bilinear_keeps_int32() -> None:
    # Before: int64 (the sum over in2 widened); torch gives int32.
    torch.manual_seed(5)
    a = torch.randint(-3, 3, (2, 3), dtype=torch.int32)
    b = torch.randint(-3, 3, (2, 4), dtype=torch.int32)
    w = torch.randint(-3, 3, (5, 3, 4), dtype=torch.int32)
    expected = TF.bilinear(a, b, w)
    got = F.bilinear(*(tw.tensor(t.numpy()) for t in (a, b, w)))
    assert got.dtype is tw.int32
    np.testing.assert_array_equal(np.asarray(got), expected.numpy())


def test_hardshrink_writes_into_out() -> None:
    # Before: TypeError (no out= keyword); torch's F.hardshrink takes out= of the result's
    # dtype and returns it.
    x = torch.randn(2, 5)
    out = torch.empty(0)
    expected = TF.hardshrink(x, 0.3, out=out)
    ours_out = tw.empty(0)
    got = F.hardshrink(tw.tensor(x.numpy()), 0.3, out=ours_out)
    assert got is ours_out and expected is out
    np.testing.assert_array_equal(np.asarray(ours_out), out.numpy())
    with pytest.raises(RuntimeError):
        TF.hardshrink(x, out=torch.empty(0, dtype=torch.float64))
    with pytest.raises(RuntimeError):
        F.hardshrink(tw.tensor(x.numpy()), out=tw.empty(0, dtype=tw.float64))


_RESAMPLERS = {
    "bilinear": lambda M, x: M.interpolate(x, scale_factor=1.7, mode="bilinear"),
    "bicubic": lambda M, x: M.interpolate(x, size=(9, 7), mode="bicubic"),
    "area": lambda M, x: M.interpolate(x, size=(3, 4), mode="area"),
    "adaptive_avg_pool2d": lambda M, x: M.adaptive_avg_pool2d(x, (3, 4)),
}


@pytest.mark.parametrize("name", list(_RESAMPLERS))
@pytest.mark.parametrize(("device", "dtype"), _HALVES)
def test_half_resampling_is_as_accurate_as_torch(name: str, device: str, dtype) -> None:
    # Before: weighted sums in half precision, about twice torch's error against float64
    # (torch's CPU kernels sum in float32 and round once).
    torch.manual_seed(6)
    x = (torch.randn(2, 3, 5, 6) * 10).to(dtype)
    exact = _RESAMPLERS[name](TF, x.double()).numpy()
    torch_error = np.abs(_RESAMPLERS[name](TF, x).double().numpy() - exact).max()
    got = _RESAMPLERS[name](F, _tw(x, device))
    assert got.dtype.name == str(dtype).split(".")[1]
    assert np.abs(_np(got) - exact).max() <= torch_error * 1.01


@pytest.mark.parametrize(
    ("name", "shape", "size"),
    [
        ("adaptive_avg_pool2d", (2, 2), (1, 1)),
        ("adaptive_max_pool2d", (2, 2), (1, 1)),
        ("adaptive_avg_pool3d", (2, 2, 2), (1, 1, 1)),
        ("adaptive_max_pool3d", (2, 2, 2), (1, 1, 1)),
        ("adaptive_avg_pool2d", (3,), 2),
    ],
)
def test_adaptive_pools_on_too_few_dims_raise_torch_class(name: str, shape, size) -> None:
    # Before: RuntimeError where torch's Python wrapper raises ValueError (a listed
    # output_size with no more input dims than it has entries).
    x = torch.randn(*shape)
    with pytest.raises(Exception) as theirs:
        getattr(TF, name)(x, size)
    with pytest.raises(theirs.type):
        getattr(F, name)(tw.tensor(x.numpy()), size)


@pytest.mark.parametrize("name", ["conv1d", "conv_transpose1d"])
@pytest.mark.parametrize("complex_input", [False, True])
def test_conv_of_complex_and_real_operands_raises_runtime_error(name, complex_input) -> None:
    # Before: NumPy's UFuncTypeError for a real input with a complex weight and bias.
    x = torch.randn(1, 1, 4, dtype=torch.float64)
    w = torch.randn(1, 1, 2, dtype=torch.complex128)
    b = torch.randn(1, dtype=torch.complex128)
    if complex_input:
        x, w, b = x.to(torch.complex128), w.real.contiguous(), b.real.contiguous()
    with pytest.raises(RuntimeError):
        getattr(TF, name)(x, w, b)
    with pytest.raises(RuntimeError):
        getattr(F, name)(*(tw.tensor(t.numpy()) for t in (x, w, b)))


def test_multi_margin_loss_checks_the_weight_rank_before_the_targets() -> None:
    # Before: RuntimeError about the float targets; torch's ValueError names the weight.
    x, t, w = torch.randn(3, 4), torch.randn(3), torch.randn(2, 4)
    with pytest.raises(ValueError, match="weight must be one-dimensional"):
        TF.multi_margin_loss(x, t, weight=w)
    with pytest.raises(ValueError, match="weight must be one-dimensional"):
        F.multi_margin_loss(*(tw.tensor(a.numpy()) for a in (x, t)), weight=tw.tensor(w.numpy()))
