"""A backend object in a process forked from the one that started Legate refuses every call.

Legate's runtime (its threads, its task queues) does not survive ``fork``: in the child, the
first cuPyNumeric call waits for ever on threads that are not there. A ``DataLoader`` worker
(forked on Linux) that indexes a dataset of cuPyNumeric tensors hung that way. As PyTorch
does for CUDA in a forked child, each primitive raises a RuntimeError there instead.
"""

from __future__ import annotations

import os
import weakref

from tensorweaver.contract.ir import COMPOSITES, OPTIONAL, REQUIRED

from tensorweaver_cunumeric.stream import STATE


def refuse_in_forked_children(backend: object) -> None:
    """Make ``backend``'s primitives raise in any child this process forks from now on."""
    if not hasattr(os, "register_at_fork"):  # no fork on this platform
        return
    ref = weakref.ref(backend)  # a registered fork hook lives as long as the process

    def in_child() -> None:
        alive = ref()
        if alive is not None:
            _refuse_calls(alive)

    os.register_at_fork(after_in_child=in_child)


def _refuse_calls(backend: object) -> None:
    for name in (*REQUIRED, *OPTIONAL, *COMPOSITES):
        if callable(getattr(backend, name, None)) and name not in STATE:
            setattr(backend, name, _refusal(backend.device.name, name))
    # A DataLoader worker seeds every backend's stream (tw.manual_seed), and fork_rng and
    # vmap read and set their states: that must not fail, and nothing can draw from this
    # one here anyway.
    backend.seed = _ignore_seed


def _ignore_seed(value: int) -> None:
    """``seed`` in a forked child: no stream to seed."""


def _refusal(device: str, name: str):
    def refused(*args, **kwargs):
        raise RuntimeError(
            f"{device}: {name}: cuPyNumeric cannot run in a process forked from the one that "
            "started Legate (its runtime does not survive fork). In a DataLoader, keep the "
            "dataset's tensors on the host (device 'numpy'; the loader moves each batch to "
            "the default device) or use num_workers=0."
        )

    return refused
