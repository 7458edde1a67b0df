"""The backend's random stream, with a state that can be read and set (API 2.5).

A cuPyNumeric ``BitGenerator`` keeps its state inside Legate's tasks (one generator per
processor) and offers no way to read or set it, only a seed. So the stream here is a key
(from ``seed``) and the number of draws made since: draw ``n`` comes from a generator of its
own, seeded with output ``n`` of SplitMix64 started at the key. Those two numbers are the
whole state (16 bytes, little-endian): ``set_rng_state`` puts them back and the draws that
followed repeat exactly, and reading them moves nothing.

The generators are Philox, counter-based: its state is a counter, so a new one costs no
set-up (cuRAND sets XORWOW's per-thread states up on its first draw, a kernel of its own).
cuPyNumeric frees the generators whose Python objects are gone only when a later one is
built with ``forceBuild`` (until then it queues their handles in a tuple that grows with
every draw): every ``FLUSH_EVERY``-th draw's generator is built so, one task more. The
queue is the library's, shared by every backend object in the process.
"""

from __future__ import annotations

import os

#: The state primitives: two Python ints, no Legate call, so any thread and a forked child
#: may call them too (the core reads every backend's state: vmap, fork_rng, checkpoint).
STATE = ("get_rng_state", "set_rng_state")
#: One draw in this many builds its generator with forceBuild, freeing the earlier ones.
FLUSH_EVERY = 256
_MASK = 2**64 - 1
_STATE_BYTES = 16


def _splitmix(start: int, n: int) -> int:
    """Output ``n`` of SplitMix64 started at ``start``, as a nonzero 63-bit seed: it spreads
    nearby values apart, and cuPyNumeric reads seed 0 as "no seed" (a time-based one)."""
    z = (start + (n + 1) * 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return ((z ^ (z >> 31)) >> 1) or 1


class RandomStream:
    """``seed``, ``get_rng_state``/``set_rng_state`` and the generator of each draw."""

    def _start_stream(self, cn) -> None:
        """Start from a fresh non-deterministic key: as the other backends' streams, nothing
        repeats until it is seeded."""
        self._random = cn.random
        self._stream_key = _splitmix(int.from_bytes(os.urandom(8), "little"), 0)
        self._stream_draws = 0

    def seed(self, value):
        self._stream_key = _splitmix(value, 0)
        self._stream_draws = 0

    def get_rng_state(self) -> bytes:
        return self._stream_key.to_bytes(8, "little") + self._stream_draws.to_bytes(8, "little")

    def set_rng_state(self, state: bytes) -> None:
        key = int.from_bytes(state[:8], "little")
        if len(state) != _STATE_BYTES or not 0 < key < 2**63:
            raise ValueError(
                f"set_rng_state on {self.device.name}: a state is {_STATE_BYTES} bytes, a key "
                f"in [1, 2**63) then a draw count; got {len(state)} bytes, key {key}"
            )
        self._stream_key = key
        self._stream_draws = int.from_bytes(state[8:], "little")

    def _next_generator(self):
        """The generator of the next draw; the stream moves on by one draw."""
        n = self._stream_draws
        self._stream_draws = (n + 1) & _MASK
        bits = self._random.PHILOX4_32_10(
            _splitmix(self._stream_key, n), forceBuild=n % FLUSH_EVERY == FLUSH_EVERY - 1
        )
        return self._random.Generator(bits)
