"""A custom ``autograd.Function``'s outputs that view its inputs, against torch 2.13: such an
output (or an input returned as it is) is a view of that input, so writes through it reach
the input and, with a graph, PyTorch refuses to change it in place or to use it after its
input changed; a view marked dirty takes its base's history with it."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _functions(m: Any) -> tuple:
    class Pick(m.autograd.Function):
        """A column of x, viewed through a transpose; and a new tensor from y."""

        @staticmethod
        def forward(ctx: Any, x: Any, y: Any) -> Any:
            return x.t()[1], y * 2

        @staticmethod
        def backward(ctx: Any, g1: Any, g2: Any) -> Any:
            z = m.zeros(2, 3, dtype=g1.dtype)
            z[:, 1] = g1
            return z, g2 * 2

    class DirtyTimesThree(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, v: Any) -> Any:
            v.mul_(3)
            ctx.mark_dirty(v)
            return v

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 3

    return Pick, DirtyTimesThree


def _case(m: Any, case: str) -> Any:
    pick, dirty = _functions(m)
    p = m.tensor(np.arange(6.0).reshape(2, 3), dtype=m.float64, requires_grad=True)
    q = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
    if case == "view output written":
        a, _ = pick.apply(p * 1, q)
        a.mul_(2)
    elif case == "view of the view output written":
        a, _ = pick.apply(p * 1, q)
        a[:1].mul_(2)
    elif case == "new output written":
        a, b = pick.apply(p * 1, q)
        b.mul_(2)
        (a.sum() + b.sum()).backward()
        return p.grad.tolist(), q.grad.tolist()
    elif case == "view output written under no_grad":
        x = p * 1
        a, _ = pick.apply(x, q)
        with m.no_grad():
            a.mul_(2)
        return x.tolist()
    elif case == "view output used after its input changed":
        x = p * 1
        a, _ = pick.apply(x, q)
        with m.no_grad():
            x.add_(1)
        (a * 2).sum().backward()  # (torch refuses at the product, ours in backward)
        return a.tolist()
    elif case == "view output's gradient":
        a, _ = pick.apply(p * 1, q)
        (a * a).sum().backward()
        return p.grad.tolist()
    elif case == "clone of the view output written":
        a, _ = pick.apply(p * 1, q)
        c = a.clone()
        c.mul_(2)
        c.sum().backward()
        return p.grad.tolist()
    elif case == "dirty row, then its base":
        base = p * 1
        dirty.apply(base[0])
        (base * base).sum().backward()
        return p.grad.tolist()
    elif case == "dirty whole tensor":
        base = p * 1
        dirty.apply(base)
        (base * base).sum().backward()
        return p.grad.tolist()
    elif case == "dirty row, then its base changed again":
        base = p * 1
        row = dirty.apply(base[0])
        base.add_(1)
        (row * 2).sum().backward()
        return p.grad.tolist()
    return None


CASES = [
    "view output written",
    "view of the view output written",
    "new output written",
    "view output written under no_grad",
    "view output used after its input changed",
    "view output's gradient",
    "clone of the view output written",
    "dirty row, then its base",
    "dirty whole tensor",
    "dirty row, then its base changed again",
]


def _outcome(m: Any, case: str) -> Any:
    try:
        return _case(m, case)
    except RuntimeError as error:
        message = str(error)
        for gist in ("is being modified inplace", "has been modified inplace"):
            if gist in message:
                return gist
        return message


@pytest.mark.parametrize("case", CASES)
def test_function_view_outputs_like_torch(backend: str, case: str) -> None:
    assert _outcome(tw, case) == _outcome(torch, case)


def test_the_refusal_names_the_output_and_the_function(backend: str) -> None:
    pick, _ = _functions(tw)
    a, _ = pick.apply(tw.ones(2, 3, requires_grad=True) * 1, tw.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="Output 0 of Pick is a view"):
        a.add_(1)
