"""``vmap``'s ``randomness``: whether the function drew random numbers ("error"), and
giving every batch element the same draws ("same").

A draw moves the default generator or a backend's stream; comparing their states before
and after a call tells whether it drew (for streams whose state a backend can read), and
putting them back before each element's call repeats the same draws.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from tensorweaver import registry
from tensorweaver.random import default_generator, has_state, restore_streams, save_streams

CHOICES = ("error", "different", "same")


def check_randomness(randomness: str) -> None:
    """PyTorch's error for a ``randomness`` that is not one of :data:`CHOICES`."""
    if randomness not in CHOICES:
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. Got "
            f"{randomness}"
        )


def _states() -> tuple[bytes, dict[int, bytes]]:
    """The default generator's state and each stream's that has one (a stream without
    state cannot be read without moving it, so a draw from it goes unnoticed)."""
    streams = {id(b): b.get_rng_state() for b in registry.created_backends() if has_state(b)}
    return default_generator._raw_state(), streams


@contextlib.contextmanager
def forbid_randomness(randomness: str) -> Iterator[None]:
    """Run the block; under ``randomness="error"``, raise PyTorch's RuntimeError if it
    drew random numbers."""
    check_randomness(randomness)
    if randomness != "error":
        yield
        return
    host, streams = _states()
    yield
    after_host, after_streams = _states()
    if after_host != host or any(after_streams.get(k, v) != v for k, v in streams.items()):
        raise RuntimeError(
            "vmap: called random operation while in randomness error mode. Please either "
            "use the 'same' or 'different' randomness flags on vmap or perform the "
            "randomness operation out of vmap"
        )


class SameDraws:
    """Puts the random streams back before each element's call but the first, so that
    every element sees the same draws (``randomness="same"``)."""

    def __init__(self) -> None:
        self.saved = save_streams(registry.created_backends(), "vmap")

    def rewind(self) -> None:
        restore_streams(self.saved)
