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

States are uint8 tensors on the NumPy device (the host, as PyTorch's are CPU tensors):

* ``Generator.get_state``: 48 bytes, PCG64's 128-bit state and increment, its buffered
  32-bit half (flag, value) and the initial seed, little-endian.
* ``get_rng_state``: what PyTorch's covers with its CPU generator, here two streams: the
  default generator's 48 bytes, then the current device's stream, as its backend's
  optional ``get_rng_state`` (API 2.5) gives it (numpy: 40 bytes; torch: torch's state of
  the device's generator, 5056 bytes on the CPU). ``set_rng_state`` takes only a state of
  that length, so a state from another kind of device raises.
* ``tw.cuda.get_rng_state(device)``: that device's stream alone.

``fork_rng`` and ``checkpoint(preserve_rng_state=True)`` save these states and put them
back exactly. A backend without the optional pair (a third party's) has no state to save:
its stream is then restarted from a seed drawn from it, so draws after ``fork_rng`` or a
checkpoint depend only on earlier seeds but differ from those of a run without them, and
``get_rng_state`` covers the default generator alone; a :class:`RngStateWarning` says so,
once per device.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tensorweaver import registry, selection
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.selection import Device
from tensorweaver.tensor import Tensor

_HOST = registry.DEFAULT_BACKEND  # NumPy: where the host's tensors (states) live
_STATE_BYTES = 48
_last_seed: list[int] = []  # the last manual_seed, for backends created after it
_device_seeds: dict[str, int] = {}  # device name -> a seed given it since (tw.cuda's)
_seeded: set[int] = set()  # ids of the backends that have had theirs
_warned: set[str] = set()  # devices whose stream was said to have no state


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
        """Restart the stream from ``seed``, a Python int; returns the generator."""
        # As PyTorch's: the module-level manual_seed converts with int(), the method does not,
        # so a float or a bool seed is refused rather than truncated.
        if isinstance(seed, np.integer):
            raise TypeError(
                f"Generator.manual_seed: an integer is required, got {type(seed).__name__}; "
                "pass int(seed)"
            )
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise RuntimeError(
                f"Generator.manual_seed expected a long, but got {type(seed).__name__}"
            )
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
        return _host_tensor(self._raw_state())

    def set_state(self, new_state: Tensor) -> Generator:
        """Continue from a state ``get_state`` returned; returns the generator."""
        raw = _state_bytes(new_state, "Generator.set_state", "get_state()")
        if len(raw) != _STATE_BYTES:
            raise RuntimeError(
                f"Generator.set_state: a state has {_STATE_BYTES} bytes, got {len(raw)}; "
                "pass what get_state() returned"
            )
        self._load_raw_state(raw)
        return self

    def clone_state(self) -> Generator:
        """A new generator that continues from this one's current state (and seed)."""
        return Generator(self._device if self._device is not None else "cpu").set_state(
            self.get_state()
        )

    def _raw_state(self) -> bytes:
        pcg = self._rng.bit_generator.state
        fields = (
            (pcg["state"]["state"], 16),
            (pcg["state"]["inc"], 16),
            (pcg["has_uint32"], 4),
            (pcg["uinteger"], 4),
            (self._initial_seed, 8),
        )
        return b"".join(value.to_bytes(size, "little") for value, size in fields)

    def _load_raw_state(self, raw: bytes) -> None:
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

    def __repr__(self) -> str:
        return f"tw.Generator(device={self.device.name!r}, initial_seed={self._initial_seed})"


default_generator = Generator()


def _host_tensor(raw: bytes) -> Tensor:
    """``raw`` as a uint8 tensor on the host, where PyTorch keeps its states."""
    backend = registry.backend_object(_HOST)
    host = np.frombuffer(raw, dtype=np.uint8)
    return Tensor(backend.from_host(host, dtypes.uint8), backend, dtypes.uint8)


def _state_bytes(new_state: Any, fn: str, source: str) -> bytes:
    """The bytes of a state tensor handed to ``fn``; TypeError, as PyTorch's, for another
    object or dtype."""
    if not isinstance(new_state, Tensor) or new_state.dtype is not dtypes.uint8:
        got = (
            f"a {new_state.dtype.name} tensor"
            if isinstance(new_state, Tensor)
            else type(new_state).__name__
        )
        raise TypeError(f"{fn}: expected the uint8 tensor that {source} returns, got {got}")
    return np.asarray(new_state).tobytes()


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
    """``backend``, given its seed first if it was created after it was seeded (the last
    ``manual_seed``, or one ``seed_device`` gave its device since)."""
    if (_last_seed or _device_seeds) and id(backend) not in _seeded:
        first = _first_seed(backend)
        if first is not None:
            backend.seed(first)
        _seeded.add(id(backend))
    return backend


def _first_seed(backend: Any) -> int | None:
    """The seed a backend created now starts from (None: a fresh one, its own)."""
    return _device_seeds.get(backend.device.name, _last_seed[0] if _last_seed else None)


def manual_seed(seed: int) -> Generator:
    """Seed every backend's generator, now and for backends created later, and the default
    generator; returns the default generator."""
    seed = _normalized(seed, "manual_seed")
    _last_seed[:] = [seed]
    _device_seeds.clear()
    _seeded.clear()
    for backend in registry.created_backends():
        backend.seed(seed)
        _seeded.add(id(backend))
    return default_generator.manual_seed(seed)


def seed_device(name: str, seed: int, fn: str) -> None:
    """Seed the stream of the device ``name`` (a record's name), now if its backend exists,
    else when it is created (``tw.cuda.manual_seed``: PyTorch seeds a device it has not
    initialised yet when it does)."""
    seed = _normalized(seed, fn)
    _device_seeds[name] = seed
    for backend in registry.created_backends():
        if backend.device.name == name:
            backend.seed(seed)
            _seeded.add(id(backend))


def seed() -> int:
    """``manual_seed`` with a fresh non-deterministic seed; returns that seed."""
    fresh = _fresh_seed()
    manual_seed(fresh)
    return fresh


def initial_seed() -> int:
    """The default generator's initial seed (the last ``manual_seed``, or its fresh seed)."""
    return default_generator.initial_seed()


# --- states of the backends' streams (optional primitives, API 2.5) -------------------------


class RngStateWarning(UserWarning):
    """A device's random stream has no state to save: its backend lacks the optional
    ``get_rng_state``/``set_rng_state``, so it is reseeded where it must be put back."""


def has_state(backend: Any) -> bool:
    """Whether ``backend`` can save and restore its stream's state exactly."""
    return callable(getattr(backend, "get_rng_state", None)) and callable(
        getattr(backend, "set_rng_state", None)
    )


def _say_stateless(backend: Any, fn: str) -> None:
    name = backend.device.name
    if name in _warned:
        return
    _warned.add(name)
    warnings.warn(
        f"{fn}: the random stream of {name} has no state to save: its backend lacks the "
        "optional get_rng_state/set_rng_state (backend API 2.5). tw.get_rng_state covers the "
        "default generator only, and fork_rng and checkpoint(preserve_rng_state=True) "
        "restart this stream from a seed drawn from it: draws after them differ from those "
        "of a run without them (the recomputation still repeats the forward's draws)",
        RngStateWarning,
        stacklevel=3,
    )


def _stream_state(backend: Any, fn: str) -> bytes:
    """The state of ``backend``'s stream; RuntimeError where it has none."""
    if not has_state(backend):
        raise RuntimeError(
            f"{fn}: the backend of {backend.device.name} cannot read its random stream's "
            "state (it lacks the optional get_rng_state/set_rng_state of backend API 2.5); "
            "seed it with manual_seed instead"
        )
    return seeded(backend).get_rng_state()


def _check_size(raw: bytes, parts: dict[str, int], fn: str, source: str) -> None:
    """RuntimeError, as PyTorch's, unless ``raw`` has the bytes of ``parts`` (what: size)."""
    size = sum(parts.values())
    if len(raw) != size:
        listed = " and ".join(f"{n} of {what}" for what, n in parts.items())
        raise RuntimeError(
            f"{fn}: expected a state of {size} bytes ({listed}), but found the input RNG "
            f"state size to be {len(raw)}; pass what {source} returned on this device"
        )


def device_rng_state(backend: Any, fn: str) -> Tensor:
    """The state of one device's stream, as a uint8 tensor on the host (``tw.cuda``'s)."""
    return _host_tensor(_stream_state(backend, fn))


def set_device_rng_state(backend: Any, new_state: Tensor, fn: str, source: str) -> None:
    """Continue one device's stream from a state :func:`device_rng_state` returned."""
    raw = _state_bytes(new_state, fn, source)
    stream = f"the stream of {backend.device.name}"
    _check_size(raw, {stream: len(_stream_state(backend, fn))}, fn, source)
    backend.set_rng_state(raw)


def get_rng_state() -> Tensor:
    """The state of the default generator and of the current device's stream, a uint8
    tensor on the host (see the module); ``set_rng_state`` continues from it."""
    backend = seeded(selection.current_backend())
    if has_state(backend):
        stream = backend.get_rng_state()
    else:
        _say_stateless(backend, "get_rng_state")
        stream = b""
    return _host_tensor(default_generator._raw_state() + stream)


def set_rng_state(new_state: Tensor) -> None:
    """Continue the default generator and the current device's stream from a state
    ``get_rng_state`` returned on a device of the same kind."""
    raw = _state_bytes(new_state, "set_rng_state", "get_rng_state()")
    backend = seeded(selection.current_backend())
    stream = has_state(backend)
    if not stream:
        _say_stateless(backend, "set_rng_state")
    parts = {"the default generator": _STATE_BYTES}
    if stream:
        parts[f"the stream of {backend.device.name}"] = len(backend.get_rng_state())
    _check_size(raw, parts, "set_rng_state", "get_rng_state()")
    default_generator._load_raw_state(raw[:_STATE_BYTES])
    if stream:
        backend.set_rng_state(raw[_STATE_BYTES:])


# --- saving and restoring streams (fork_rng, activation checkpointing) --------------------


@dataclass(frozen=True)
class SavedStreams:
    """What :func:`save_streams` saw: the default generator's state; per backend (by id),
    the backend and its stream's state, or the seed it was restarted from; which backends
    created later :func:`restore_streams` puts back at their first seed; and the seeds that
    backends not created yet would start from."""

    host: bytes
    streams: dict[int, tuple[Any, bytes | int]]
    later: Callable[[Any], bool] | None
    first_seeds: tuple[list[int], dict[str, int]]


def save_streams(
    backends: Iterable[Any], fn: str, later: Callable[[Any], bool] | None = None
) -> SavedStreams:
    """The default generator's state and that of each of ``backends``' streams, for
    :func:`restore_streams`. A stream without state (see :func:`has_state`) is restarted
    from a seed drawn from it, which moves it on once, and ``fn`` warns once. ``later``:
    the backends created after this that :func:`restore_streams` puts back at their first
    seed, as they were before they were made."""
    streams: dict[int, tuple[Any, bytes | int]] = {}
    for backend in backends:
        if id(backend) in streams:
            continue
        backend = seeded(backend)
        if has_state(backend):
            streams[id(backend)] = backend, backend.get_rng_state()
            continue
        _say_stateless(backend, fn)
        drawn = backend.random_integers((), 0, 2**62, dtypes.int64)
        value = int(backend.to_host(drawn))
        backend.seed(value)
        streams[id(backend)] = backend, value
    return SavedStreams(
        default_generator._raw_state(), streams, later, (list(_last_seed), dict(_device_seeds))
    )


def restore_streams(saved: SavedStreams) -> None:
    """Put the streams :func:`save_streams` saved back where they were, and the seeds that
    backends created from now on start from (a ``manual_seed`` in between set others)."""
    default_generator._load_raw_state(saved.host)
    _last_seed[:], seeds = saved.first_seeds
    _device_seeds.clear()
    _device_seeds.update(seeds)
    for backend, state in saved.streams.values():
        if isinstance(state, bytes):
            backend.set_rng_state(state)
        else:
            backend.seed(state)
    if saved.later is None:
        return
    for backend in registry.created_backends():
        if id(backend) not in saved.streams and saved.later(backend):
            first = _first_seed(backend)
            if first is not None:
                backend.seed(first)


def _kinds(device_type: str | None) -> tuple[str, ...]:
    """The device kinds ``device_type`` names; None: the current device's when it is an
    accelerator, else CUDA's (PyTorch's default)."""
    if device_type is None:
        kind = selection.current_backend().device.kind
        device_type = "cuda" if kind == "cpu" else kind
    return registry.KIND_ALIASES.get(device_type, (device_type,))


@contextlib.contextmanager
def fork_rng(
    devices: Any = None,
    enabled: bool = True,
    _caller: str = "fork_rng",
    _devices_kw: str = "devices",
    device_type: str | None = None,
) -> Iterator[None]:
    """Run the block, then put the random streams back as they were before it: the default
    generator and the CPU devices' streams always (PyTorch's CPU generator), and those of
    ``devices`` (indices, or specs) of ``device_type`` (default: the current accelerator's
    kind, else ``"cuda"``); ``devices=None``: every device of that type, or of every type
    when ``device_type`` is None too. Exact where a backend has stream states (see the
    module); a stream without restarts from a seed drawn from it on entry."""
    if device_type == "meta" or not enabled:
        yield
        return
    every_type = devices is None and device_type is None
    kinds = () if every_type else _kinds(device_type)

    def forked(backend: Any) -> bool:
        kind = backend.device.kind
        return kind == "cpu" or (devices is None and (every_type or kind in kinds))

    chosen = [b for b in registry.created_backends() if forked(b)]
    for d in () if devices is None else list(devices):
        chosen.append(selection.backend_of(f"{kinds[0]}:{d}" if isinstance(d, int) else d))
    saved = save_streams(chosen, _caller, later=forked)
    try:
        yield
    finally:
        restore_streams(saved)
