"""Random draws a replay made before a guard on a read value stopped it.

When a replay stops at a guard (:class:`.reads.Branch`), whatever runs the step next (the
graph of the path taken, or a trace) starts again from the first call. Its random
primitives (dropout masks, ``random_normal``) are then handed the arrays the stopped replay
drew, in order, instead of drawing again, so the backend's generator advances once per
draw, as in the eager step: the calls before the guard are the same on every path.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

#: Recurrent kernels, whose trailing static arguments are (..., mode, num_layers,
#: bidirectional, has_bias, dropout, training), as the IR's ``rnn`` composite.
_RECURRENT = frozenset({"fused_rnn", "fused_rnn_packed"})


def is_random(name: str, args: tuple = ()) -> bool:
    """Whether a call of the backend primitive ``name`` on ``args`` draws from the backend's
    generator. A recurrent kernel draws only for dropout between layers in training; without
    its arguments it counts as drawing."""
    if name in _RECURRENT:
        if len(args) < 6:
            return True
        return bool(args[-2] and args[-1] and args[-5] > 1)
    return "random" in name or "dropout" in name


class Draws:
    """The draws of the current replay, and those to hand back before drawing anew."""

    def __init__(self) -> None:
        self.made: list[Any] = []
        self.queued: deque[Any] = deque()

    def draw(self, primitive: Callable, *args: Any, **kwargs: Any) -> Any:
        """``primitive(*args, **kwargs)``, or the next queued draw."""
        result = self.queued.popleft() if self.queued else primitive(*args, **kwargs)
        self.made.append(result)
        return result

    def again(self) -> None:
        """Queue the draws made so far, for the run that starts the step again."""
        self.queued = deque(self.made)
        self.made = []

    def clear(self) -> None:
        self.made = []
        self.queued.clear()


#: The draws of the replay in progress (replays do not nest: a compiled function called
#: while another is traced runs eagerly).
DRAWS = Draws()
