"""User-defined differentiable operations, as ``torch.autograd.Function``.

Both of PyTorch's styles: ``forward(ctx, *args)``, or ``forward(*args)`` with a separate
``setup_context(ctx, inputs, output)``. ``ctx.mark_dirty`` hands back an input modified in
place as the output (its history moves to the Function's node); ``once_differentiable``
marks a backward that may run only once (its results refuse a second differentiation).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import Node
from tensorweaver.tensor import Tensor


class FunctionCtx:
    """What ``forward`` leaves for ``backward``: saved tensors and any attributes it sets."""

    def __init__(self, needs_input_grad: tuple) -> None:
        self.needs_input_grad = needs_input_grad
        self.saved_tensors: tuple = ()
        self.materialize_grads = True

    def save_for_backward(self, *tensors: Any) -> None:
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *tensors: Any) -> None:
        self.non_differentiable = {id(t) for t in tensors}

    def mark_dirty(self, *tensors: Any) -> None:
        """Say that ``forward`` modified these inputs in place (and returns them)."""
        self.dirty = {id(t) for t in tensors}

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` gets None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = value


class Function:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call
    ``apply``. ``backward`` returns one gradient (or None) per argument of ``forward``."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        raise NotImplementedError("a Function subclass must define forward(ctx, ...)")

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        raise NotImplementedError("a Function subclass must define backward(ctx, ...)")

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        """Override (with a ``forward`` that takes no ctx) to save what backward needs."""
        raise NotImplementedError("setup_context is not overridden")

    @classmethod
    def apply(cls, *args: Any) -> Any:
        tensors = tuple(a for a in args if isinstance(a, Tensor))
        # The inputs as they enter: a dirty input's gradient follows its history before.
        entering = {id(t): t._snapshot() for t in tensors}
        ctx = FunctionCtx(tuple(isinstance(a, Tensor) and a.requires_grad for a in args))
        with no_grad():
            if cls.setup_context is Function.setup_context:
                result = cls.forward(ctx, *args)
            else:
                result = cls.forward(*args)
                cls.setup_context(ctx, args, result)
        outputs = result if isinstance(result, tuple) else (result,)
        record = is_grad_enabled() and any(t.requires_grad for t in tensors)
        skip = getattr(ctx, "non_differentiable", set())
        dirty = getattr(ctx, "dirty", set())
        if dirty:
            tensors = tuple(entering[id(t)] if id(t) in dirty else t for t in tensors)
        wrapped = []
        for i, out in enumerate(outputs):
            if not isinstance(out, Tensor):
                wrapped.append(out)
                continue
            # A fresh tensor (forward may return an input itself), but a dirty input is
            # handed back itself, its history now this node.
            target = out if id(out) in dirty else Tensor(out.native, out.backend, out.dtype)
            if record and id(out) not in skip and out.dtype.kind in "fc" and tensors:
                target._node = Node("function", tensors, (cls, ctx, args, i, outputs))
                target.requires_grad = True
            wrapped.append(target)
        return tuple(wrapped) if isinstance(result, tuple) else wrapped[0]


def function_backward(node: Node, g: Tensor) -> tuple:
    """The rule for a Function's output ``i``: backward with zeros for the other outputs
    (gradients are linear in the output gradients, so per-output calls add up exactly)."""
    cls, ctx, args, index, outputs = node.saved
    zeros = ctx.materialize_grads
    grads = [
        g if j == index else (o.detach() * 0 if zeros and isinstance(o, Tensor) else None)
        for j, o in enumerate(outputs)
    ]
    result = cls.backward(ctx, *grads)
    result = result if isinstance(result, tuple) else (result,)
    if len(result) < len(args):
        raise RuntimeError(
            f"{cls.__name__}.backward returned {len(result)} gradients, but forward took "
            f"{len(args)} arguments; return one per argument (None for non-tensors)"
        )
    return tuple(r for a, r in zip(args, result) if isinstance(a, Tensor))


def once_differentiable(backward: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a Function's ``backward`` that cannot itself be differentiated: it runs
    without recording a graph, and under ``create_graph=True`` its results raise if a
    second backward reaches them, as PyTorch's do."""

    @functools.wraps(backward)
    def wrapper(ctx: FunctionCtx, *grads: Any) -> Any:
        with no_grad():
            result = backward(ctx, *grads)
        tracked = [g for g in grads if isinstance(g, Tensor) and g.requires_grad]
        if not is_grad_enabled() or not tracked:
            return result
        results = result if isinstance(result, tuple) else (result,)
        marked = tuple(
            _DelayedError.apply(r, *tracked) if isinstance(r, Tensor) else r for r in results
        )
        return marked if isinstance(result, tuple) else marked[0]

    return wrapper


class _DelayedError(Function):
    """The identity on ``value``, whose backward raises: what a ``once_differentiable``
    backward returns when a graph is being built over it (``grads`` link it to that graph)."""

    @staticmethod
    def forward(ctx: FunctionCtx, value: Tensor, *grads: Tensor) -> Tensor:
        return value

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Any:
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
        )
