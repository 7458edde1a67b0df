"""Random streams, seeding and ``tw.Generator``: PyTorch's ``torch.random`` and ``torch.Generator``.

Which stream a draw comes from:

* **Each backend object (one per device) has its own generator**, behind the IR's ``seed``
  and ``random_*`` primitives; on torch, the kernels that take no generator (dropout, the
  recurrent stack's dropout) borrow it. Without ``generator=``, ``rand``, ``randn``,
  ``randint``, the ``*_like`` factories, ``normal_``, ``uniform_``, ``bernoulli``,
  ``random_``, ``exponential_``, ``multinomial``, dropout and ``nn.init`` draw from the
  stream of the device they fill, on that device, at the backend's own speed.
* **The default generator** ``tw.default_generator``, a :class:`Generator`, serves host work
  as PyTorch's CPU generator does: ``randperm``, the per-epoch seeds of shuffling
  (``DataLoader``, ``RandomSampler``) and ``random_split``.
* **Explicit generators**, passed as ``generator=``.

``manual_seed(s)`` reseeds every backend's generator (also those of backends created
later) and the default generator; explicit generators keep their own state. ``seed()``
does the same with a fresh seed. So one seed repeats a run on one device; two backends
give different numbers from one seed (each has its own generator).

Why a :class:`Generator` draws on the host: it keeps its own NumPy PCG64 stream and copies
each sample to the tensor's device with ``from_host``. That asks nothing of a backend, so
every backend honours ``generator=``, and one generator state gives the same numbers on
every backend, which is what handing a generator around is for. The price is a host draw
and a copy per call, which suits initialisation, shuffling and augmentation; the default
path (no generator) stays on the device. Unlike PyTorch's, a Generator is not tied to one
device: ``device`` is kept for PyTorch's API, and samples land on the tensor's device.

New generators, the default one included, start from a fresh seed (PyTorch starts them
all at one fixed seed): nothing is repeatable before it is seeded, as on the backends.
Seeds follow PyTorch: an int in [-2**63, 2**64), negative ones taken modulo 2**64.

A state (``get_state``, ``get_rng_state``) is a uint8 tensor of 48 bytes on the NumPy
device (the host, as PyTorch's states are CPU tensors): PCG64's 128-bit state and
increment, its buffered 32-bit half (flag, value) and the initial seed, little-endian.
The backends' streams have no state to save through the IR (only ``seed``), so
``get_rng_state`` covers the default generator, as PyTorch's covers the CPU's.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from tensorweaver import registry
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.selection import Device
from tensorweaver.tensor import Tensor

_HOST = registry.DEFAULT_BACKEND  # NumPy: where the host's tensors (states) live
_STATE_BYTES = 48
_last_seed: list[int] = []  # the last manual_seed, for backends created after it
_seeded: set[int] = set()  # ids of the backends that have had it


def _normalized(seed: Any, fn: str) -> int:
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise ValueError(
            f"{fn}: overflow: seed {seed} is outside the range of seeds [-2**63, 2**64 - 1]"
        )
    return seed % 2**64


def _fresh_seed() -> int:
    """A non-deterministic 64-bit seed (the OS's entropy)."""
    return int.from_bytes(os.urandom(8), "little")


class Generator:
    """A random stream of its own, for ``generator=`` arguments (``torch.Generator``).

    ``device`` (default ``"cpu"``: the host, NumPy's device) is recorded for PyTorch's API
    only; draws are made on the host and land on each tensor's own device.
    """

    def __init__(self, device: Any = "cpu") -> None:
        # The host's record is looked up when asked for: tw.default_generator is made at
        # import, which must not probe plugins.
        self._device: Device | None = (
            None if str(device) == "cpu" else Device(registry.resolve(str(device)))
        )
        self.seed()

    @property
    def device(self) -> Device:
        if self._device is None:
            self._device = Device(registry.resolve(_HOST))
        return self._device

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from ``seed``; returns the generator."""
        self._initial_seed = _normalized(seed, "Generator.manual_seed")
        self._stream = None  # made on the first draw (numpy.random costs ~10 ms to import)
        return self

    @property
    def _rng(self) -> np.random.Generator:
        """The NumPy stream, started from the seed on first use."""
        if self._stream is None:
            self._stream = np.random.Generator(np.random.PCG64(self._initial_seed))
        return self._stream

    def seed(self) -> int:
        """Restart the stream from a fresh non-deterministic seed, and return that seed."""
        seed = _fresh_seed()
        self.manual_seed(seed)
        return seed

    def initial_seed(self) -> int:
        """The seed the stream started from."""
        return self._initial_seed

    def get_state(self) -> Tensor:
        """The stream's state: a uint8 tensor of 48 bytes on the host (see the module)."""
        pcg = self._rng.bit_generator.state
        fields = (
            (pcg["state"]["state"], 16),
            (pcg["state"]["inc"], 16),
            (pcg["has_uint32"], 4),
            (pcg["uinteger"], 4),
            (self._initial_seed, 8),
        )
        raw = b"".join(value.to_bytes(size, "little") for value, size in fields)
        backend = registry.backend_object(_HOST)
        host = np.frombuffer(raw, dtype=np.uint8)
        return Tensor(backend.from_host(host, dtypes.uint8), backend, dtypes.uint8)

    def set_state(self, new_state: Tensor) -> Generator:
        """Continue from a state ``get_state`` returned; returns the generator."""
        if not isinstance(new_state, Tensor) or new_state.dtype is not dtypes.uint8:
            got = (
                f"a {new_state.dtype.name} tensor"
                if isinstance(new_state, Tensor)
                else type(new_state).__name__
            )
            raise TypeError(
                f"Generator.set_state: expected the uint8 tensor that get_state() returns, "
                f"got {got}"
            )
        if new_state.numel() != _STATE_BYTES:
            raise RuntimeError(
                f"Generator.set_state: a state has {_STATE_BYTES} bytes, got "
                f"{new_state.numel()}; pass what get_state() returned"
            )
        raw = np.asarray(new_state).tobytes()

        def field(start: int, size: int) -> int:
            return int.from_bytes(raw[start : start + size], "little")

        bits = np.random.PCG64()
        bits.state = {
            "bit_generator": "PCG64",
            "state": {"state": field(0, 16), "inc": field(16, 16)},
            "has_uint32": field(32, 4),
            "uinteger": field(36, 4),
        }
        self._stream = np.random.Generator(bits)
        self._initial_seed = field(40, 8)
        return self

    def __repr__(self) -> str:
        return f"tw.Generator(device={self.device.name!r}, initial_seed={self._initial_seed})"


default_generator = Generator()


def check_generator(generator: Any, fn: str) -> Generator:
    """``generator`` if it is a :class:`Generator`, else a TypeError naming ``fn``."""
    if not isinstance(generator, Generator):
        raise TypeError(
            f"{fn}: generator must be a tw.Generator (tw.Generator().manual_seed(seed)), "
            f"got {type(generator).__name__}"
        )
    return generator


# --- host draws for generator= ------------------------------------------------------------


def _largest_below(high: float, dtype: DType) -> float:
    """The largest value of ``dtype`` below ``high``."""
    kind = np.dtype(dtype.numpy_name).type
    below = kind(high)
    if below >= high:
        below = np.nextafter(below, kind(-np.inf))
    if dtype is dtypes.bfloat16:
        # bfloat16 is float32's upper half: drop the lower half, rounding toward -inf.
        bits = int(np.float32(below).view(np.uint32))
        kept = bits & 0xFFFF0000
        if kept != bits and below < 0:
            kept += 0x10000
        below = np.uint32(kept).view(np.float32)
    return float(below)


def draw_uniform(
    generator: Generator, shape: tuple, low: float, high: float, dtype: DType
) -> np.ndarray:
    """Uniform samples in [low, high) of float ``dtype``, as a host array for ``from_host``."""
    x = (low + generator._rng.random(shape) * (high - low)).astype(dtype.numpy_name)
    # Rounding can land on `high`; the interval is half-open. Capped at a value of the
    # dtype itself, a sample cannot round past it when the device casts it (bfloat16).
    return np.minimum(x, _largest_below(high, dtype))


def draw_normal(generator: Generator, shape: tuple, mean: float, std: float) -> np.ndarray:
    """Normal samples (float64 on the host; the device's cast rounds them)."""
    return mean + std * generator._rng.standard_normal(shape)


def draw_integers(generator: Generator, shape: tuple, low: int, high: int) -> np.ndarray:
    """Uniform int64 samples in [low, high)."""
    return generator._rng.integers(low, high, size=shape, dtype=np.int64)


def draw_permutation(generator: Generator, n: int) -> np.ndarray:
    """A random permutation of ``0 .. n-1`` (int64)."""
    return generator._rng.permutation(n)


# --- the default streams ------------------------------------------------------------------


def seeded(backend: Any) -> Any:
    """``backend``, given the last ``manual_seed`` first if it was created after it."""
    if _last_seed and id(backend) not in _seeded:
        backend.seed(_last_seed[0])
        _seeded.add(id(backend))
    return backend


def manual_seed(seed: int) -> Generator:
    """Seed every backend's generator, now and for backends created later, and the default
    generator; returns the default generator."""
    seed = _normalized(seed, "manual_seed")
    _last_seed[:] = [seed]
    _seeded.clear()
    for backend in registry.created_backends():
        backend.seed(seed)
        _seeded.add(id(backend))
    return default_generator.manual_seed(seed)


def seed() -> int:
    """``manual_seed`` with a fresh non-deterministic seed; returns that seed."""
    fresh = _fresh_seed()
    manual_seed(fresh)
    return fresh


def initial_seed() -> int:
    """The default generator's initial seed (the last ``manual_seed``, or its fresh seed)."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The default generator's state (see the module for why the backends' are not in it)."""
    return default_generator.get_state()


def set_rng_state(new_state: Tensor) -> None:
    """Continue the default generator from a state ``get_rng_state`` returned."""
    default_generator.set_state(new_state)


# --- saving and restoring every stream (fork_rng, activation checkpointing) ----------------


def save_streams() -> tuple[Tensor, dict[int, tuple[Any, int]]]:
    """The default generator's state and, per created backend, a seed its stream now restarts
    from. A backend's stream has no state to read through the IR, only ``seed``: each one draws
    a seed from its own stream and restarts from it, so :func:`restore_streams` can put it
    back at this point. The draw moves the stream on once, so later draws differ from those of
    a run that never saved it (they still depend only on the earlier seeds)."""
    backends = {}
    for backend in registry.created_backends():
        drawn = backend.random_integers((), 0, 2**62, dtypes.int64)
        value = int(backend.to_host(drawn))
        backend.seed(value)
        backends[id(backend)] = (backend, value)
    return default_generator.get_state(), backends


def restore_streams(saved: tuple[Tensor, dict[int, tuple[Any, int]]]) -> None:
    """Put every stream back where :func:`save_streams` left it. A backend created since
    then starts from its first seed (``manual_seed``'s), as it would have."""
    state, backends = saved
    default_generator.set_state(state)
    for backend in registry.created_backends():
        if id(backend) in backends:
            backend.seed(backends[id(backend)][1])
        elif _last_seed:
            backend.seed(_last_seed[0])


@contextlib.contextmanager
def fork_rng(
    devices: Any = None,
    enabled: bool = True,
    _caller: str = "fork_rng",
    _devices_kw: str = "devices",
    device_type: str | None = None,
) -> Iterator[None]:
    """Run the block, then put every random stream back as it was before it: the default
    generator exactly, and each backend's stream at a seed drawn from it on entry (see
    :func:`save_streams`: draws after the block do not depend on what the block drew, but
    differ from those of a run without ``fork_rng``). ``devices`` and ``device_type`` are
    accepted for PyTorch's API; every backend's stream is saved, whichever device it is."""
    if not enabled:
        yield
        return
    saved = save_streams()
    try:
        yield
    finally:
        restore_streams(saved)
