"""Snippets a demanding PyTorch user writes with torch.nn (interpolate, pad, pools, unfold,
losses, recurrent layers, attention, transformers, embeddings, norms and the Module API), run
on torch 2.13 and on tensorweaver with only the import changed (``fn(torch)`` and ``fn(tw)``),
on every backend.

The named tests below each failed before the twentieth session's fixes; the sweep-like tests
keep corners of that hunt that matched, so that they keep matching.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from test_user_hunt_session18 import (
    CUNUMERIC,
    _check,
    _check_raises,
    _check_warns,
    _warned,
    _weights,
)
from tw_backends import FAST, entered


@pytest.fixture(params=[*FAST, *CUNUMERIC])
def spec(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=FAST)
def fast(request: pytest.FixtureRequest) -> str:
    """The fast backends only: the corners that matched are many and cost more there."""
    return request.param


_RNG = np.random.default_rng(20)
_SEQ = _RNG.standard_normal((5, 3, 4))
_IMG = _RNG.standard_normal((2, 3, 7, 8))
_VOL = _RNG.standard_normal((1, 2, 3, 4, 5))


# -- divergences: exception classes ---------------------------------------------------------


# before: from_pretrained on a 1-D or 3-D tensor raised ValueError; PyTorch's assert raises
# AssertionError ("Embeddings parameter is expected to be 2-dimensional")
@pytest.mark.parametrize("cls", ["Embedding", "EmbeddingBag"])
@pytest.mark.parametrize("shape", [(3,), (2, 3, 4)])
def test_from_pretrained_refuses_other_than_2d_as_torch(spec: str, cls: str, shape: tuple) -> None:
    with pytest.raises(AssertionError):
        getattr(torch.nn, cls).from_pretrained(torch.ones(*shape))
    with entered(spec), pytest.raises(AssertionError, match="2-D"):
        getattr(tw.nn, cls).from_pretrained(tw.ones(*shape))


# before: a 1-D adaptive pool took None as "keep the length"; PyTorch's 1-D signature takes
# ints only and raises TypeError (None is kept only by the 2-D and 3-D pools)
@pytest.mark.parametrize("name", ["adaptive_avg_pool1d", "adaptive_max_pool1d"])
@pytest.mark.parametrize("size", [None, (None,)], ids=["None", "tuple_None"])
def test_adaptive_pool1d_refuses_none(spec: str, name: str, size: Any) -> None:
    _check_raises(spec, lambda m: getattr(m.nn.functional, name)(m.ones(1, 2, 5), size))


def test_adaptive_pool1d_module_refuses_none(spec: str) -> None:
    _check_raises(spec, lambda m: m.nn.AdaptiveAvgPool1d((None,))(m.ones(1, 2, 5)))


# before: mse_loss of two integer (or bool) tensors raised RuntimeError from mean(), or
# with reduction='none' returned integers; PyTorch's kernel raises NotImplementedError
@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_mse_loss_of_integers_is_not_implemented(spec: str, dtype: str, reduction: str) -> None:
    def fn(m: Any) -> Any:
        x = m.tensor([1, 0, 1]).to(getattr(m, dtype))
        return m.nn.functional.mse_loss(x, x, reduction=reduction)

    _check_raises(spec, fn)


# before: kl_div computed a loss for integer or bool input or target; PyTorch raises
# RuntimeError ("Integral inputs not supported"), after its warning about 'mean'
@pytest.mark.parametrize("integral", ["input", "target"])
def test_kl_div_refuses_integers(spec: str, integral: str) -> None:
    def fn(m: Any) -> Any:
        x, y = m.full((3,), 0.5, dtype=m.float64), m.tensor([1, 0, 1])
        args = (y, x) if integral == "input" else (x, y)
        return m.nn.functional.kl_div(*args, reduction="sum")

    _check_raises(spec, fn)


# before: binary_cross_entropy_with_logits took an integer target; PyTorch cannot write the
# loss into it and raises RuntimeError
@pytest.mark.parametrize("dtype", ["int64", "uint8", "bool"])
def test_bce_with_logits_refuses_integer_targets(spec: str, dtype: str) -> None:
    def fn(m: Any) -> Any:
        target = m.tensor([1, 0, 1]).to(getattr(m, dtype))
        return m.nn.functional.binary_cross_entropy_with_logits(m.zeros(3), target)

    _check_raises(spec, fn)


def _loss_and_grad(name: str, x_dtype: str, target: Any, reduction: str) -> Callable:
    def fn(m: Any) -> Any:
        x = m.tensor([0.5, -0.25, 0.7], dtype=getattr(m, x_dtype), requires_grad=True)
        y = getattr(m.nn.functional, name)(x, target(m), reduction=reduction)
        y.sum().backward()
        return y, x.grad

    return fn


# before: a bool target (a mask used as 0/1 targets) raised "Subtraction ... with a bool
# tensor is not supported"; PyTorch's fused kernels take it as 0.0/1.0
@pytest.mark.parametrize("name", ["mse_loss", "smooth_l1_loss"])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_bool_targets_count_as_numbers(spec: str, name: str, reduction: str) -> None:
    def target(m: Any) -> Any:
        return m.tensor([True, False, True])

    _check(spec, _loss_and_grad(name, "float64", target, reduction))


# before: the loss came out in the promoted type (float64); PyTorch's kernels write it in the
# target's type for binary_cross_entropy_with_logits and in the input's for soft_margin_loss
@pytest.mark.parametrize(
    ("name", "x_dtype", "t_dtype"),
    [
        ("binary_cross_entropy_with_logits", "float64", "float32"),
        ("binary_cross_entropy_with_logits", "float32", "float64"),
        ("soft_margin_loss", "float32", "float64"),
        ("soft_margin_loss", "float64", "float32"),
    ],
)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_mixed_precision_loss_dtype(
    spec: str, name: str, x_dtype: str, t_dtype: str, reduction: str
) -> None:
    def target(m: Any) -> Any:
        return m.tensor([1.0, 0.0, 1.0] if "entropy" in name else [1.0, -1.0, 1.0]).to(
            getattr(m, t_dtype)
        )

    _check(spec, _loss_and_grad(name, x_dtype, target, reduction))


# before: unfold and fold computed integer columns; PyTorch's im2col/col2im kernels have no
# integer form and raise NotImplementedError (bool, half and complex are taken)
@pytest.mark.parametrize("dtype", ["int64", "uint8", "int32"])
@pytest.mark.parametrize("op", ["unfold", "fold"])
def test_unfold_fold_refuse_integers(spec: str, dtype: str, op: str) -> None:
    def fn(m: Any) -> Any:
        F = m.nn.functional
        if op == "unfold":
            return F.unfold(m.ones(1, 2, 4, 4).to(getattr(m, dtype)), 2)
        return F.fold(m.ones(1, 8, 9).to(getattr(m, dtype)), (4, 4), 2)

    _check_raises(spec, fn)


def test_unfold_takes_bool(fast: str) -> None:
    _check(fast, lambda m: m.nn.functional.unfold(m.tensor(_IMG > 0), (2, 3), stride=2))


# before: max pooling took bool input, and 1-D max pooling of integers without indices; PyTorch
# has no such kernels and raises NotImplementedError (integers with indices, or 2-D/3-D, work)
@pytest.mark.parametrize(
    ("nd", "dtype", "indices"),
    [(1, "int64", False), (1, "uint8", False), (1, "bool", True), (2, "bool", False)]
    + [(3, "bool", True)],
)
def test_max_pool_refuses_what_torch_has_no_kernel_for(
    spec: str, nd: int, dtype: str, indices: bool
) -> None:
    def fn(m: Any) -> Any:
        x = m.arange(4**nd).reshape((1, 1) + (4,) * nd).to(getattr(m, dtype))
        return getattr(m.nn.functional, f"max_pool{nd}d")(x, 2, return_indices=indices)

    _check_raises(spec, fn)


@pytest.mark.parametrize(("nd", "indices"), [(1, True), (2, False), (3, False), (2, True)])
def test_max_pool_of_integers_where_torch_has_kernels(fast: str, nd: int, indices: bool) -> None:
    def fn(m: Any) -> Any:
        x = m.arange(4**nd).reshape((1, 1) + (4,) * nd).flip(-1)
        return getattr(m.nn.functional, f"max_pool{nd}d")(x, 2, return_indices=indices)

    _check(fast, fn)


# before: F.pad took float (and bool) widths; PyTorch's signature takes ints only (TypeError)
@pytest.mark.parametrize("widths", [(1.0, 1.0), (1, 1.5), (True, 1)], ids=["float", "half", "bool"])
def test_pad_refuses_widths_that_are_not_ints(spec: str, widths: tuple) -> None:
    _check_raises(spec, lambda m: m.nn.functional.pad(m.ones(1, 2, 3), widths))


def test_pad_refuses_a_tensor_of_widths(spec: str) -> None:
    _check_raises(spec, lambda m: m.nn.functional.pad(m.ones(1, 2, 3), m.tensor([1, 1])))


def test_pad_takes_integer_scalars(fast: str) -> None:
    def fn(m: Any) -> Any:
        return m.nn.functional.pad(m.ones(1, 2, 3), (m.tensor(1), np.int32(2), 0, 1))

    _check(fast, fn)


# before: interpolate took float sizes (truncating them); PyTorch's signature takes ints only
@pytest.mark.parametrize("size", [2.0, (2.0, 3), 2.5], ids=["float", "pair", "fraction"])
def test_interpolate_refuses_float_sizes(spec: str, size: Any) -> None:
    _check_raises(spec, lambda m: m.nn.functional.interpolate(m.ones(1, 2, 4, 4), size=size))


# before: interpolate of an input without channels gave an empty result; PyTorch's kernels
# refuse it ("Non-empty 4D data tensor expected") except in area mode (an empty batch is fine)
@pytest.mark.parametrize(
    ("shape", "mode"),
    [((1, 0, 4, 4), "bilinear"), ((1, 0, 4, 4), "nearest"), ((1, 0, 4), "linear")]
    + [((1, 0, 2, 2, 2), "trilinear")],
)
def test_interpolate_refuses_no_channels(spec: str, shape: tuple, mode: str) -> None:
    def fn(m: Any) -> Any:
        return m.nn.functional.interpolate(m.ones(*shape), size=(3,) * (len(shape) - 2), mode=mode)

    _check_raises(spec, fn)


@pytest.mark.parametrize(("shape", "mode"), [((1, 0, 4, 4), "area"), ((0, 2, 4, 4), "bilinear")])
def test_interpolate_of_empty_inputs_torch_takes(fast: str, shape: tuple, mode: str) -> None:
    _check(fast, lambda m: m.nn.functional.interpolate(m.ones(*shape), size=(3, 5), mode=mode))


# -- divergences: warnings ------------------------------------------------------------------


# before: a full backward hook (or pre-hook) on a module none of whose inputs requires grad
# ran silently; PyTorch warns (UserWarning) that grad_input is then all None
@pytest.mark.parametrize("kind", ["hook", "pre_hook"])
def test_full_backward_hook_without_input_grads_warns(spec: str, kind: str) -> None:
    def fn(m: Any) -> None:
        layer = m.nn.Linear(3, 2)
        if kind == "hook":
            layer.register_full_backward_hook(lambda mod, gi, go: None)
        else:
            layer.register_full_backward_pre_hook(lambda mod, go: None)
        layer(m.ones(2, 3)).sum().backward()

    _check_warns(spec, fn)


def test_full_backward_hook_with_input_grads_is_silent(spec: str) -> None:
    def fn(m: Any) -> list[str]:
        layer = m.nn.Linear(3, 2)
        layer.register_full_backward_hook(lambda mod, gi, go: None)
        x = m.ones(2, 3, requires_grad=True)
        return _warned(lambda: layer(x).sum().backward())

    _check(spec, fn)


# -- corners of the hunt that matched ---------------------------------------------------------


def _value_and_grad(fn: Callable[[Any, Any], Any], data: np.ndarray) -> Callable[[Any], Any]:
    def run(m: Any) -> Any:
        x = m.tensor(data, dtype=m.float64, requires_grad=True)
        y = fn(m, x)
        (y[0] if isinstance(y, tuple) else y).pow(2).sum().backward()
        return y, x.grad

    return run


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mode": "bicubic", "scale_factor": 0.6, "align_corners": True},
        {"mode": "bilinear", "size": (4, 11), "antialias": True},
        {"mode": "area", "scale_factor": 1.7, "recompute_scale_factor": True},
        {"mode": "nearest-exact", "scale_factor": (1.3, 0.7)},
    ],
    ids=["bicubic_ac", "antialias", "area_recompute", "nearest_exact"],
)
def test_interpolate_modes(fast: str, kwargs: dict) -> None:
    _check(fast, _value_and_grad(lambda m, x: m.nn.functional.interpolate(x, **kwargs), _IMG))


def test_trilinear_interpolate(fast: str) -> None:
    def fn(m: Any, x: Any) -> Any:
        return m.nn.functional.interpolate(x, scale_factor=1.5, mode="trilinear")

    _check(fast, _value_and_grad(fn, _VOL))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_with_negative_pads(fast: str, mode: str) -> None:
    def fn(m: Any, x: Any) -> Any:
        return m.nn.functional.pad(x, (-1, 2, 2, -1), mode=mode)

    _check(fast, _value_and_grad(fn, _IMG))


def test_reflect_pad_as_wide_as_the_input_raises(fast: str) -> None:
    _check_raises(fast, lambda m: m.nn.functional.pad(m.ones(1, 2, 7), (7, 0), mode="reflect"))


def test_max_pool_ceil_dilation_indices(fast: str) -> None:
    def fn(m: Any, x: Any) -> Any:
        return m.nn.functional.max_pool2d(x, 3, 2, 1, 2, ceil_mode=True, return_indices=True)

    _check(fast, _value_and_grad(fn, _IMG))


def test_max_unpool_to_the_input_size(fast: str) -> None:
    def fn(m: Any, x: Any) -> Any:
        F = m.nn.functional
        y, i = F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
        return F.max_unpool2d(y, i, 3, 2, 1, output_size=x.shape[-2:]), i

    _check(fast, _value_and_grad(fn, _IMG))


def test_fold_of_unfold(fast: str) -> None:
    def fn(m: Any, x: Any) -> Any:
        cols = m.nn.functional.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(2, 3))
        return m.nn.functional.fold(cols, (7, 8), (2, 3), (2, 1), 1, (2, 3))

    _check(fast, _value_and_grad(fn, _IMG))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_weight_ignore_index_smoothing(fast: str, reduction: str) -> None:
    target = np.array([1, -100, 2, 0, 3, 2])

    def fn(m: Any, x: Any) -> Any:
        weight = m.tensor([0.5, 1.0, 2.0, 0.3], dtype=m.float64)
        return m.nn.functional.cross_entropy(
            x, m.tensor(target), weight, reduction=reduction, label_smoothing=0.2
        )

    _check(fast, _value_and_grad(fn, _RNG.standard_normal((6, 4))))


def test_ctc_loss_zero_infinity(fast: str) -> None:
    log_probs = np.log(np.random.default_rng(5).dirichlet(np.ones(5), (8, 2)))

    def fn(m: Any, x: Any) -> Any:
        targets = m.tensor([[1, 2, 2], [3, 1, 0]])
        return m.nn.functional.ctc_loss(
            x, targets, m.tensor([2, 6]), m.tensor([3, 2]), reduction="none", zero_infinity=True
        )

    _check(fast, _value_and_grad(fn, log_probs))


def test_packed_bidirectional_lstm_round_trip(fast: str) -> None:
    def fn(m: Any) -> Any:
        rnn = m.nn.utils.rnn
        lstm = _weights(m.nn.LSTM(4, 6, 2, bidirectional=True, dtype=m.float64), m)
        x = m.tensor(_SEQ, dtype=m.float64, requires_grad=True)
        packed = rnn.pack_padded_sequence(x, m.tensor([5, 2, 4]), enforce_sorted=False)
        out, (h, c) = lstm(packed)
        padded, lengths = rnn.pad_packed_sequence(out, padding_value=-1.0, total_length=6)
        (padded.pow(2).sum() + h.sum() + c.sum()).backward()
        return padded, lengths, h, c, x.grad, packed.sorted_indices

    _check(fast, fn)


def test_multihead_attention_masks_bias_kv_zero_attn(fast: str) -> None:
    q, k = _RNG.standard_normal((2, 4, 8)), _RNG.standard_normal((2, 5, 8))
    padding = np.array([[False, False, True, False, True], [False] * 4 + [True]])

    def fn(m: Any) -> Any:
        mha = m.nn.MultiheadAttention(
            8, 2, batch_first=True, add_bias_kv=True, add_zero_attn=True, dtype=m.float64
        )
        _weights(mha, m)
        query = m.tensor(q, dtype=m.float64, requires_grad=True)
        key = m.tensor(k, dtype=m.float64)
        out, weights = mha(
            query, key, key, key_padding_mask=m.tensor(padding), average_attn_weights=False
        )
        out.pow(2).sum().backward()
        return out, weights, query.grad

    _check(fast, fn)


def test_norm_first_decoder_with_causal_mask(fast: str) -> None:
    tgt, memory = _RNG.standard_normal((2, 4, 8)), _RNG.standard_normal((2, 5, 8))

    def fn(m: Any) -> Any:
        layer = m.nn.TransformerDecoderLayer(
            8, 2, 16, 0.0, "gelu", batch_first=True, norm_first=True, dtype=m.float64
        )
        decoder = _weights(m.nn.TransformerDecoder(layer, 2), m)
        x = m.tensor(tgt, dtype=m.float64, requires_grad=True)
        mask = m.nn.Transformer.generate_square_subsequent_mask(4, dtype=m.float64)
        y = decoder(x, m.tensor(memory, dtype=m.float64), tgt_mask=mask, tgt_is_causal=True)
        y.pow(2).sum().backward()
        return y, x.grad

    _check(fast, fn)


def test_embedding_max_norm_renormalises_the_weight(fast: str) -> None:
    def fn(m: Any) -> Any:
        emb = _weights(m.nn.Embedding(5, 3, padding_idx=1, max_norm=0.3, dtype=m.float64), m)
        y = emb(m.tensor([[1, 3, 3, 0], [2, 1, 1, 1]]))
        y.pow(2).sum().backward()
        return y, emb.weight.detach(), emb.weight.grad

    _check(fast, fn)


@pytest.mark.parametrize("kwargs", [{"momentum": None}, {"track_running_stats": False}])
def test_batch_norm_running_stats_then_eval_batch_of_one(fast: str, kwargs: dict) -> None:
    def fn(m: Any) -> Any:
        bn = _weights(m.nn.BatchNorm2d(3, dtype=m.float64, **kwargs), m)
        outs = [bn(m.tensor(_IMG * (i + 1), dtype=m.float64)) for i in range(2)]
        bn.eval()
        return outs, bn(m.tensor(_IMG[:1], dtype=m.float64)), list(bn.state_dict().values())

    _check(fast, fn)


def test_load_state_dict_reports_missing_and_unexpected(fast: str) -> None:
    def fn(m: Any) -> Any:
        net = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.BatchNorm1d(4))
        net.register_buffer("scratch", m.zeros(1), persistent=False)
        state = dict(net.state_dict())
        del state["0.bias"]
        state["extra"] = m.ones(1)
        result = net.load_state_dict(state, strict=False)
        return list(result.missing_keys), list(result.unexpected_keys), list(net.state_dict())

    _check(fast, fn)


def test_container_editing_and_reprs(fast: str) -> None:
    def fn(m: Any) -> Any:
        seq = m.nn.Sequential(m.nn.Linear(2, 2), m.nn.ReLU(), m.nn.Linear(2, 3))
        seq.insert(1, m.nn.Sigmoid())
        seq.extend([m.nn.ELU(alpha=0.5)])
        del seq[0]
        modules = m.nn.ModuleList([m.nn.ReLU(), m.nn.Tanh(), m.nn.GELU(approximate="tanh")])
        return repr(seq), repr(seq[1:]), repr(modules[::2]), [n for n, _ in seq.named_modules()]

    _check(fast, fn)
