"""``tw.compiler``'s public helpers under PyTorch's names: ``disable`` and ``is_compiling``.

``tw.compile`` records the backend primitives a step reaches and replays them; it has no
graph breaks. So a ``disable``-d function called inside a compiled step is recorded with the
rest (its results are as eager; its Python side effects, such as logging, happen only on
the calls that trace), and compiling a ``disable``-d function itself runs it eagerly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from tensorweaver.compiler import compiled

__all__ = ["disable", "is_compiling", "is_dynamo_compiling"]


def disable(
    fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None
) -> Any:
    """Mark ``fn`` to run eagerly under ``tw.compile`` (also ``@disable`` and
    ``@disable(reason=...)``); see the module for what that means inside a compiled step."""

    def mark(f: Callable) -> Callable:
        @functools.wraps(f)
        def eager(*args: Any, **kwargs: Any) -> Any:
            return f(*args, **kwargs)

        setattr(eager, compiled.DISABLED, True)
        return eager

    return mark if fn is None else mark(fn)


def is_compiling() -> bool:
    """Whether a ``tw.compile``-d function is being traced now (its Python code runs only
    then: a replay runs the recorded primitives)."""
    return bool(compiled._tracing)


def is_dynamo_compiling() -> bool:
    """:func:`is_compiling` (PyTorch's name for its Dynamo tracer)."""
    return is_compiling()
