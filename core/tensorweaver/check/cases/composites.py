"""Composites, each through its public function: the device's fused kernel when it has one
(else the core's decomposition on the device's primitives) against the core's decomposition
on NumPy in float64, outputs and gradients; then again with the inputs and the gradients
backward starts from as transposed, stepped and broadcast views, and on an empty batch
(PyTorch defines every composite there: outputs and input gradients with no elements,
a mean over no targets NaN, parameter gradients zero). A failure names
``fused_<name>`` or ``fused_<name>_backward`` when the device fuses the composite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver.check import trial
from tensorweaver.check.case import Case, Measure, Skip
from tensorweaver.check.context import Context
from tensorweaver.check.trial import Maker
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType
from tensorweaver.contract.ir import COMPOSITES

Forward = Callable[[], Any]


def _cross_entropy(m: Maker) -> Forward:
    x = m.input("x", m.batch(5), 4, low=-3, high=3)
    target = tw.tensor([0, 3, -100, 1, 3], device=x)[: m.batch(5)]
    return lambda: (F.cross_entropy(x, target), F.cross_entropy(x[1:], target[1:] % 4))


def _cross_entropy_nd(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 3, 4, 5, low=-3, high=3)
    target = tw.tensor([[[0, 2, -100, 1, 2]] * 4, [[1, 1, 0, -100, 2]] * 4], device=x)
    target = target[: m.batch(2)]
    return lambda: (F.cross_entropy(x, target), F.cross_entropy(x[:, :, 0], target[:, 0] % 3))


def _rnn(m: Maker) -> Forward:
    from tensorweaver.nn.modules.rnn import rnn_reference
    from tensorweaver.ops.composite import fused_or_reference

    x = m.input("x", 4, m.batch(2), 3, low=-1, high=1)
    states = [m.input(name, 2, m.batch(2), 5, low=-1, high=1) for name in ("h0", "c0")]
    lstm = [  # one layer, two directions: (w_ih, w_hh, b_ih, b_hh) each
        m.input(f"lstm_{name}_{d}", *shape, low=-0.5, high=0.5)
        for d in range(2)
        for name, shape in (("w_ih", (20, 3)), ("w_hh", (20, 5)), ("b_ih", (20,)), ("b_hh", (20,)))
    ]
    gru = [m.input(f"gru_{name}", *shape, low=-0.5, high=0.5)
           for name, shape in (("w_ih", (15, 3)), ("w_hh", (15, 5)))]  # fmt: skip

    def run() -> tuple:
        packed_lstm = fused_or_reference(
            "rnn", rnn_reference, (x, *states, *lstm), "LSTM", 1, True, True, 0.0, False
        )
        packed_gru = fused_or_reference(
            "rnn", rnn_reference, (x, states[0][:1], *gru), "GRU", 1, False, False, 0.0, False
        )
        return packed_lstm, packed_gru

    return run


def _rnn_packed(m: Maker) -> Forward:
    from tensorweaver.nn.modules.rnn import rnn_packed_reference
    from tensorweaver.ops.composite import fused_or_reference

    if m.layout == "empty":
        raise Skip("composite/rnn_packed has no empty batch: PyTorch packs none")
    # Lengths 4, 3, 3, 1 (LSTM) and 3, 2, 1 (GRU, on the first rows).
    lstm_sizes, gru_sizes = (4, 3, 3, 1), (3, 2, 1)
    x = m.input("x", sum(lstm_sizes), 3, low=-1, high=1)
    states = [m.input(name, 4, 4, 5, low=-1, high=1) for name in ("h0", "c0")]
    lstm = [  # two layers, two directions: (w_ih, w_hh, b_ih, b_hh) each
        m.input(f"lstm_{name}_{layer}_{d}", *shape, low=-0.5, high=0.5)
        for layer in range(2)
        for d in range(2)
        for name, shape in (
            ("w_ih", (20, 3 if layer == 0 else 10)),
            ("w_hh", (20, 5)),
            ("b_ih", (20,)),
            ("b_hh", (20,)),
        )
    ]
    gru = [m.input(f"gru_{name}", *shape, low=-0.5, high=0.5)
           for name, shape in (("w_ih", (15, 3)), ("w_hh", (15, 5)))]  # fmt: skip

    def run() -> tuple:
        packed_lstm = fused_or_reference(
            "rnn_packed",
            rnn_packed_reference,
            (x, *states, *lstm),
            lstm_sizes,
            "LSTM",
            2,
            True,
            True,
            0.0,
            False,
        )
        packed_gru = fused_or_reference(
            "rnn_packed",
            rnn_packed_reference,
            (x[: sum(gru_sizes)], states[0][:1, :3], *gru),
            gru_sizes,
            "GRU",
            1,
            False,
            False,
            0.0,
            False,
        )
        return packed_lstm, packed_gru

    return run


def _dropout(m: Maker) -> Forward:
    x = m.input("x", m.batch(6), 7, low=0.5, high=2.0)  # no zeros: a zero output means dropped

    def run() -> tuple:
        y = F.dropout(x, 0.3)
        scaled = x / 0.7
        (g,) = tw.autograd.grad(y.sum(), x)
        # Random, so checked for what it must be: every element dropped or scaled, and the
        # gradient the same keep-and-scale factor as the forward used.
        dropped_or_scaled = (y == 0) | ((y - scaled).abs() <= 1e-3 * scaled)
        gradient_agrees = (g * x - y).abs() <= 1e-3 * scaled
        return (dropped_or_scaled & gradient_agrees).all(), x * 2.0

    return run


def _embedding(m: Maker) -> Forward:
    w = m.input("w", 6, 3)
    indices = tw.tensor([[1, 4, 4], [0, 5, 1]], device=w)[: m.batch(2)]
    # padding_idx cuts a gradient on purpose (no true derivative): tests/nn_functional has it.
    return lambda: (F.embedding(indices, w), F.embedding(indices[:, 1], w * 2.0))


def _relu(m: Maker) -> Forward:
    x = m.input("x", m.batch(3), 5, low=-2, high=2)
    return lambda: (F.relu(x), F.relu(x[:, 1:] * 2.0))


def _linear(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 3, 4)
    w = m.input("w", 5, 4)
    b = m.input("b", 5)
    # the backward needs no input gradient
    constant = m.input("constant", m.batch(3), 4, grad=False)
    return lambda: (F.linear(x, w, b), F.linear(constant, w, b))


def _softmax(m: Maker) -> Forward:
    x = m.input("x", m.batch(3), 5, low=-3, high=3)
    return lambda: (F.softmax(x, dim=-1), F.softmax(x, dim=0))


def _log_softmax(m: Maker) -> Forward:
    x = m.input("x", m.batch(3), 5, low=-3, high=3)
    return lambda: (F.log_softmax(x, dim=1), F.log_softmax(x, dim=-2))


def _conv2d(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 4, 7, 6)
    w = m.input("w", 6, 2, 3, 3)
    b = m.input("b", 6)
    constant = m.input("constant", 1, 2, 3, 3, grad=False)  # only the input's gradient needed
    return lambda: (
        F.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
        F.conv2d(x, w[:, :, :2], b, padding=1, groups=2),
        F.conv2d(x[:, :2], constant),
    )


def _max_pool2d(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 3, 7, 6)
    return lambda: (
        F.max_pool2d(x, kernel_size=(3, 2), stride=2, padding=1),
        F.max_pool2d(x, kernel_size=2),
    )


def _layer_norm(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 3, 4, low=-2, high=2)
    w = m.input("w", 4, low=0.5, high=2)
    b = m.input("b", 4)
    return lambda: (
        F.layer_norm(x, (3, 4)),
        F.layer_norm(x, (4,), w, b, eps=1e-3),
        F.layer_norm(x, (4,), None, b),
    )


def _attention(m: Maker) -> Forward:
    q = m.input("q", m.batch(2), 2, 3, 4)
    k = m.input("k", m.batch(2), 2, 5, 4)
    v = m.input("v", m.batch(2), 2, 5, 3)
    sdpa = F.scaled_dot_product_attention
    return lambda: (sdpa(q, k, v), sdpa(q, k[:, :, :3], v[:, :, :3], is_causal=True, scale=0.7))


def _conv3d(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 4, 5, 4, 6)
    w = m.input("w", 6, 2, 2, 3, 2)
    b = m.input("b", 6)
    return lambda: (
        F.conv3d(x, w, b, stride=(1, 2, 2), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2),
        F.conv3d(x[:, :2], w[:2], padding="same"),
    )


def _conv_transpose(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 4, 3, 5)
    w = m.input("w", 4, 3, 3, 2)
    b = m.input("b", 6)
    x3 = m.input("x3", m.batch(1), 2, 3, 2, 3)
    w3 = m.input("w3", 2, 2, 2, 3, 2)
    return lambda: (
        F.conv_transpose2d(
            x, w, b, stride=(2, 3), padding=(1, 0), output_padding=(1, 2), groups=2, dilation=(1, 2)
        ),  # fmt: skip
        F.conv_transpose1d(x[:, :, 0], w[:, :, 0], stride=2, output_padding=1),
        F.conv_transpose3d(x3, w3, stride=2, padding=1, dilation=(1, 2, 1)),
    )


def _interpolate(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 3, 5, 7)
    x1 = m.input("x1", m.batch(2), 3, 6)
    x3 = m.input("x3", m.batch(1), 2, 3, 4, 3)
    up = F.interpolate
    return lambda: (
        up(x, size=(8, 4), mode="bilinear"),
        up(x, scale_factor=1.7, mode="bicubic", align_corners=True),
        up(x, size=(3, 4), mode="bicubic", antialias=True),
        up(x, scale_factor=0.6, mode="bilinear", align_corners=True, antialias=True),
        up(x, scale_factor=(2.3, 0.6), mode="nearest"),
        up(x, size=(3, 9), mode="area"),
        up(x1, size=11, mode="linear"),
        up(x1, scale_factor=1.5, mode="nearest-exact"),
        up(x3, size=(5, 2, 4), mode="trilinear", align_corners=True),
    )


def _grid_sample(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 3, 5, 6)
    # Away from pixel edges: there the gradient with respect to the grid jumps.
    grid = m.input("grid", m.batch(2), 4, 3, 2, low=-1.2, high=1.2)
    x3 = m.input("x3", m.batch(1), 2, 3, 4, 3)
    grid3 = m.input("grid3", m.batch(1), 2, 3, 2, 3, low=-0.9, high=0.9)
    sample = F.grid_sample
    return lambda: (
        sample(x, grid, align_corners=False),
        sample(x, grid, mode="bicubic", padding_mode="border", align_corners=True),
        sample(x, grid, padding_mode="reflection"),
        sample(x3, grid3, padding_mode="border"),
    )


def _ctc_loss(m: Maker) -> Forward:
    if m.layout == "empty":
        raise Skip("composite/ctc_loss has no empty batch: PyTorch refuses empty log_probs")
    # Through log_softmax: CTC's gradient (PyTorch's) is the true derivative only there.
    x = m.input("x", 6, 3, 5, low=-2, high=2)
    targets = tw.tensor([[1, 2, 2], [3, 0, 0], [4, 4, 1]], device=x)
    inputs, lengths = tw.tensor([6, 5, 6], device=x), tw.tensor([3, 1, 3], device=x)
    return lambda: F.ctc_loss(x.log_softmax(2), targets, inputs, lengths, reduction="none")


def _max_pool(m: Maker) -> Forward:
    x1 = m.input("x1", m.batch(2), 3, 9)
    x = m.input("x", m.batch(2), 3, 7, 6)
    x3 = m.input("x3", m.batch(1), 2, 5, 4, 6)
    return lambda: (
        F.max_pool1d(x1, 3, stride=2, padding=1, dilation=2, ceil_mode=True),
        F.max_pool2d(x, 2, ceil_mode=True),  # the last row's windows overhang
        F.max_pool2d(x, (3, 2), stride=(1, 2), padding=(1, 0), dilation=(2, 1)),
        F.max_pool3d(x3, (2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0), dilation=(2, 1, 1)),
    )


def _max_pool_with_indices(m: Maker) -> Forward:
    # The indices (int64, no gradient) are compared exactly with the decomposition's.
    x1 = m.input("x1", m.batch(2), 3, 9)
    x = m.input("x", m.batch(2), 3, 7, 6)
    x3 = m.input("x3", m.batch(1), 2, 5, 4, 6)
    return lambda: (
        *F.max_pool1d(x1, 3, stride=2, padding=1, dilation=2, ceil_mode=True, return_indices=True),
        *F.max_pool2d(x, 2, ceil_mode=True, return_indices=True),
        *F.max_pool2d(
            x, (3, 2), stride=(1, 2), padding=(1, 0), dilation=(2, 1), return_indices=True
        ),
        *F.max_pool3d(
            x3,
            (2, 3, 2),
            stride=(1, 2, 2),
            padding=(1, 1, 0),
            dilation=(2, 1, 1),
            return_indices=True,
        ),
    )


def _avg_pool(m: Maker) -> Forward:
    x1 = m.input("x1", m.batch(2), 3, 9)
    x = m.input("x", m.batch(2), 3, 7, 6)
    x3 = m.input("x3", m.batch(1), 2, 5, 4, 6)
    return lambda: (
        F.avg_pool1d(x1, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
        F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
        F.avg_pool2d(x, (2, 3), divisor_override=4),
        F.avg_pool3d(x3, 2, stride=(1, 2, 2), padding=1, count_include_pad=False),
    )


def _adaptive_avg_pool(m: Maker) -> Forward:
    x1 = m.input("x1", m.batch(2), 3, 9)
    x = m.input("x", m.batch(2), 3, 7, 6)
    x3 = m.input("x3", m.batch(1), 2, 5, 4, 6)
    return lambda: (
        F.adaptive_avg_pool1d(x1, 4),
        F.adaptive_avg_pool2d(x, (3, 4)),
        F.adaptive_avg_pool3d(x3, (2, None, 4)),
    )


def _adaptive_max_pool(m: Maker) -> Forward:
    x1 = m.input("x1", m.batch(2), 3, 9)
    x = m.input("x", m.batch(2), 3, 7, 6)
    x3 = m.input("x3", m.batch(1), 2, 5, 4, 6)
    return lambda: (
        F.adaptive_max_pool1d(x1, 4),
        F.adaptive_max_pool2d(x, (3, 4)),
        F.adaptive_max_pool3d(x3, (2, None, 4)),
    )


def _instance_norm(m: Maker) -> Forward:
    x = m.input("x", m.batch(2), 3, 4, 5, low=-2, high=2)
    if m.layout == "empty":  # PyTorch refuses a weight or bias for an empty batch
        return lambda: (F.instance_norm(x),)
    x1 = m.input("x1", m.batch(2), 3, 6, low=-2, high=2)
    w = m.input("w", 3, low=0.5, high=2)
    b = m.input("b", 3)
    return lambda: (
        F.instance_norm(x),
        F.instance_norm(x, weight=w, bias=b, eps=1e-3),
        F.instance_norm(x1, bias=b),
    )


def _embedding_bag(m: Maker) -> Forward:
    w = m.input("w", 6, 3)
    # Bags [1, 2], [], [4, 5, 4] and [3, 2, 0, 2]; none in the empty layout.
    indices = tw.tensor([1, 2, 4, 5, 4, 3, 2, 0, 2], device=w)[: m.batch(9)]
    offsets = tw.tensor([0, 2, 2, 5] if m.batch(1) else [0, 0], device=w)
    scale = m.input("scale", m.batch(9))
    rows = tw.tensor([[1, 3, 3], [5, 0, 2]], device=w)[: m.batch(2)]
    bag = F.embedding_bag
    return lambda: (
        bag(indices, w, offsets, mode="sum", per_sample_weights=scale, padding_idx=2),
        bag(indices, w, offsets, mode="mean"),
        bag(indices, w, offsets, mode="max", include_last_offset=True),
        bag(rows, w, mode="max", padding_idx=3),
    )


BUILDS: dict[str, Callable[[Maker], Forward]] = {
    "relu": _relu,
    "dropout": _dropout,
    "embedding": _embedding,
    "rnn": _rnn,
    "rnn_packed": _rnn_packed,
    "cross_entropy": _cross_entropy,
    "linear": _linear,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "conv2d": _conv2d,
    "max_pool2d": _max_pool2d,
    "layer_norm": _layer_norm,
    "scaled_dot_product_attention": _attention,
    "conv3d": _conv3d,
    "conv_transpose": _conv_transpose,
    "interpolate": _interpolate,
    "grid_sample": _grid_sample,
    "ctc_loss": _ctc_loss,
    "cross_entropy_nd": _cross_entropy_nd,
    "max_pool": _max_pool,
    "max_pool_with_indices": _max_pool_with_indices,
    "avg_pool": _avg_pool,
    "adaptive_avg_pool": _adaptive_avg_pool,
    "adaptive_max_pool": _adaptive_max_pool,
    "instance_norm": _instance_norm,
    "embedding_bag": _embedding_bag,
}
assert set(BUILDS) == set(COMPOSITES), "every fusable composite has a case"


def _culprit(name: str, fused: bool) -> Callable[[str], str]:
    if not fused:
        return lambda what: f"{name} (the core's decomposition on this device): {what}"
    return lambda what: (
        f"fused_{name}: {what}" if what.startswith("output") else f"fused_{name}_backward: {what}"
    )


def _case(
    name: str, dtype: DType | None, layout: str = "standard"
) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        fused = callable(getattr(ctx.backend, f"fused_{name}", None))
        names = _culprit(name, fused)
        return trial.compare(ctx, f"composite/{name}", BUILDS[name], dtype, names, layout)

    return run


def cases() -> list[Case]:
    out = []
    for name in BUILDS:
        out += [Case(f"composite/{name}/{t.name}", _case(name, t)) for t in (d.float32, d.float64)]
        # in the device's float dtype: float64, with finite differences, where it has it
        out += [Case(f"composite/{name}/{lay}", _case(name, None, lay)) for lay in trial.LAYOUTS]
    return out
