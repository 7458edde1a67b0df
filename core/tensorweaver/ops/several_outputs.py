"""One graph node for all the pieces of ``unbind``, ``split`` and ``chunk``, as PyTorch's
UnbindBackward0 / SplitBackward0 / SplitWithSizesBackward0: every piece's ``grad_fn`` is
that node, whose hooks see every piece's gradient, and whose rule runs once per backward,
joining the pieces' gradients (zeros for a piece that got none) by one ``stack`` or ``cat``.

The node is an autograd.Function's node (autograd/function.py: a call with several
outputs), recorded here without ``Function.apply``'s general bookkeeping: these ops run on
every step of a model (an LSTM's gates, attention's q, k and v).
"""

from __future__ import annotations

from tensorweaver.autograd.function import Function, FunctionCtx
from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import InputShape, Node, output_node
from tensorweaver.tensor import Tensor


class _Pieces(Function):
    """The gradient of a tensor cut into pieces along ``ctx.dim``: the pieces' gradients
    stacked (``ctx.stacked``: unbind, which dropped that axis) or concatenated."""

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Tensor) -> Tensor:
        from tensorweaver.ops.movement import cat, stack

        return stack(list(grads), ctx.dim) if ctx.stacked else cat(list(grads), ctx.dim)


def record_pieces(x: Tensor, pieces: list, dim: int, stacked: bool, label: str) -> None:
    """Attach ``pieces`` (new tensors, cut from ``x`` along ``dim``) to one node named
    ``label``, where ``x`` requires grad in grad mode (else they stay without history)."""
    if not x.requires_grad or not is_grad_enabled():
        return
    if x._inference:
        from tensorweaver.ops.apply import all_inference

        if all_inference((x,)):
            return  # (PyTorch's autograd skips an op of inference tensors alone)
    ctx = FunctionCtx((True,))
    ctx.dim, ctx.stacked = dim, stacked
    count = len(pieces)
    # Its input and the pieces are kept as shapes only (the rule reads no value): x is
    # freed once forward is done with it, as PyTorch's node does not save it.
    shapes = tuple([InputShape(p) for p in pieces])
    group = Node("function", (x,), (_Pieces, ctx, (x,), None, shapes))
    group.inputs = (InputShape(x),)
    group.label = label
    for i, piece in enumerate(pieces):
        node = output_node("function", group, shapes[i], (_Pieces, ctx, None, i, count))
        node.label = label
        piece._node = node
        piece.requires_grad = True


def cut_pieces(x: Tensor, natives: list, dim: int, stacked: bool, label: str) -> tuple:
    """The tensors over ``natives`` (``x``'s pieces along ``dim``), recorded as one node."""
    backend, dtype = x.backend, x.dtype
    pieces = [Tensor(native, backend, dtype) for native in natives]
    record_pieces(x, pieces, dim, stacked, label)
    return tuple(pieces)
