"""``LambdaCallback``: a callback made of plain functions."""

from __future__ import annotations

from typing import Callable

from tensorweaver.training.callbacks.base import HOOKS, Callback


class LambdaCallback(Callback):
    """A callback whose hooks are the functions given by hook name, e.g.
    ``LambdaCallback(on_epoch_end=lambda state: print(state.logs))``; each takes the
    :class:`RunState` (``on_exception`` also the exception)."""

    def __init__(self, **hooks: Callable[..., None]) -> None:
        for name, fn in hooks.items():
            if name not in HOOKS:
                raise TypeError(
                    f"LambdaCallback: unknown hook {name!r}; the hooks are {list(HOOKS)}"
                )
            if not callable(fn):
                raise TypeError(f"LambdaCallback: {name} must be callable, got {fn!r}")
            setattr(self, name, fn)
