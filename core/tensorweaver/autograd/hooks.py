"""Gradient hooks: ``Tensor.register_hook``, ``Tensor.register_post_accumulate_grad_hook``
and the graph nodes' ``grad_fn.register_prehook``/``grad_fn.register_hook``.

A hook on a non-leaf belongs to the node that made it (the engine meets that node's summed
gradient); a hook on a leaf belongs to the leaf; a node hook to its node (a pre-hook sees
the gradients of the node's outputs, a post-hook also what its rule computed for its inputs).
All live in tables keyed by the owner's id, emptied when the owner dies, so the engine pays
one empty-dict test when no hook is set.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable

from tensorweaver.autograd.node import Node

#: id(node or leaf) -> {handle id: hook(grad) -> grad or None}
GRAD_HOOKS: dict[int, dict[int, Callable]] = {}
#: id(leaf) -> {handle id: hook(tensor) -> None}, run once ``.grad`` has been updated
POST_ACCUMULATE_HOOKS: dict[int, dict[int, Callable]] = {}
_ids = itertools.count()


class RemovableHandle:
    """What registering a hook returns: ``handle.remove()`` unregisters it."""

    def __init__(self, table: dict, key: int, hook_id: int) -> None:
        self._table, self._key, self.id = table, key, hook_id

    def remove(self) -> None:
        hooks = self._table.get(self._key)
        if hooks is not None:
            hooks.pop(self.id, None)
            if not hooks:
                del self._table[self._key]

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _add(table: dict, owner: Any, hook: Callable) -> RemovableHandle:
    key = id(owner)
    hooks = table.get(key)
    if hooks is None:
        hooks = table[key] = {}
        weakref.finalize(owner, table.pop, key, None)
    hook_id = next(_ids)
    hooks[hook_id] = hook
    return RemovableHandle(table, key, hook_id)


def register_hook(t: Any, hook: Callable) -> RemovableHandle:
    """Call ``hook(grad)`` each time the gradient of ``t`` is computed; a tensor it returns
    replaces that gradient."""
    if not t.requires_grad:
        raise RuntimeError(
            "register_hook: cannot register a hook on a tensor that doesn't require gradient; "
            "call .requires_grad_() on the leaf first"
        )
    return _add(GRAD_HOOKS, t._node if t._node is not None else t, hook)


def register_post_accumulate_grad_hook(t: Any, hook: Callable) -> RemovableHandle:
    """Call ``hook(t)`` after backward has accumulated into ``t.grad`` (leaves only)."""
    if not t.requires_grad:
        raise RuntimeError(
            "register_post_accumulate_grad_hook: cannot register a hook on a tensor that "
            "doesn't require gradient"
        )
    if t._node is not None:
        raise RuntimeError(
            "register_post_accumulate_grad_hook: post accumulate grad hooks cannot be "
            "registered on non-leaf tensors"
        )
    return _add(POST_ACCUMULATE_HOOKS, t, hook)


def run_hooks(hooks: dict[int, Callable], g: Any) -> Any:
    """``g`` passed through ``hooks`` in registration order, each seeing the last's result."""
    from tensorweaver.tensor import Tensor  # (tensor.py imports this module's tables)

    for hook in list(hooks.values()):
        result = hook(g)
        if result is not None:
            if not isinstance(result, Tensor):
                raise TypeError(
                    f"expected Variable, but hook {_name(hook)!r} returned "
                    f"{type(result).__name__!r}"
                )
            g = _checked(hook, result, g)
    return g


def _name(hook: Callable) -> Any:
    return getattr(hook, "__name__", hook)


def _checked(hook: Callable, result: Any, g: Any) -> Any:
    """``result``, which ``hook`` returned in place of the gradient ``g``, if it keeps its
    dtype, device, layout and shape, as PyTorch requires of a hook's result."""
    if (
        result.dtype is not g.dtype
        or result.backend is not g.backend
        or result.is_sparse is not g.is_sparse
    ):
        raise RuntimeError(
            f"hook {_name(hook)!r} has changed the type of value (was {g.dtype.name} "
            f"{g.layout.name} on {g.device}, got {result.dtype.name} {result.layout.name} on "
            f"{result.device}): return the gradient in its own dtype, layout and device"
        )
    if result.shape != g.shape:
        raise RuntimeError(
            f"hook {_name(hook)!r} has changed the size of value: "
            f"it returned shape {list(result.shape)} for a gradient of shape "
            f"{list(g.shape)}"
        )
    return result


#: id(node) -> {handle id: hook(grad_outputs) -> grad_outputs or None}: ``Node.register_
#: prehook``, run on the node's summed gradient before its rule (after tensor hooks).
NODE_PREHOOKS: dict[int, dict[int, Callable]] = {}
#: id(node) -> {handle id: hook(grad_inputs, grad_outputs) -> grad_inputs or None}:
#: ``Node.register_hook``, run on what the node's rule computed for each of its inputs.
NODE_POSTHOOKS: dict[int, dict[int, Callable]] = {}


def register_node_hook(node: Any, hook: Callable, *, prehook: bool) -> RemovableHandle:
    """Register ``hook`` on a graph node (``grad_fn.register_hook``/``register_prehook``)."""
    return _add(NODE_PREHOOKS if prehook else NODE_POSTHOOKS, node, hook)


def _replaced(hook: Callable, result: Any, grads: tuple) -> tuple:
    """``grads`` replaced by the tuple a node hook returned (None: unchanged)."""
    if result is None:
        return grads
    if not isinstance(result, tuple):
        raise TypeError(f"expected tuple, but hook returned {type(result).__name__!r}")
    if len(result) != len(grads):
        raise RuntimeError(
            f"hook {_name(hook)!r} has returned an incorrect number of values (got "
            f"{len(result)}, but expected {len(grads)})"
        )
    return tuple(
        r if r is None or g is None else _checked(hook, r, g) for r, g in zip(result, grads)
    )


def run_node_prehooks(hooks: dict[int, Callable], grads: tuple) -> tuple:
    """The gradients of a node's outputs passed through its pre-hooks in order."""
    for hook in list(hooks.values()):
        grads = _replaced(hook, hook(grads), grads)
    return grads


def run_node_posthooks(hooks: dict[int, Callable], grad_inputs: tuple, grads: tuple) -> tuple:
    """The gradients a node computed for its inputs passed through its hooks in order, each
    seeing ``grad_outputs`` too."""
    for hook in list(hooks.values()):
        grad_inputs = _replaced(hook, hook(grad_inputs, grads), grad_inputs)
    return grad_inputs


def bypass_view_hooks(node: Node, made_by: Node) -> None:
    """Where an in-place op changed a view whose value ``made_by`` made, and ``made_by`` has
    tensor or node hooks: the edge of the op's node ``node`` for the view (its first) goes to
    a copy of ``made_by`` without them. PyTorch's CopySlices computes the view's part of the
    base's gradient without the view's old grad_fn, so its hooks run only for the view's
    other uses (tests/tensor/test_reader_r1_session31.py)."""
    if not (
        id(made_by) in GRAD_HOOKS or id(made_by) in NODE_PREHOOKS or id(made_by) in NODE_POSTHOOKS
    ):
        return
    parents = node.parents
    if not parents or parents[0] is not made_by:
        return
    twin = Node.__new__(Node)
    for slot in Node.__slots__:
        if slot != "__weakref__" and hasattr(made_by, slot):
            setattr(twin, slot, getattr(made_by, slot))
    twin.retained = twin.view = None  # (its own grad_fn object; retain_grad stays put)
    node.parents = (twin, *parents[1:])
