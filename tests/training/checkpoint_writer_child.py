"""Writes fit's checkpoint file over and over, for the atomicity test (killed while writing).

    python checkpoint_writer_child.py DIRECTORY [--stall-in-rename | --stall-in-write]

Version ``i`` holds ``i`` and a 1M-element float32 tensor filled with ``i``; ``saved i`` is
printed once it is in place. With a ``--stall-*`` option the second write stops, printing
``stalled``, until it is killed: just before the finished temporary file is renamed over the
checkpoint, or after half of the temporary file is written.
"""

from __future__ import annotations

import os
import sys
import time

import safetensors
import tensorweaver as tw
from tensorweaver.training.checkpoint import store


def _stall() -> None:
    print("stalled", flush=True)
    time.sleep(600)


def _stall_in_rename(real):
    def replace(src, dst):
        _stall()
        real(src, dst)

    return replace


def _stall_in_write(real):
    def serialize_file(entries, path, metadata=None):
        real(entries, path, metadata=metadata)
        with open(path, "r+b") as f:  # keep half of what was written, as a kill would
            f.truncate(os.path.getsize(path) // 2)
        _stall()

    return serialize_file


def main() -> None:
    directory = sys.argv[1]
    stall = sys.argv[2] if len(sys.argv) > 2 else None
    with tw.device("numpy"):
        for i in range(1_000_000):
            if i == 1 and stall == "--stall-in-rename":
                os.replace = _stall_in_rename(os.replace)
            if i == 1 and stall == "--stall-in-write":
                safetensors.serialize_file = _stall_in_write(safetensors.serialize_file)
            store.write(directory, {"version": i, "weights": tw.full((1_000_000,), float(i))})
            print(f"saved {i}", flush=True)


if __name__ == "__main__":
    main()
