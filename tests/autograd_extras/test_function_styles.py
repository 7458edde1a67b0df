"""``autograd.Function`` in each of PyTorch's styles, checked against torch: ``setup_context``,
``ctx.mark_dirty``, ``once_differentiable``."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch


def _cube(m):
    class Cube(m.autograd.Function):
        @staticmethod
        def forward(x):
            return x**3

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 3 * x**2 * grad

    return Cube


def _add_one_in_place(m):
    class AddOne_(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    return AddOne_


def _square_once(m, once_differentiable):
    class Square(m.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    return Square


def test_setup_context_style_like_torch(backend: str) -> None:
    grads = []
    for m in (tw, torch):
        x = m.tensor([1.0, -2.0, 0.5], dtype=m.float64, requires_grad=True)
        (_cube(m).apply(x) * m.tensor([1.0, 2.0, 3.0], dtype=m.float64)).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1]


def test_mark_dirty_returns_the_input_with_the_functions_history_like_torch(backend) -> None:
    seen = []
    for m in (tw, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x.clone()
        z = _add_one_in_place(m).apply(y)
        assert z is y
        (z * m.tensor([2.0, 3.0])).sum().backward()
        seen.append((x.grad.tolist(), y.detach().tolist()))
    assert seen[0] == seen[1] == ([2.0, 3.0], [2.0, 3.0])


def test_once_differentiable_runs_once_and_refuses_a_second_backward(backend: str) -> None:
    from tensorweaver.autograd.function import once_differentiable as tw_once
    from torch.autograd.function import once_differentiable as torch_once

    for m, once in ((tw, tw_once), (torch, torch_once)):
        square = _square_once(m, once)
        x = m.tensor([3.0], requires_grad=True)
        square.apply(x).sum().backward()
        assert x.grad.tolist() == [6.0]
        x = m.tensor([3.0], requires_grad=True)
        seed = m.ones(1, requires_grad=True)
        (g,) = m.autograd.grad(square.apply(x), x, grad_outputs=seed, create_graph=True)
        assert g.tolist() == [6.0]
        with pytest.raises(RuntimeError, match="differentiate twice"):
            g.sum().backward()
