"""User-defined differentiable operations, as ``torch.autograd.Function``."""

from __future__ import annotations

from typing import Any

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

    @classmethod
    def apply(cls, *args: Any) -> Any:
        tensors = tuple(a for a in args if isinstance(a, Tensor))
        ctx = FunctionCtx(tuple(isinstance(a, Tensor) and a.requires_grad for a in args))
        with no_grad():
            result = cls.forward(ctx, *args)
        outputs = result if isinstance(result, tuple) else (result,)
        record = is_grad_enabled() and any(t.requires_grad for t in tensors)
        skip = getattr(ctx, "non_differentiable", set())
        wrapped = []
        for i, out in enumerate(outputs):
            if not isinstance(out, Tensor):
                wrapped.append(out)
                continue
            # A fresh tensor: forward may return an input itself.
            fresh = Tensor(out.native, out.backend, out.dtype)
            if record and id(out) not in skip and out.dtype.is_floating_point and tensors:
                fresh._node = Node("function", tensors, (cls, ctx, args, i, outputs))
                fresh.requires_grad = True
            wrapped.append(fresh)
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
