"""Module hooks against torch.nn's: forward pre-hooks and forward hooks (prepend, with_kwargs,
always_call, removal) and full backward hooks and pre-hooks (what they receive, and their
replacements' effect on the gradients), on the same small module in float64."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver import nn

rng = np.random.default_rng(0)
W = rng.standard_normal((3, 3))
X, Y = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))


def host(t):
    if t is None:
        return None
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def make(lib):
    """A module of two tensor inputs (and a keyword), two outputs and one parameter."""

    class TwoByTwo(lib.Module):
        def __init__(self) -> None:
            super().__init__()
            tensor = torch.tensor if lib is torch.nn else tw.tensor
            self.weight = lib.Parameter(tensor(W))

        def forward(self, x, y, flag=None, scale=2.0):
            return (x @ self.weight + y) * scale, (x * y).sum(-1)

    return TwoByTwo()


def run(lib, register, y_grad: bool = True, x_grad: bool = True):
    """Register hooks with ``register(module, log)``, run forward and backward with a fixed
    cotangent; returns the log (hook arguments as arrays) and the gradients."""
    tensor = torch.tensor if lib is torch.nn else tw.tensor
    module, log = make(lib), []
    register(module, log)
    x, y = tensor(X, requires_grad=x_grad), tensor(Y, requires_grad=y_grad)
    a, b = module(x, y, "flag", scale=3.0)
    ((a * tensor(np.arange(6.0).reshape(2, 3))).sum() + (b * b).sum()).backward()
    grads = [host(t.grad) for t in (x, y, module.weight)]
    return log, grads


def assert_same(ours, theirs) -> None:
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            assert_same(o, t)
    elif theirs is None or isinstance(theirs, (str, float)):
        assert ours == theirs
    else:
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


def both(register, **kwargs) -> None:
    assert_same(run(nn, register, **kwargs), run(torch.nn, register, **kwargs))


def arrays(values):
    return tuple(v if isinstance(v, (str, float)) or v is None else host(v) for v in values)


def test_forward_hooks_order_kwargs_and_replacement(backend: str) -> None:
    def register(module, log):
        module.register_forward_pre_hook(lambda m, args: log.append(("pre", arrays(args))))
        module.register_forward_pre_hook(
            lambda m, args: log.append(("first", arrays(args))), prepend=True
        )

        def with_kwargs(m, args, kwargs):
            log.append(("kw", arrays(args), kwargs["scale"]))
            return (args[0] * 2, args[1]), {**kwargs, "scale": 0.5}

        module.register_forward_pre_hook(with_kwargs, with_kwargs=True)
        module.register_forward_hook(lambda m, args, out: (out[0] + 1, out[1]))
        module.register_forward_hook(
            lambda m, args, kwargs, out: log.append(("post", arrays(out), kwargs["scale"])),
            with_kwargs=True,
        )

    both(register)


@pytest.mark.parametrize("lib", [nn, torch.nn], ids=["tw", "torch"])
def test_forward_hook_always_call_and_remove(backend: str, lib) -> None:
    module, log = make(lib), []
    module.register_forward_hook(lambda m, args, out: log.append("plain"))
    module.register_forward_hook(lambda m, args, out: log.append(out), always_call=True)
    with pytest.raises(TypeError):
        module("not a tensor", None)
    assert log == [None]
    handle = module.register_forward_pre_hook(lambda m, args: log.append("pre"))
    handle.remove()
    handle.remove()  # twice is fine
    tensor = torch.tensor if lib is torch.nn else tw.tensor
    module(tensor(X), tensor(Y))
    assert log[1:] == ["plain", log[2]] and log[2] is not None


def test_forward_pre_hook_with_kwargs_bad_result(backend: str) -> None:
    module = make(nn)
    module.register_forward_pre_hook(lambda m, args, kwargs: (args, kwargs, 1), with_kwargs=True)
    with pytest.raises(RuntimeError, match="tuple of"):
        module(tw.tensor(X), tw.tensor(Y))


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_backward_hooks_receive_what_torch_gives(backend: str) -> None:
    def register(module, log):
        module.register_full_backward_pre_hook(lambda m, go: log.append(("pre", arrays(go))))
        module.register_full_backward_hook(
            lambda m, gi, go: log.append(("full", arrays(gi), arrays(go)))
        )

    both(register)
    both(register, y_grad=False)
    both(register, x_grad=False, y_grad=False)  # called from the output side, inputs None


def test_backward_hook_replacements(backend: str) -> None:
    def register(module, log):
        def pre(m, grad_output):
            return grad_output[0] * 2, grad_output[1] - 1

        def first(m, grad_input, grad_output):
            log.append(("first", arrays(grad_input)))
            return grad_input[0] * 10, None, None

        module.register_full_backward_pre_hook(pre)
        handle = module.register_full_backward_pre_hook(lambda m, go: (None, None))
        handle.remove()
        module.register_full_backward_hook(lambda m, gi, go: log.append(("second", arrays(gi))))
        module.register_full_backward_hook(first, prepend=True)

    both(register)


def test_backward_hook_bad_replacement(backend: str) -> None:
    module = make(nn)
    module.register_full_backward_hook(lambda m, gi, go: (gi[0],))
    a, b = module(tw.tensor(X, requires_grad=True), tw.tensor(Y, requires_grad=True))
    with pytest.raises(RuntimeError, match="expected 2"):
        (a.sum() + b.sum()).backward()
