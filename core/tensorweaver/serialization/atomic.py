"""Replace a file atomically, so that what a killed writer leaves behind the next one removes.

A save writes into a fresh hidden directory beside the target, ``.{name}.tw-tmp-XXXXXXXX``
(one per save, so concurrent savers never share one), fsyncs the file, renames it over the
target (readers see the old file or the whole new one) and removes the directory. While it
works it holds an exclusive ``flock`` on the directory's ``lock`` file; the kernel drops the
lock when the process dies, however it dies. Each save first removes the directories of its
target whose lock it can take: those of writers that were killed. The library writes inside
the directory too (its own temporary file lands beside ours), so nothing of a killed save is
left outside it.

Where the file system or platform has no ``flock`` (Windows; some network file systems), a
save still works, but a killed save's directory is never removed: its lock cannot be tested.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Callable

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

_INFIX = ".tw-tmp-"
_LOCK = "lock"
# This process's own directories in use: where flock is emulated with POSIX locks (NFS), which
# are per process, another thread's sweep could take their lock.
_MINE: set[str] = set()


def write_atomic(path: str, write: Callable[[str], None]) -> None:
    """Make ``path`` hold what ``write(tmp)`` writes to the file ``tmp``, atomically.

    On any error ``path`` is untouched and the temporary directory removed. The new file gets
    the mode a file created with ``open(path, "w")`` gets (0o666 less the umask).
    """
    directory, name = os.path.split(os.path.abspath(path))
    prefix = f".{name}{_INFIX}"
    _remove_stale(directory, prefix)
    tmpdir, lock = _locked_tempdir(directory, prefix)
    _MINE.add(tmpdir)
    try:
        tmp = os.path.join(tmpdir, name)
        # Created here, not by the library (which creates 0o600), for the umask's mode.
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        mode = os.stat(tmp).st_mode & 0o7777
        write(tmp)
        os.chmod(tmp, mode)
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
        _MINE.discard(tmpdir)
        os.close(lock)
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _locked_tempdir(directory: str, prefix: str) -> tuple[str, int]:
    """A fresh temporary directory and the descriptor holding its lock."""
    while True:
        tmpdir = tempfile.mkdtemp(prefix=prefix, dir=directory)
        lock = os.path.join(tmpdir, _LOCK)
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:  # another save's sweep removed it before it was locked
            continue
        _lock(fd, blocking=True)
        try:
            if os.path.samestat(os.fstat(fd), os.stat(lock)):
                return tmpdir, fd
        except FileNotFoundError:
            pass
        os.close(fd)  # swept between creation and locking: start again


def _remove_stale(directory: str, prefix: str) -> None:
    """Remove the temporary directories of ``prefix`` whose writer is gone."""
    with os.scandir(directory) as entries:
        found = [
            e.path for e in entries if e.name.startswith(prefix) and e.is_dir(follow_symlinks=False)
        ]
    for tmpdir in found:
        if tmpdir in _MINE:
            continue
        try:
            # O_CREAT: a writer killed before it made its lock file left no lock to test.
            fd = os.open(os.path.join(tmpdir, _LOCK), os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:  # gone already, or another user's
            continue
        try:
            if _lock(fd, blocking=False):
                shutil.rmtree(tmpdir, ignore_errors=True)
        finally:
            os.close(fd)


def _lock(fd: int, *, blocking: bool) -> bool:
    """Take the exclusive lock on ``fd``; False if another process holds it or locks are
    unsupported here."""
    if fcntl is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except OSError:  # BlockingIOError: held by a live writer; others: no locks on this FS
        return False
    return True
