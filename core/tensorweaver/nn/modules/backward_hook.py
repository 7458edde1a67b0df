"""Module backward hooks (``register_full_backward_hook`` and ``..._pre_hook``), as PyTorch's.

A module's tensor inputs, and then its tensor outputs, each pass through one identity graph
node (the tensors joined into one flat vector and split again), so the engine meets all their
gradients at once: the output node runs the pre-hooks on ``grad_output``, the input node runs
the full hooks on ``(grad_input, grad_output)``; either may replace the gradients it sees.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Optional

import tensorweaver as tw
from tensorweaver.autograd.function import Function, FunctionCtx
from tensorweaver.tensor import Tensor

Grads = tuple[Optional[Tensor], ...]


class _Joined(Function):
    """Identity on several tensors as one flat output, so their gradients arrive together
    at ``on_grads(grads) -> grads``."""

    @staticmethod
    def forward(ctx: FunctionCtx, on_grads: Callable[[Grads], Grads], *tensors: Tensor) -> Tensor:
        ctx.on_grads = on_grads
        ctx.shapes = [tuple(t.shape) for t in tensors]
        return tw.cat([t.reshape(-1) for t in tensors])

    @staticmethod
    def backward(ctx: FunctionCtx, g: Tensor) -> tuple[Any, ...]:
        sizes = [math.prod(s) for s in ctx.shapes]
        grads = tuple(p.reshape(s) for p, s in zip(g.split(sizes), ctx.shapes))
        return (None, *ctx.on_grads(grads))


class _Seen(Function):
    """Identity that records, in ``seen[index]``, that a gradient came back through it."""

    @staticmethod
    def forward(ctx: FunctionCtx, seen: list[bool], index: int, t: Tensor) -> Tensor:
        ctx.seen, ctx.index = seen, index
        return t.view(t.shape)

    @staticmethod
    def backward(ctx: FunctionCtx, g: Tensor) -> tuple[Any, ...]:
        ctx.seen[ctx.index] = True
        return None, None, g


def _through_node(tensors: list[Tensor], on_grads: Callable[[Grads], Grads]) -> list[Tensor]:
    """``tensors`` again, each now behind one shared graph node that calls ``on_grads``."""
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise NotImplementedError(
            f"Module backward hooks: the tensors that require grad among a module's inputs (or "
            f"outputs) must share one dtype, got {sorted(map(str, dtypes))}; cast them first"
        )
    flat = _Joined.apply(on_grads, *tensors)
    pieces = flat.split([t.numel() for t in tensors])
    return [p.reshape(t.shape) for p, t in zip(pieces, tensors)]


def _spread(positions: list[int], values: Grads, count: int) -> Grads:
    """A ``count``-tuple with ``values`` at ``positions`` and None elsewhere."""
    out: list[Optional[Tensor]] = [None] * count
    for i, v in zip(positions, values):
        out[i] = v
    return tuple(out)


def _requiring_grad(values: tuple[Any, ...]) -> list[int]:
    return [i for i, v in enumerate(values) if isinstance(v, Tensor) and v.requires_grad]


class BackwardHook:
    """One forward call's backward hooks: wrap the inputs before ``forward`` and the outputs
    after it, then the hooks run during backward."""

    def __init__(self, module: Any, hooks: list[Callable], pre_hooks: list[Callable]) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.n_inputs = 0
        self.input_positions: list[int] = []
        self.constant_inputs: dict[int, Tensor] = {}
        self.grad_outputs: Grads = ()

    def setup_input_hook(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        self.n_inputs = len(args)
        self.input_positions = _requiring_grad(args) if tw.is_grad_enabled() else []
        # Once one input requires grad, PyTorch's hooks see zeros for the other tensor inputs.
        self.constant_inputs = {
            i: a
            for i, a in enumerate(args)
            if self.input_positions and isinstance(a, Tensor) and not a.requires_grad
        }
        if not self.input_positions:
            return args
        wrapped = _through_node([args[i] for i in self.input_positions], self._on_input_grads)
        args_list = list(args)
        for i, t in zip(self.input_positions, wrapped):
            args_list[i] = t
        return tuple(args_list)

    def setup_output_hook(self, result: Any) -> Any:
        outputs = result if isinstance(result, tuple) else (result,)
        positions = _requiring_grad(outputs) if tw.is_grad_enabled() else []
        if not positions:
            return result
        n_outputs = len(outputs)

        def on_output_grads(grads: Grads) -> Grads:
            reached = tuple(g if got else None for g, got in zip(grads, seen))
            seen[:] = [False] * len(seen)  # a later pass over a retained graph starts afresh
            full = _spread(positions, reached, n_outputs)
            for hook in self.pre_hooks:
                replaced = hook(self.module, full)
                if replaced is not None:
                    full = self._checked(replaced, n_outputs, "grad_output", "pre-hook")
            self.grad_outputs = full
            if not self.input_positions:  # no input node will run: call the hooks here
                self._run_without_input_grads()
            return tuple(
                tw.zeros_like(outputs[i]) if full[i] is None else full[i] for i in positions
            )

        # An output no gradient reaches shows as None in grad_output (as PyTorch's), not as
        # the zeros the joined node is given for it.
        seen = [False] * len(positions)
        wrapped = _through_node([outputs[i] for i in positions], on_output_grads)
        wrapped = [_Seen.apply(seen, j, t) for j, t in enumerate(wrapped)]
        outputs_list = list(outputs)
        for i, t in zip(positions, wrapped):
            outputs_list[i] = t
        if not isinstance(result, tuple):
            return outputs_list[0]
        # A tuple subclass (a namedtuple such as PackedSequence) keeps its type.
        return tuple(outputs_list) if type(result) is tuple else type(result)(*outputs_list)

    def _on_input_grads(self, grads: Grads) -> Grads:
        full = list(_spread(self.input_positions, grads, self.n_inputs))
        for i, constant in self.constant_inputs.items():
            full[i] = tw.zeros_like(constant)
        full = tuple(full)
        for hook in self.hooks:
            replaced = hook(self.module, full, self.grad_outputs)
            if replaced is not None:
                full = self._checked(replaced, self.n_inputs, "grad_input", "hook")
        return tuple(full[i] for i in self.input_positions)

    def _run_without_input_grads(self) -> None:
        # PyTorch warns here, even for pre-hooks alone: grad_input is then all None.
        warnings.warn(
            "Full backward hook is firing when gradients are computed with respect to module "
            "outputs since no inputs require gradients; grad_input holds only None. Let an "
            "input require grad to get its gradient.",
            UserWarning,
            stacklevel=2,
        )
        nothing = (None,) * self.n_inputs
        for hook in self.hooks:
            replaced = hook(self.module, nothing, self.grad_outputs)
            if replaced is not None and not all(g is None for g in _as_tuple(replaced)):
                raise RuntimeError(
                    "Backward hook for Modules where no input requires gradient should always "
                    "return None or None for all gradients."
                )

    def _checked(self, replaced: Any, count: int, what: str, kind: str) -> Grads:
        replaced = _as_tuple(replaced)
        if len(replaced) != count:
            raise RuntimeError(
                f"{type(self.module).__name__} backward {kind} returned an invalid number of "
                f"{what}, got {len(replaced)}, but expected {count}"
            )
        return replaced


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)
