"""``Tensor.register_hook`` and ``register_post_accumulate_grad_hook`` against PyTorch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import assert_like_torch, like_torch, make, raises_like_torch, uniform

X = uniform((3, 4), seed=1)
W = uniform((4, 2), seed=2)


def _graph(m: Any) -> tuple:
    x = make(m, X, "float64", requires_grad=True)
    w = make(m, W, "float64", requires_grad=True)
    h = (x @ w).tanh()
    return x, w, h


def test_hooks_see_and_replace_gradients(backend: str) -> None:
    def scenario(m: Any) -> tuple:
        x, w, h = _graph(m)
        seen = []
        h.register_hook(lambda g: seen.append(g.clone()))  # observes, returns None
        h.register_hook(lambda g: g * 3)  # replaces what flows on
        h.register_hook(lambda g: seen.append(g.clone()))  # sees the replacement
        x.register_hook(lambda g: g + 1)  # a leaf's hook changes what accumulates
        w.register_hook(lambda g: seen.append(g.clone()))
        (h * h).sum().backward()
        return x.grad, w.grad, tuple(seen)

    like_torch(scenario)


def test_hook_runs_before_retain_grad(backend: str) -> None:
    def scenario(m: Any) -> tuple:
        _, _, h = _graph(m)
        h.retain_grad()
        h.register_hook(lambda g: g * 2)  # registered later, still runs first
        h.sum().backward()
        return (h.grad,)

    like_torch(scenario)


def test_remove_and_repeated_backward(backend: str) -> None:
    def scenario(m: Any) -> tuple:
        x, _, h = _graph(m)
        calls = []
        handle = x.register_hook(lambda g: calls.append(1) or g * 10)
        h.sum().backward(retain_graph=True)
        first = x.grad.clone()
        handle.remove()
        handle.remove()  # a second remove does nothing
        x.grad = None
        h.sum().backward()
        return first, x.grad, len(calls)

    like_torch(scenario)


def test_hooks_apply_to_autograd_grad(backend: str) -> None:
    def scenario(m: Any) -> tuple:
        x, w, h = _graph(m)
        h.register_hook(lambda g: g * -1)
        x.register_hook(lambda g: g * 0.5)
        return m.autograd.grad(h.sum(), (x, w))

    like_torch(scenario)


def test_post_accumulate_grad_hook(backend: str) -> None:
    def scenario(m: Any) -> tuple:
        x, _, h = _graph(m)
        x.grad = m.ones_like(x)
        seen = []
        x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
        h.sum().backward()
        return x.grad, tuple(seen)

    like_torch(scenario)


def test_hook_errors(backend: str) -> None:
    raises_like_torch(lambda m: m.ones(2).register_hook(lambda g: g))
    raises_like_torch(lambda m: _graph(m)[2].register_post_accumulate_grad_hook(lambda t: None))


def test_hook_changing_shape_is_an_error(backend: str) -> None:
    x = tw.tensor(np.ones(3), requires_grad=True)
    x.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match="changed the size"):
        (x * 2).sum().backward()


@pytest.mark.parametrize("leaf", [True, False])
@pytest.mark.parametrize("returned", ["double", "number"])
def test_hook_changing_type_is_an_error_like_torch(backend: str, leaf: bool, returned: str) -> None:
    # A hook that returned float64 for a float32 gradient gave the leaf a float64 .grad, and
    # one that returned a number failed later with an AttributeError.
    def run(m):
        x = m.ones(3, requires_grad=True)
        y = x if leaf else x * 2
        y.register_hook(lambda g: g.double() if returned == "double" else 3)
        (y * 2).sum().backward()

    raises_like_torch(run, match=["hook", "changed the type" if returned == "double" else "hook"])


def test_hooks_die_with_their_tensor() -> None:
    from tensorweaver.autograd.hooks import GRAD_HOOKS

    before = len(GRAD_HOOKS)
    x = tw.ones(2, requires_grad=True)
    y = x * 2
    x.register_hook(lambda g: g)
    y.register_hook(lambda g: g)
    assert len(GRAD_HOOKS) == before + 2
    del x, y
    assert len(GRAD_HOOKS) == before


def test_handle_as_context_manager() -> None:
    results = []
    for m in (tw, torch):
        x = m.ones(2, dtype=m.float64, requires_grad=True)
        with x.register_hook(lambda g: g * 5):
            (x * 1).sum().backward()
        (x * 1).sum().backward()
        results.append(x.grad)
    assert_like_torch(results[0], results[1])
