"""A backend object refuses calls from threads other than the one that started Legate.

Legate runs the Python program as the implicit top-level task Legion bound to the thread
that started the runtime: a cuPyNumeric call from any other thread aborts the whole process
(SIGABRT, "LEGION API USAGE EXCEPTION: Invalid task context passed to runtime call" or
"Creating a Future from a buffer is only permitted ... inside of Legion tasks"), as
``(x + 1).sum()`` in a ``threading.Thread`` did. Each primitive, and making the backend,
raises a RuntimeError there instead (about 0.4 us a call). An exception leaving a
primitive drops the variables of cuPyNumeric's frames in its traceback (see
:mod:`.deferred_frees`: frees in other threads).
"""

from __future__ import annotations

import threading

from tensorweaver.contract.ir import COMPOSITES, OPTIONAL, REQUIRED

from tensorweaver_cunumeric.deferred_frees import drop_legate_locals
from tensorweaver_cunumeric.stream import STATE


def check_thread(owner: int, device: str, name: str) -> None:
    """Raise RuntimeError unless this is the thread ``owner`` (that started Legate)."""
    if threading.get_ident() != owner:
        raise RuntimeError(
            f"{device}: {name}: cuPyNumeric can only be called from the thread that started "
            f"Legate (thread id {owner}, not {threading.get_ident()}): Legion aborts the "
            "process on a call from any other thread. Compute on cuPyNumeric tensors in that "
            "thread, or move them to the host there first (tensor.to('numpy'))."
        )


def refuse_in_other_threads(backend: object, owner: int) -> None:
    """Make ``backend``'s primitives raise when called from a thread other than ``owner``
    (but the random stream's state, which makes no Legate call)."""
    for name in (*REQUIRED, *OPTIONAL, *COMPOSITES):
        method = getattr(backend, name, None)
        if callable(method) and name not in STATE:
            setattr(backend, name, _guarded(method, owner, backend.device.name, name))


def _guarded(method, owner: int, device: str, name: str):
    def guarded(*args, **kwargs):
        if threading.get_ident() != owner:
            check_thread(owner, device, name)
        try:
            return method(*args, **kwargs)
        except BaseException as exc:
            drop_legate_locals(exc)
            raise

    guarded.__name__ = guarded.__qualname__ = name
    return guarded
