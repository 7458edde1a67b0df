"""A step called several times with a value it reads changed once between two calls: under
``tw.compile`` for tensorweaver, eagerly for torch (which ``torch.compile`` must equal), so
a compiled step that keeps the value it traced gives other results than torch's."""

from __future__ import annotations

from typing import Any, Callable, Optional

import tensorweaver as tw


def compiled_calls(
    m: Any, step: Callable, change: Callable[[], Any], calls: int = 6, x: Optional[Any] = None
) -> list:
    """``step(x)`` ``calls`` times (``x``: float64 ``ones(2)`` unless given), compiled
    under tw; ``change()`` before the fifth call, once the traced graph is replayed."""
    f = tw.compile(step) if m is tw else step
    got = []
    for i in range(calls):
        if i == 4:
            change()
        got.append(f(m.ones(2, dtype=m.float64) if x is None else x))
    return got
