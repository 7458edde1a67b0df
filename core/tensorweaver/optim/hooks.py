"""Optimizer hooks: around ``step()`` (global and per optimizer) and around state dicts.

As in PyTorch, a step pre-hook is called ``hook(optimizer, args, kwargs)`` (``args``
starts with the optimizer) and may return new ``(args, kwargs)``; a post-hook is called
the same way after the step. Global pre-hooks run before the optimizer's own, global
post-hooks after them.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from itertools import chain
from typing import Any, Callable

from tensorweaver.nn.modules.module import RemovableHandle

#: Hooks every optimizer's step runs (``register_optimizer_step_pre_hook`` and ``_post_``).
GLOBAL_PRE_HOOKS: OrderedDict[int, Callable] = OrderedDict()
GLOBAL_POST_HOOKS: OrderedDict[int, Callable] = OrderedDict()


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` before every optimizer's ``step``."""
    handle = RemovableHandle(GLOBAL_PRE_HOOKS)
    GLOBAL_PRE_HOOKS[handle.id] = hook
    return handle


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Call ``hook(optimizer, args, kwargs)`` after every optimizer's ``step``."""
    handle = RemovableHandle(GLOBAL_POST_HOOKS)
    GLOBAL_POST_HOOKS[handle.id] = hook
    return handle


def add_hook(table: OrderedDict[int, Callable], hook: Callable, prepend: bool) -> RemovableHandle:
    """Put ``hook`` into ``table`` (first if ``prepend``); the handle removes it."""
    handle = RemovableHandle(table)
    table[handle.id] = hook
    if prepend:
        table.move_to_end(handle.id, last=False)
    return handle


def with_step_hooks(step: Callable) -> Callable:
    """``step`` running the step hooks around it (once per call: a subclass's step that
    calls its base class's runs them only in the outermost call)."""
    if getattr(step, "_runs_step_hooks", False):
        return step

    @functools.wraps(step)
    def hooked(self: Any, *args: Any, **kwargs: Any) -> Any:
        pre = getattr(self, "_optimizer_step_pre_hooks", None)
        if pre is None:  # Optimizer.__init__ never ran (timm's Lookahead): torch hooks no such step
            return step(self, *args, **kwargs)
        post = self._optimizer_step_post_hooks
        if not (pre or post or GLOBAL_PRE_HOOKS or GLOBAL_POST_HOOKS) or self.__dict__.get(
            "_in_step_hooks"
        ):
            return step(self, *args, **kwargs)
        args = (self, *args)
        for hook in chain(GLOBAL_PRE_HOOKS.values(), pre.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{hook} must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {result}."
                    )
                args, kwargs = result
        self._in_step_hooks = True
        try:
            out = step(*args, **kwargs)
        finally:
            self._in_step_hooks = False
        for hook in chain(post.values(), GLOBAL_POST_HOOKS.values()):
            hook(self, args, kwargs)
        return out

    hooked._runs_step_hooks = True  # type: ignore[attr-defined]
    return hooked
