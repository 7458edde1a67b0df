"""Writes through ``.data`` into the outputs of a linalg call the backend computes whole
(torch:cpu) or by the core's formula (numpy), and a convolution's bias changed in place,
against real torch 2.13 (tests/snippet_outcomes.py): the cases beside reader r2's (session
31) that its tests leave out."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import same

DEVICES = ["numpy", "torch:cpu"]


def _square(m: Any) -> Any:
    """A fixed, well-conditioned 3x3 float64 matrix (no random draws)."""
    return m.tensor([[2.0, 1.0, 0.3], [0.5, 3.0, 0.2], [0.1, 0.4, 2.5]], dtype=m.float64)


#: call -> its differentiable outputs from A (the first is written).
CALLS: dict[str, Callable[[Any, Any], tuple]] = {
    "det": lambda m, a: (m.linalg.det(a),),
    "solve": lambda m, a: (m.linalg.solve(a, a.sum(-1)),),
    "lu_factor": lambda m, a: (m.linalg.lu_factor(a)[0],),
    "eigvalsh": lambda m, a: (m.linalg.eigvalsh(a + a.mT),),
    "qr": lambda m, a: tuple(m.linalg.qr(a)),
}


def _rebound_then_written(name: str) -> Callable:
    def program(m: Any) -> Any:
        a = _square(m).requires_grad_()
        outs = CALLS[name](m, a)
        outs[0].data = outs[0].data * 2  # (new memory: torch's node keeps the old one)
        outs[0].data.add_(1)  # (a write into the new memory, which torch's node never reads)
        outs[0].data.mul_(1.5)
        return m.autograd.grad(sum((x * x).sum() for x in outs), a)

    return program


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(CALLS))
def test_writes_after_rebinding_stay_unseen(name: str, device: str) -> None:
    same(_rebound_then_written(name), device, decimals=9)


def _written_after_backward(name: str) -> Callable:
    def program(m: Any) -> Any:
        a = _square(m).requires_grad_()
        outs = CALLS[name](m, a)
        (g,) = m.autograd.grad(sum((x * x).sum() for x in outs), a)
        outs[0].data.add_(1)  # (its node was released by that backward: nothing to tell)
        return g, outs[0]

    return program


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", ["det", "qr"])
def test_data_write_after_backward_is_no_error(name: str, device: str) -> None:
    """(torch:cpu's det raised TypeError: autograd/node.py output_rewritten read the
    released node's saved values)"""
    same(_written_after_backward(name), device, decimals=9)


def _bias_changed_in_place(call: Callable, shapes: tuple, bias_only: bool) -> Callable:
    def program(m: Any) -> Any:
        xs, ws = shapes
        x = (m.arange(float(m.Size(xs).numel()), dtype=m.float64).reshape(xs) / 9).sin()
        w = (m.arange(float(m.Size(ws).numel()), dtype=m.float64).reshape(ws) / 5).cos()
        b0 = m.arange(1.0, 4.0, dtype=m.float64).requires_grad_()
        x.requires_grad_()
        w.requires_grad_()
        b = b0 * 1
        y = call(m.nn.functional, x, w, b)
        b.mul_(2)  # (PyTorch's ConvolutionBackward0 saves the input and weight, no bias)
        return m.autograd.grad(y.sum(), b0) if bias_only else m.autograd.grad(y.sum(), (x, w))

    return program


CONVS = {
    "conv2d": (lambda F, x, w, b: F.conv2d(x, w, b), ((2, 4, 5, 5), (3, 4, 3, 3))),
    "conv_transpose1d": (
        lambda F, x, w, b: F.conv_transpose1d(x, w, b, stride=2),
        ((2, 4, 5), (4, 3, 3)),
    ),
}


@pytest.mark.parametrize("bias_only", [False, True])
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", list(CONVS))
def test_convolution_bias_changed_in_place(kind: str, device: str, bias_only: bool) -> None:
    same(_bias_changed_in_place(*CONVS[kind], bias_only), device, decimals=9)
