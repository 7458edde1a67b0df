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


def is_random(name: str) -> bool:
    """Whether the backend primitive ``name`` draws from the backend's generator."""
    return any(word in name for word in ("random", "dropout", "rnn"))


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
