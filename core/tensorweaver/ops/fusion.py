"""Whether an op may use a backend's fused kernel: ``fused_kernel`` looks it up, unless the
``reference_only`` block (``tw check``'s reference) asks for the core's decomposition.

Kept apart from ``composite.py`` so the elementwise ops (relu) can import it at load time.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable

_reference_only: ContextVar[bool] = ContextVar("tensorweaver_reference_only", default=False)


@contextmanager
def reference_only() -> Iterator[None]:
    """Within the block (this thread or task), composites run the core's decomposition even
    where the backend fuses them: how ``tw check`` computes its reference."""
    token = _reference_only.set(True)
    try:
        yield
    finally:
        _reference_only.reset(token)


#: ``"fused_" + name`` for each name asked for, built once: an interned attribute name finds
#: the backend's method through CPython's attribute cache (a fresh string walks its classes).
_ATTRIBUTES: dict[str, str] = {}


def fused_kernel(backend: Any, name: str) -> Callable[..., tuple] | None:
    """The backend's ``fused_<name>``, or None where it has none or ``reference_only`` is on."""
    if _reference_only.get():
        return None
    attribute = _ATTRIBUTES.get(name)
    if attribute is None:
        attribute = _ATTRIBUTES[name] = sys.intern("fused_" + name)
    return getattr(backend, attribute, None)


def optional_kernel(backend: Any, name: str) -> Callable[..., Any] | None:
    """The backend's optional primitive ``name`` standing in for a composition of the core's
    (``nll_loss``), or None where it has none or ``reference_only`` is on."""
    if _reference_only.get():
        return None
    return getattr(backend, name, None)
