"""tw.save replaces a file atomically, and what a killed save leaves the next save removes.

The savers here are real child processes, killed with SIGKILL or paused with SIGSTOP in the
middle of a save.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import serialization as ser

posix_only = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")

# Saves {"w": 4M float32 values, "step": i} to argv[1] for i = 1, 2, ... until killed.
SAVER = """
import sys
import tensorweaver as tw
from tensorweaver import serialization as ser
w = tw.randn(4_000_000)
print("ready", flush=True)
step = 0
while True:
    step += 1
    ser.save({"w": w, "step": step}, sys.argv[1])
"""


def others(path: Path) -> list[str]:
    """The directory's entries besides ``path``."""
    return sorted(p.name for p in path.parent.iterdir() if p.name != path.name)


def writing(path: Path) -> bool:
    """Whether a save to ``path`` is writing its file (past setting up its temporary)."""
    return any((path.parent / name / path.name).exists() for name in others(path))


def saver_caught_mid_save(path: Path, stop: signal.Signals) -> subprocess.Popen:
    """A child saving to ``path`` in a loop, sent ``stop`` while it writes its temporary."""
    for _ in range(5):
        child = subprocess.Popen([sys.executable, "-c", SAVER, str(path)], stdout=subprocess.PIPE)
        assert child.stdout.readline() == b"ready\n"
        deadline = time.monotonic() + 60
        while not writing(path) and time.monotonic() < deadline:
            time.sleep(0.0005)
        os.kill(child.pid, stop)
        if writing(path):
            return child
        os.kill(child.pid, signal.SIGKILL)  # it finished that save just in time: again
        child.wait()
    pytest.fail("never caught the saver with its temporary on disk")


@posix_only
def test_a_killed_save_leaves_what_the_next_save_removes(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.safetensors"
    ser.save({"w": tw.zeros(3)}, path)
    child = saver_caught_mid_save(path, signal.SIGKILL)
    child.wait()
    assert others(path), "the kill left the partial save behind"
    (tmp_path / ".ckpt.safetensors.notes").write_text("not ours")
    loaded = ser.load(path)  # the old file or one whole save of the child's
    assert loaded["w"].shape in ((3,), (4_000_000,))
    ser.save({"w": tw.ones(2)}, path)
    assert others(path) == [".ckpt.safetensors.notes"], "removed: the leftover, not the rest"
    np.testing.assert_array_equal(ser.load(path)["w"].numpy(), [1.0, 1.0])


@posix_only
def test_a_live_save_is_left_alone_and_completes(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.safetensors"
    child = saver_caught_mid_save(path, signal.SIGSTOP)
    try:
        paused = others(path)
        ser.save({"w": tw.ones(2), "step": 0}, path)  # a concurrent save to the same path
        assert set(paused) <= set(others(path)), "the paused save's temporary was kept"
        os.kill(child.pid, signal.SIGCONT)
        deadline = time.monotonic() + 60
        while set(paused) & set(others(path)) and time.monotonic() < deadline:
            time.sleep(0.001)
        assert not set(paused) & set(others(path)), "the resumed save cleaned up after itself"
        assert child.poll() is None, "and did not fail"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert ser.load(path)["step"] >= 1, "the file is the child's, saved after ours"


@posix_only  # and flock
def test_a_leftover_from_before_its_lock_is_removed(tmp_path: Path) -> None:
    # A save killed between creating its directory and its lock file leaves it empty.
    path = tmp_path / "ckpt"
    (tmp_path / ".ckpt.tw-tmp-k1ll3d").mkdir()
    ser.save({"w": tw.ones(1)}, path)
    assert others(path) == []


def test_failed_write_leaves_the_old_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ckpt.safetensors"
    ser.save({"w": tw.ones(3)}, path)
    before = path.read_bytes()

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="No space"):
        ser.save({"w": tw.zeros(1000)}, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert others(path) == [], "no temporary file is left"
    np.testing.assert_array_equal(ser.load(path)["w"].numpy(), np.ones(3, np.float32))


def test_overwrite_replaces_the_file_and_keeps_the_umask_mode(tmp_path: Path) -> None:
    path = tmp_path / "ckpt.safetensors"
    ser.save({"w": tw.ones(3)}, path)
    ser.save({"w": tw.full((2,), 5.0)}, path)
    np.testing.assert_array_equal(ser.load(path)["w"].numpy(), [5.0, 5.0])
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
