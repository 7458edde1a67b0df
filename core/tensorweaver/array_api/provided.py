"""Namespace functions that exist only where the core has the function they call.

The core grows (inverse trigonometry, ``tw.linalg``, ...); a name here appears in the
namespace as soon as ``tensorweaver`` (or the module ``where`` names) has its core
function, and is absent until then, so ``hasattr(xp, name)`` tells the truth.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable


class Provided:
    """A table of namespace names, each with the core function it needs in module ``where``."""

    def __init__(self, where: str) -> None:
        self._where = where
        self._entries: dict[str, tuple[str, Callable | None]] = {}

    def rename(self, **names: str) -> None:
        """``name=core_name``: the namespace's ``name`` is the core's ``core_name`` itself."""
        for name, core_name in names.items():
            self._entries[name] = (core_name, None)

    def add(self, name: str, core_name: str, wrapper: Callable) -> None:
        """``wrapper`` is the namespace's ``name``, present where ``core_name`` is."""
        self._entries[name] = (core_name, wrapper)

    def needs(self, core_name: str) -> Callable[[Callable], Callable]:
        """Register the decorated wrapper, defined as ``_name`` so that the module has no
        such global, under ``name``; it exists where ``core_name`` does (the wrapper fetches
        it with :meth:`core`)."""

        def register(fn: Callable) -> Callable:
            fn.__name__ = fn.__qualname__ = fn.__name__.lstrip("_")
            self.add(fn.__name__, core_name, fn)
            return fn

        return register

    def _module(self) -> Any:
        try:
            return importlib.import_module(self._where)
        except ModuleNotFoundError:  # a core module still to come
            return None

    def core(self, core_name: str) -> Callable:
        """The core function ``core_name`` of module ``where``, looked up now."""
        return getattr(self._module(), core_name)

    def get(self, name: str) -> Any:
        """The namespace function ``name``; AttributeError where the core lacks it."""
        entry = self._entries.get(name)
        if entry is not None:
            core_name, wrapper = entry
            found = getattr(self._module(), core_name, None)
            if found is not None:
                return found if wrapper is None else wrapper
        raise AttributeError(name)

    def names(self) -> list[str]:
        """The names available now."""
        out = []
        for name in self._entries:
            try:
                self.get(name)
            except AttributeError:
                continue
            out.append(name)
        return out
