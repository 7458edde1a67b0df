"""What common layers pass through ``saved_tensors_hooks``, as torch 2.13's nodes: how many
tensors each node packs, in which order, their shapes, and that backward reads what unpack
gives (unpack doubles each floating tensor here: the gradients show it). Before session 33
``linear`` with a bias (its fused AddmmBackward0) packed nothing and its backward read the
kernel's own arrays; torch's packs mat1 (the input as rows) and mat2 (``weight.t()``)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import grid, same_each
from tw_backends import FAST


def _under_hooks(make: Callable[[Any], tuple]) -> Callable:
    """A program: ``make(m)`` gives ``(leaves, forward)``; ``forward()`` runs under hooks
    that log each packed tensor's shape and layout, and each unpack; then a weighted sum of
    its output runs backward. It gives the log, the output's grad_fn name and the leaves'
    gradients."""

    def program(m: Any) -> list:
        leaves, forward = make(m)
        log = []

        def pack(t: Any) -> Any:
            log.append(("pack", tuple(t.shape), t.is_contiguous()))
            return t

        def unpack(t: Any) -> Any:
            log.append(("unpack", tuple(t.shape)))
            return t * 2 if t.dtype.is_floating_point else t

        with m.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = forward()
        name = None if y.grad_fn is None else type(y.grad_fn).__name__
        if y.grad_fn is not None and name.startswith("_"):  # (tw's grad_fn objects)
            name = y.grad_fn.name()
        (y * grid(m, *y.shape)).sum().backward()
        return [log, name, *[t.grad for t in leaves]]

    return program


def _values(m: Any, *shape: int, scale: float = 7.0) -> Any:
    """A leaf that requires grad, with signed values (relu's mask is not all ones)."""
    return (grid(m, *shape) / scale - 0.9).requires_grad_()


def _linear(
    x_shape: tuple, x_grad: bool, bias: bool, w_grad: bool = True, strided: bool = False
) -> Callable:
    def make(m: Any) -> tuple:
        x = _values(m, *x_shape).detach()
        x = (x.transpose(0, 1) if strided else x).requires_grad_(x_grad)
        w = _values(m, 4, 3, scale=5.0).requires_grad_(w_grad)
        b = _values(m, 4) if bias else None
        leaves = [t for t in (x, w, b) if t is not None and t.requires_grad]
        return leaves, lambda: m.nn.functional.linear(x, w, b)

    return _under_hooks(make)


SHAPES = {"2d": (2, 3), "3d": (2, 2, 3), "1d": (3,)}


@pytest.mark.parametrize("spec", FAST)
def test_linear_with_bias_packs_what_addmm_saves(spec: str) -> None:
    same_each(
        {
            f"{rank} x_grad={x_grad} w_grad={w_grad}": _linear(shape, x_grad, True, w_grad)
            for rank, shape in SHAPES.items()
            for x_grad, w_grad in ((False, True), (True, True), (True, False))
        }
        | {"3d strided, w_grad": _linear(SHAPES["3d"], False, True, strided=True)},
        spec,
    )


@pytest.mark.parametrize("spec", FAST)
def test_linear_without_bias_packs_only_one_operand_as_mm(spec: str) -> None:
    same_each(
        {
            f"{rank} {grads}": _linear(shape, x_grad, False, w_grad)
            for rank, shape in SHAPES.items()
            for grads, x_grad, w_grad in (("w", False, True), ("x", True, False))
        },
        spec,
    )


_MM_ORDER = pytest.mark.xfail(
    strict=True,
    reason="autograd/graph.py pack_inputs packs a matmul node's inputs in input order; "
    "torch's MmBackward0/BmmBackward0 (and linear without bias, and a folded 3-D @ 2-D "
    "matmul) pack mat2 first, then self. Fix: pack mat2 first for a matmul node unless it "
    "is labelled AddmmBackward0 (nn/functional/linear.py linear_reference: torch's addmm "
    "packs mat1 first)",
)


@_MM_ORDER
@pytest.mark.parametrize("spec", FAST)
def test_linear_without_bias_packs_weight_t_then_input_as_mm(spec: str) -> None:
    programs = {rank: _linear(shape, True, False) for rank, shape in SHAPES.items()}
    # (a strided 3-D input: torch's linear adds the bias after a matmul, not in an addmm)
    programs["3d strided, bias"] = _linear(SHAPES["3d"], True, True, strided=True)
    same_each(programs, spec)


def _layer(name: str) -> Callable:
    def make(m: Any) -> tuple:
        F = m.nn.functional
        a, b = _values(m, 3, 4), _values(m, 4, 5, scale=9.0)
        a3, b3 = _values(m, 2, 3, 4, scale=11.0), _values(m, 2, 4, 5, scale=13.0)
        w, s = _values(m, 4, scale=3.0), _values(m, 4, scale=5.0)
        target = m.tensor([0, 2, 1])
        forward, leaves = {
            "mm": (lambda: a @ b, [a, b]),
            "mm one operand": (lambda: a @ b.detach(), [a]),
            "bmm": (lambda: m.bmm(a3, b3), [a3, b3]),
            "matmul 3d @ 2d": (lambda: a3 @ b, [a3, b]),
            "relu": (lambda: m.relu(a), [a]),
            "sigmoid": (lambda: m.sigmoid(a), [a]),
            "tanh": (lambda: m.tanh(a), [a]),
            "softmax": (lambda: F.softmax(a, 1), [a]),
            "log_softmax": (lambda: F.log_softmax(a, 1), [a]),
            "layer_norm": (lambda: F.layer_norm(a, (4,)), [a]),
            "layer_norm affine": (lambda: F.layer_norm(a, (4,), w, s), [a, w, s]),
            "embedding": (lambda: F.embedding(target, a), [a]),
            "dropout": (lambda: F.dropout(a * 1, 0.0), [a]),
            "mse_loss": (lambda: F.mse_loss(a, a.detach() * 0.5), [a]),
            "cross_entropy": (lambda: F.cross_entropy(a, target), [a]),
            "gelu": (lambda: F.gelu(a), [a]),
            "silu": (lambda: F.silu(a), [a]),
        }[name]
        return leaves, forward

    return _under_hooks(make)


def _xfail(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, reason=reason)


_FUSED = (
    "packs nothing and its backward reads no unpacked value: a fused composite's node "
    "(op 'fused') is left out of autograd/node.py's pack_inputs, and ops/composite.py "
    "fused_or_reference packs only TRACED composites (_pack_read). Fix: pack what torch's "
    "node saves ({}) and have backward read unpack's result, as _pack_read does for a "
    "convolution"
)

LAYERS = [
    pytest.param("mm", marks=_MM_ORDER),
    "mm one operand",
    pytest.param("bmm", marks=_MM_ORDER),
    pytest.param("matmul 3d @ 2d", marks=_MM_ORDER),
    "relu",
    "sigmoid",
    "tanh",
    pytest.param(
        "softmax",
        marks=_xfail(
            "nn/functional/activation.py _softmax_like (fused_or_reference with "
            "from_output) " + _FUSED.format("SoftmaxBackward0: its result")
        ),
    ),
    pytest.param(
        "log_softmax",
        marks=_xfail(
            "nn/functional/activation.py _softmax_like (fused_or_reference with "
            "from_output) " + _FUSED.format("LogSoftmaxBackward0: its result")
        ),
    ),
    pytest.param(
        "layer_norm",
        marks=_xfail(
            "nn/functional/normalization.py layer_norm (fused_or_reference) "
            + _FUSED.format("NativeLayerNormBackward0: input, mean, rstd")
        ),
    ),
    pytest.param(
        "layer_norm affine",
        marks=_xfail(
            "nn/functional/normalization.py layer_norm (fused_or_reference) "
            + _FUSED.format("NativeLayerNormBackward0: weight, input, bias, mean, rstd")
        ),
    ),
    "embedding",
    "dropout",
    "mse_loss",
    pytest.param(
        "cross_entropy",
        marks=_xfail(
            "nn/functional/loss.py cross_entropy (its own fused node, OWN_NODES) "
            + _FUSED.format(
                "LogSoftmaxBackward0's result, then NllLossBackward0's self, target and "
                "total_weight"
            )
        ),
    ),
    pytest.param(
        "gelu",
        marks=_xfail(
            "nn/functional/activation.py _gelu_erf: a composition of elementwise ops whose "
            "mul/erf nodes pack three tensors; torch's GeluBackward0 packs its input once. "
            "Fix: one node (as _opmath's half path) that packs the input only"
        ),
    ),
    pytest.param(
        "silu",
        marks=_xfail(
            "nn/functional/activation.py _silu: x * sigmoid(x) packs x, sigmoid's result "
            "and x again; torch's SiluBackward0 packs its input once. Fix: one node that "
            "packs the input only"
        ),
    ),
]


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("spec", FAST)
def test_layer_packs_as_torch(spec: str, layer: str) -> None:
    same_each({layer: _layer(layer)}, spec)
