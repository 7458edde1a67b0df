"""File objects for ``tw.save`` / ``tw.load``: what PyTorch accepts besides a path, checked.

``save`` takes anything with ``write`` (``io.BytesIO``, a file opened ``"wb"``) and writes the
whole file in one call once it is complete, so an error while serializing writes nothing.
``load`` takes anything with ``read`` (``io.BytesIO``, a file opened ``"rb"``) and reads from
the current position to the end, into memory: a large checkpoint loads with less memory from a
path.
"""

from __future__ import annotations

import io
import os
from typing import Any


def is_path(f: Any) -> bool:
    """Whether ``f`` names a file rather than being a file object."""
    return isinstance(f, (str, os.PathLike))


def label(f: Any) -> str:
    """How errors name the file object ``f``: its file name, or its type."""
    name = getattr(f, "name", None)
    return repr(name) if isinstance(name, str) else f"<{type(f).__name__}>"


def check_writer(f: Any) -> None:
    """Raise unless ``f`` is a binary file object open for writing."""
    _check(f, "tw.save", "write", "wb")


def write_all(f: Any, blob: bytes) -> None:
    """Write ``blob`` to the binary file object ``f`` and flush it."""
    view = memoryview(blob)
    while view:
        n = f.write(view)
        if n is None or n >= len(view):  # None: a writer that does not count (it took all)
            break
        if n <= 0:
            raise OSError(f"tw.save: {label(f)} accepted no more bytes ({len(view)} unwritten)")
        view = view[n:]
    flush = getattr(f, "flush", None)
    if callable(flush):
        flush()


def read_all(f: Any) -> bytes:
    """Everything from ``f``'s position to its end, checked to be bytes."""
    _check(f, "tw.load", "read", "rb")
    data = f.read()
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(
            f"tw.load: {label(f)}.read() returned {type(data).__name__}, not bytes; open the "
            "file in binary mode ('rb')"
        )
    return bytes(data)


def _check(f: Any, who: str, method: str, mode: str) -> None:
    if isinstance(f, io.TextIOBase):
        raise TypeError(
            f"{who}: {label(f)} is a text-mode file; open it in binary mode ({mode!r}) or pass "
            "its path"
        )
    if not callable(getattr(f, method, None)):
        raise TypeError(
            f"{who}: f must be a path (str or os.PathLike) or a binary file object with "
            f"{method}(), got {type(f).__name__}"
            + ("; wrap bytes in io.BytesIO" if isinstance(f, (bytes, bytearray)) else "")
        )
    able = getattr(f, "writable" if method == "write" else "readable", None)
    if callable(able) and not able():
        raise io.UnsupportedOperation(
            f"{who}: {label(f)} is not open to {method}; open it with mode {mode!r}"
        )
