"""cuPyNumeric arrays whose last reference drops in another thread are freed in Legate's.

Freeing an array's Legate store is a Legion runtime call, which only the thread that
started Legate may make (see :mod:`.threads`): an array whose last reference dropped in any
other thread (a ``threading.Thread``, a ``ThreadPoolExecutor`` worker, a ``multiprocessing``
queue's feeder thread), whether that thread began before Legate or after, crashed the
process (SIGSEGV in liblegion), and one that Python's cycle collector freed there aborted
it. Legion's way to bind another thread to the program's top-level task is C++ only, and
binds one thread at a time.

So ``cupynumeric.ndarray`` gets a finalizer: in another thread it keeps what the array holds
of Legate (its thunk, whose store is the Legion object) alive in a queue, and Legate's thread
frees the queue the next time it frees an array, or when Legate shuts down. The array
itself is not kept (resurrected), and gives its thunk up: Python runs a finalizer once per
object, so an array in a reference cycle that outlived its finalizer would be freed by a later
collection in any thread with no finalizer left to run. In Legate's thread it costs one
Python call per array freed (well under a microsecond; a cuPyNumeric op costs hundreds).
Arrays freed inside a Legate task (a Python task, on a processor thread) are freed there.

The stores and thunks beneath an array have no Python finalizer to give (the stores are
Cython objects): an exception raised inside cuPyNumeric keeps them in its frames' variables,
and one caught and kept in a reference cycle (``except E as e`` stored in a frame of its own
traceback, as ``pytest.raises`` does) would have the collector free them in whatever thread
it next runs. :func:`drop_legate_locals` clears those frames' variables as the exception
leaves a backend primitive.
"""

from __future__ import annotations

import atexit
import threading

#: The Legate objects of arrays whose last reference dropped outside Legate's thread, each
#: array's in a list, waiting to be freed there.
_pending: list = []
#: The attributes of a cuPyNumeric array that hold Legate objects (cuPyNumeric 26.06).
_LEGATE_HELD = ("_thunk", "_legate_data")
#: Packages whose frames may hold Legate stores.
_LEGATE_PACKAGES = frozenset({"cupynumeric", "cunumeric", "legate"})


def free_in_legate_thread(ndarray: type, owner: int) -> None:
    """Give ``ndarray`` (cuPyNumeric's array class) the finalizer above, for Legate's thread
    ``owner``; once per process, after Legate started (importing legate starts it)."""
    if "__del__" in vars(ndarray):  # installed already (or cuPyNumeric has its own)
        return
    import legate.core as lc

    get_ident = threading.get_ident
    # Legate 26.06 has a task test and shutdown callbacks; older releases may lack them.
    is_running_in_task = getattr(lc, "is_running_in_task", lambda: False)

    def __del__(self) -> None:
        if get_ident() != owner:
            if not is_running_in_task():
                # taken, not copied: CPython (3.11) keeps a whole cycle of garbage that a
                # finalizer made reachable, and frees it at a later collection (in any
                # thread) without finalizers; the array's own attributes alone (a user's
                # may refer back to it)
                held = vars(self)
                _pending.append([held.pop(name) for name in _LEGATE_HELD if name in held])
        elif _pending:
            release()

    def release() -> None:
        """Free what the queued arrays held (in Legate's thread only; each pop is atomic, so
        what other threads queue meanwhile waits for the next call)."""
        if get_ident() == owner:
            while _pending:
                _pending.pop()

    ndarray.__del__ = __del__
    runtime = lc.get_legate_runtime()
    if hasattr(runtime, "add_shutdown_callback"):
        runtime.add_shutdown_callback(release)  # runs before the runtime shuts down
    else:
        atexit.register(release)


def pending() -> int:
    """How many arrays' Legate objects wait to be freed in Legate's thread."""
    return len(_pending)


def drop_legate_locals(exc: BaseException) -> None:
    """Clear the variables of cuPyNumeric's and Legate's frames in the tracebacks of ``exc``
    and of the exceptions it was raised from or during (see above)."""
    todo, seen = [exc], set()
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        tb = e.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            if frame.f_globals.get("__name__", "").partition(".")[0] in _LEGATE_PACKAGES:
                try:
                    frame.clear()
                except RuntimeError:  # still running (a frame of this thread's stack)
                    pass
            tb = tb.tb_next
        todo += (e.__cause__, e.__context__)
