"""Which in-place changes between a forward and its backward raise, as torch's saved
variables decide: a product reads each operand only for the other's gradient (linear, mm,
matmul: a weight updated while the input wants no gradient is no error), a convolution reads
both always, and a double backward (create_graph) reads every input. The engine checked
every input of a fused linear and of a matmul, and raised where torch runs."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw

torch = pytest.importorskip("torch")


def _linear(m: Any, bias: bool) -> Callable[[Any], Any]:
    layer = m.nn.Linear(4, 3, bias=bias)
    if bias:
        with m.no_grad():
            layer.bias.fill_(0.5)
    return lambda x: (layer(x) ** 2).sum(), layer.weight


def _conv(m: Any, bias: bool) -> Callable[[Any], Any]:
    layer = m.nn.Conv2d(4, 3, 1, bias=bias)
    if bias:
        with m.no_grad():
            layer.bias.fill_(0.5)
    return lambda x: (layer(x[..., None, None]) ** 2).sum(), layer.weight


def _matmul(m: Any, bias: bool) -> Callable[[Any], Any]:
    w = m.ones(3, 4, requires_grad=True)
    return lambda x: ((x @ w.T) ** 2).sum(), w


LAYERS = {"linear": _linear, "conv": _conv, "matmul": _matmul}


def _outcome(m: Any, layer: str, bias: bool, x_grad: bool, create_graph: bool) -> Any:
    f, weight = LAYERS[layer](m, bias)
    with m.no_grad():  # the same weights for both
        weight.copy_(m.tensor(np.linspace(-1, 1, weight.numel()).reshape(tuple(weight.shape))))
    x = m.tensor(np.linspace(-1, 1, 8).reshape(2, 4), dtype=m.float32, requires_grad=x_grad)
    loss = f(x)
    with m.no_grad():
        weight.mul_(2)  # an optimizer step before the backward
    try:
        (g,) = m.autograd.grad(loss, [weight], create_graph=create_graph)
    except RuntimeError as e:
        return "raised" if "in-place" in str(e) or "inplace" in str(e) else str(e)
    return g.detach().numpy()


@pytest.mark.parametrize("create_graph", [False, True], ids=["plain", "create_graph"])
@pytest.mark.parametrize("x_grad", [False, True], ids=["x-no-grad", "x-grad"])
@pytest.mark.parametrize("bias", [False, True], ids=["no-bias", "bias"])
@pytest.mark.parametrize("layer", LAYERS)
def test_a_weight_changed_before_backward_like_torch(
    layer: str, bias: bool, x_grad: bool, create_graph: bool
) -> None:
    if layer == "matmul" and bias:
        pytest.skip("no bias")
    theirs = _outcome(torch, layer, bias, x_grad, create_graph)
    ours = _outcome(tw, layer, bias, x_grad, create_graph)
    if isinstance(theirs, str):
        assert ours == theirs
    else:
        assert not isinstance(ours, str), ours
        np.testing.assert_allclose(ours, theirs, rtol=1e-5)


@pytest.mark.parametrize("saved", ["nothing", "input", "view of input", "other input"])
def test_function_checks_only_what_it_saved_like_torch(saved: str) -> None:
    """An autograd.Function's backward refuses an input changed in place only where forward
    saved it (PyTorch checks saved tensors' versions): tensorweaver checked every input."""

    def run(lib: Any) -> Any:
        class Twice(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, w: Any) -> Any:
                keep = {"input": (x,), "view of input": (x[1:],), "other input": (w,)}
                ctx.save_for_backward(*keep.get(saved, ()))
                return x * 2 + w

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                assert len(ctx.saved_tensors) == (saved != "nothing")
                return g * 2, g

        x, w = lib.ones(3, requires_grad=True), lib.ones(3, requires_grad=True)
        y = x * 1
        z = Twice.apply(y, w)
        y.add_(1)
        try:
            z.sum().backward()
        except RuntimeError:
            return "RuntimeError"
        return x.grad.tolist()

    assert run(tw) == run(torch)
