"""Gradient hooks: ``Tensor.register_hook`` and ``Tensor.register_post_accumulate_grad_hook``.

A hook on a non-leaf belongs to the node that made it (the engine meets that node's summed
gradient); a hook on a leaf belongs to the leaf. Both live in tables keyed by the owner's id,
emptied when the owner dies, so the engine pays one empty-dict test when no hook is set.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable

from tensorweaver.tensor import Tensor

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
    for hook in list(hooks.values()):
        result = hook(g)
        if result is not None:
            name = getattr(hook, "__name__", hook)
            if not isinstance(result, Tensor):
                raise TypeError(
                    f"expected Variable, but hook {name!r} returned {type(result).__name__!r}"
                )
            if result.dtype is not g.dtype or result.backend is not g.backend:
                raise RuntimeError(
                    f"hook {name!r} has changed the type of value (was {g.dtype.name} on "
                    f"{g.device}, got {result.dtype.name} on {result.device}): return the "
                    "gradient in its own dtype and device"
                )
            if result.shape != g.shape:
                raise RuntimeError(
                    f"hook {name!r} has changed the size of value: "
                    f"it returned shape {list(result.shape)} for a gradient of shape "
                    f"{list(g.shape)}"
                )
            g = result
    return g
