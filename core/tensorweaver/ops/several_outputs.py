"""One graph node for all the pieces of ``unbind``, ``split`` and ``chunk``, as PyTorch's
UnbindBackward0 / SplitBackward0 / SplitWithSizesBackward0: every piece's ``grad_fn`` is
that node, whose hooks see every piece's gradient, and whose rule runs once per backward,
joining the pieces' gradients (zeros for a piece that got none) by one ``stack`` or ``cat``.

The node is an autograd.Function's node (autograd/function.py: a call with several
outputs), recorded here without ``Function.apply``'s general bookkeeping: these ops run on
every step of a model (an LSTM's gates, attention's q, k and v). :func:`two_outputs` and
:func:`several_outputs` record one node for ops of several differentiable outputs the same
way (var_mean; a convolution's create_graph gradients, PyTorch's
ConvolutionBackwardBackward0).
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

from tensorweaver.autograd.function import Function, FunctionCtx, _SavedOutput, _watched
from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS, InputShape, Node, output_node
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
    ``label``, where ``x`` requires grad in grad mode (else they stay without history).
    ``dim`` is kept as the caller gave it, negative too (PyTorch's node saves it so)."""
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
        piece._requires_grad = True


def cut_pieces(x: Tensor, natives: list, dim: int, stacked: bool, label: str) -> tuple:
    """The tensors over ``natives`` (``x``'s pieces along ``dim``), recorded as one node."""
    backend, dtype = x.backend, x.dtype
    pieces = [Tensor(native, backend, dtype) for native in natives]
    record_pieces(x, pieces, dim, stacked, label)
    return tuple(pieces)


class _TwoOutputs(Function):
    """The rule of one node for an op of one input and two differentiable outputs
    (var_mean, std_mean, aminmax), as PyTorch's: ``ctx.rule(x, *saved outputs, *grads)``
    (a None gradient: that output was not used); where that gives None, ``ctx.compute`` is
    differentiated again on the input."""

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> tuple:
        from tensorweaver.autograd.engine import grad
        from tensorweaver.autograd.mode import enable_grad

        saved = ctx.saved_tensors
        found = ctx.rule(*saved, *grads)
        if found is not None:
            return (found,)
        x = saved[0]
        create_graph = is_grad_enabled()
        with enable_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (forward warned already: no degrees of freedom)
            # (a stand-in: its graph reaches x under create_graph, not otherwise)
            stand = x.view_as(x) if create_graph else x.detach().requires_grad_()
            outputs = ctx.compute(stand)
        used = [(o, g) for o, g in zip(outputs, grads) if g is not None]
        found = grad([o for o, _ in used], stand, [g for _, g in used], create_graph=create_graph)
        return (found[0],)


def two_outputs(label: str, x: Tensor, compute: Any, rule: Any, saves: tuple) -> tuple:
    """``compute(x)``'s two outputs, recorded where ``x`` requires grad in grad mode as one
    node named ``label`` (see :class:`_TwoOutputs`), which saves ``x`` (its version checked
    as any node's input) and the outputs ``saves`` names, as PyTorch's node saves them (a
    change of such an output in place is refused by its label: node.py SAVES_OUTPUT)."""
    if not x.requires_grad or not is_grad_enabled():
        return compute(x)
    with no_grad():  # (the outputs' own nodes are not needed: this node's rule is theirs)
        outputs = compute(x)
    if x._inference:
        from tensorweaver.ops.apply import all_inference

        if all_inference((x,)):
            return outputs  # (PyTorch's autograd skips an op of inference tensors alone)
    ctx = FunctionCtx((True,))
    ctx.compute, ctx.rule = compute, rule
    ctx.materialize_grads = False
    # The saved outputs as their arrays (the outputs themselves would keep their own node
    # alive through it), handed back attached to their nodes, as a Function's.
    ctx._saved = (x, *(_SavedOutput(i, outputs[i]) for i in saves))
    # x changed in place before backward (or a base it is a view of) is refused on reading
    ctx._versions, ctx._name = _watched((x,), []), label.removesuffix("Backward0")
    shapes = tuple([InputShape(o) for o in outputs])
    group = Node("function", (x,), (_TwoOutputs, ctx, (x,), None, shapes))
    group.label = label
    for i, out in enumerate(outputs):
        node = output_node("function", group, shapes[i], (_TwoOutputs, ctx, None, i, 2))
        node.label = label
        out._node = node
        out._requires_grad = True
    ctx._nodes = [weakref.ref(out._node) for out in outputs]
    if SAVED_TENSORS_HOOKS:  # (its pack sees x and the saved outputs, as PyTorch's)
        ctx._pack(list(outputs))
    return outputs


class _Outputs(Function):
    """The rule of one node for an op of several inputs and several differentiable outputs
    recorded by :func:`several_outputs`: ``ctx.rule(ctx, *grads)`` (a None gradient: that
    output was not used, or not computed) returns one gradient per input."""

    _well_formed = True  # (its rule returns one gradient per input: no checks to pay for)

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> tuple:
        return ctx.rule(ctx, *grads)


class _OutputsCtx(FunctionCtx):
    """A :class:`_Outputs` node's context: ``state`` (what its rule keeps beside the saved
    tensors) goes with them when backward frees the node."""

    def _release(self) -> None:
        super()._release()
        self.state = None


def several_outputs(label: str, inputs: tuple, outputs: list, rule: Any, state: Any) -> None:
    """Attach ``outputs`` (new tensors; None for one the op did not compute) to one node named
    ``label`` whose inputs are ``inputs`` (tensors), where one of them requires grad in grad
    mode, as PyTorch's node for an op of several outputs (each output's ``output_nr`` its
    position). The node saves ``inputs`` (their versions checked when its backward reads
    them; under ``saved_tensors_hooks`` packed in their order, read back as unpack gives
    them, unchecked) and ``state`` (``ctx.state``); its rule is ``rule(ctx, *grads)``, one
    gradient per output."""
    if not is_grad_enabled() or not any(t.requires_grad for t in inputs):
        return
    ctx = _OutputsCtx(tuple([t.requires_grad for t in inputs]))
    ctx.rule, ctx.state = rule, state
    ctx.materialize_grads = False
    ctx._saved, ctx._name = inputs, label.removesuffix("Backward0")
    ctx._versions = _watched(inputs, [])
    count = len(outputs)
    shapes = tuple([None if out is None else InputShape(out) for out in outputs])
    group = Node("function", inputs, (_Outputs, ctx, inputs, None, shapes))
    group.label = label
    for i, out in enumerate(outputs):
        if out is None:
            continue
        node = output_node("function", group, shapes[i], (_Outputs, ctx, None, i, count))
        node.label = label
        out._node = node
        out._requires_grad = True
        ctx._nodes.append(weakref.ref(node))
    if SAVED_TENSORS_HOOKS:
        ctx._pack(outputs)
