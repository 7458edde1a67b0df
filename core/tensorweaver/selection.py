"""Devices, and which one new tensors go to: a process default plus a per-thread, per-task scope.

A :class:`device` names a device as PyTorch does (``cpu``, ``cuda:1``) or with its backend
(``torch:cuda:1``). A kind-only name resolves when used: to that kind on the backend at hand
(the tensor's, then the current one), then on any installed backend that provides it.

The scope lives in a ``ContextVar``, so ``with tw.device(...)`` in one thread or
asyncio task never leaks into another; threads and tasks that set nothing use the
process default (``tw.set_backend``, else ``TENSORWEAVER_BACKEND``, else ``numpy``).
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from typing import Any, Union

from tensorweaver import registry
from tensorweaver.contract.records import AVAILABLE, DeviceRecord
from tensorweaver.errors import BackendError, DeviceNotFoundError

BACKEND_ENV = "TENSORWEAVER_BACKEND"
#: Kinds a spec may name without a backend, as PyTorch's device strings do.
KINDS = frozenset(registry.AUTO_KIND_ORDER)
#: What to install for a kind that no installed backend provides.
KIND_INSTALLS = {
    "cuda": "install a CUDA build of torch (pip install tensorweaver[torch], with torch from "
    "the CUDA package index) on a machine with an NVIDIA GPU and driver",
    "rocm": "install a ROCm build of torch (pip install tensorweaver[torch], with torch from "
    "the ROCm package index) on a machine with an AMD GPU",
    "mps": "install torch (pip install tensorweaver[torch]) on an Apple-silicon Mac",
    "xpu": "install an XPU build of torch (pip install tensorweaver[torch]) on an Intel GPU",
    "gpu": "install cuPyNumeric (pip install tensorweaver[cunumeric]) on an NVIDIA GPU",
}

# The stack of scoped backends of this thread or task; empty: the process default.
_scoped: ContextVar[tuple[Any, ...]] = ContextVar("tensorweaver_device", default=())
_default: list[Any] = []  # the process default backend object, created on first use


class device:  # noqa: N801 - PyTorch's name
    """A device, as ``torch.device``: ``device("cpu")``, ``device("cuda", 1)``,
    ``device("torch:cuda:1")`` or a device record; ``with device(...):`` makes it this
    thread's or task's default.

    ``type`` and ``index`` are PyTorch's (``index`` is None when not given, and for the CPU
    a tensor lives on);
    ``backend``, ``kind`` and ``name`` (the full ``backend:kind:index``) say which backend
    and device record it is, resolving a kind-only device in the current scope.
    """

    __slots__ = ("_backend", "type", "_index", "_record")

    def __init__(self, spec: DeviceLike, index: int | None = None) -> None:
        if isinstance(spec, device):
            self._backend, self.type, self._index, self._record = (
                spec._backend,
                spec.type,
                spec._index,
                spec._record,
            )
            return
        self._record: DeviceRecord | None = None
        if isinstance(spec, DeviceRecord):
            self._bind(spec)
            return
        text = str(spec).strip().lower()
        head, _, rest = text.partition(":")
        if head in KINDS:  # PyTorch's form: type[:index]
            self._backend, self.type = None, head
            self._index = _index_of(spec, rest, index)
            return
        name, kind, parsed = registry.parse_spec(text)
        if kind is None:  # "auto" or a bare backend: its best device, found now
            self._bind(registry.resolve(name))
        else:
            self._backend, self.type = name, kind
            self._index = parsed if index is None else index

    def _bind(self, record: DeviceRecord) -> None:
        self._record, self._backend, self.type = record, record.backend, record.kind
        # PyTorch gives a CPU tensor's device no index.
        self._index = None if record.kind == "cpu" else record.index

    @property
    def index(self) -> int | None:
        return self._index

    @property
    def record(self) -> DeviceRecord:
        """The device record this device resolves to, here and now."""
        if self._record is not None:
            return self._record
        # An explicit backend resolves without creating it (that may start a runtime).
        return registry.resolve(self.spec()) if self._backend else backend_of(self).device

    name = property(lambda self: self.record.name)
    backend = property(lambda self: self.record.backend)
    kind = property(lambda self: self.type)

    def spec(self) -> str:
        """The spec as given: ``cuda:1``, ``torch:cuda:1``."""
        parts = [self._backend, self.type, self._index]
        return ":".join(str(p) for p in parts if p is not None)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = device(other)
            except (BackendError, ValueError):
                return False
        if not isinstance(other, device):
            return NotImplemented
        if self._backend is None or other._backend is None:  # PyTorch's rule: type and index
            return (self.type, self.index) == (other.type, other.index)
        try:
            return self.name == other.name
        except (BackendError, ValueError):
            return self.spec() == other.spec()

    def __hash__(self) -> int:  # equal devices share their type
        return hash(self.type)

    def __str__(self) -> str:
        return self._record.name if self._record is not None else self.spec()

    def __repr__(self) -> str:
        if self._backend is None:
            shown = f"type={self.type!r}" + ("" if self.index is None else f", index={self.index}")
            return f"device({shown})"
        return f"device({str(self)!r})"

    def __enter__(self) -> device:
        backend = backend_of(self)
        _scoped.set((*_scoped.get(), backend))
        return device(backend.device)

    def __exit__(self, *exc: object) -> None:
        _scoped.set(_scoped.get()[:-1])


DeviceLike = Union[str, device, DeviceRecord]
Device = device  # the name the core used before devices were PyTorch's


def _index_of(spec: Any, rest: str, index: int | None) -> int | None:
    if rest and (not rest.isdigit() or index is not None):
        raise RuntimeError(
            f"device({spec!r}{'' if index is None else f', {index}'}): expected type[:index] "
            "such as 'cuda:1', or backend:kind:index such as 'torch:cuda:1'"
        )
    return int(rest) if rest else index


def device_of(backend: Any) -> device:
    return device(backend.device)


def backend_of(spec: DeviceLike, near: Any = None) -> Any:
    """The backend object for a device or spec; a kind-only one is looked for on ``near``'s
    backend, then the current one, then (for ``cpu``) NumPy, then on every installed backend."""
    if isinstance(spec, str) and spec.partition(":")[0].strip().lower() not in KINDS:
        # A spec naming its backend: the registry's cached look-up (parsing it into a
        # device first resolves a bare backend's best device on every call, ~20 µs).
        return registry.backend_object(spec)
    dev = spec if isinstance(spec, device) else device(spec)
    if dev._backend is not None:
        return registry.backend_object(dev.name if dev._record else dev.spec())
    suffix = dev.type + ("" if dev._index is None else f":{dev._index}")
    tried = [b.device.backend for b in (near, current_backend()) if b is not None]
    if dev.type == "cpu":
        tried.append(registry.DEFAULT_BACKEND)
    for name in dict.fromkeys(tried):
        try:
            return registry.backend_object(f"{name}:{suffix}")
        except (BackendError, ValueError):
            continue
    return _provider(dev, suffix)


#: What a CUDA request raises where no backend has a usable CUDA device. PyTorch's build
#: without CUDA raises AssertionError there, under that name (which scripts and tests compare);
#: a DeviceNotFoundError too, which the core's own probes (autocast, ``.cuda()``) catch.
class NoCudaError(DeviceNotFoundError, AssertionError):
    """No backend has a usable CUDA device."""


# (Its tracebacks and type(e).__name__ read as PyTorch's.)
NoCudaError.__name__ = NoCudaError.__qualname__ = "AssertionError"


def _provider(dev: device, suffix: str) -> Any:
    kinds = registry.KIND_ALIASES.get(dev.type, (dev.type,))
    offered = [r for r in registry.devices() if r.kind in kinds]
    for name in dict.fromkeys(r.backend for r in offered):
        try:
            return registry.backend_object(f"{name}:{suffix}")
        except (BackendError, ValueError):
            continue
    # (a missing index of a CUDA that exists stays a DeviceNotFoundError, as PyTorch's
    # RuntimeError there)
    error = (
        NoCudaError
        if dev.type == "cuda" and all(r.status != AVAILABLE for r in offered)
        else DeviceNotFoundError
    )
    if offered:
        listing = "; ".join(f"{r.name} ({r.status})" for r in offered)
        raise error(f"no usable {suffix!r} device: {listing}. Run `tw devices --probe` to see why")
    fix = KIND_INSTALLS.get(dev.type, "install a backend plugin that provides it")
    raise error(
        f"no installed backend provides {dev.type!r}: {fix}. Installed backends: "
        f"{', '.join(registry.installed_names()) or 'none'}; `tw devices` lists their devices"
    )


def _default_backend() -> Any:
    if not _default:
        spec = os.environ.get(BACKEND_ENV, "").strip() or registry.DEFAULT_BACKEND
        try:
            _default.append(registry.backend_object(spec))
        except (BackendError, ValueError) as exc:
            raise type(exc)(
                f"{exc} (the default device comes from {BACKEND_ENV}={spec!r})"
            ) from exc
    return _default[0]


def current_backend() -> Any:
    """The backend object new tensors are created on, here and now."""
    scoped = _scoped.get()
    return scoped[-1] if scoped else _default_backend()


def set_backend(spec: DeviceLike) -> device:
    """Make ``spec`` (``numpy``, ``torch:cuda:1``, ``cuda``, ``auto``) the process default."""
    backend = backend_of(spec)
    _default[:] = [backend]
    return device_of(backend)


def get_backend() -> device:
    """The device new tensors go to in this thread or task."""
    return device_of(current_backend())


def set_default_device(spec: DeviceLike | None) -> None:
    """PyTorch's name for :func:`set_backend`; None restores ``TENSORWEAVER_BACKEND``/NumPy."""
    if spec is None:
        _default.clear()
    else:
        set_backend(spec)


get_default_device = get_backend


def use_gpu() -> device:
    """Make the best GPU of any backend the default; an error lists what exists if none."""
    return set_backend(registry.best_device(registry.GPU_KINDS).name)


def use_cpu() -> device:
    """Make a CPU the default: the current backend's own CPU when it has one, else NumPy."""
    return set_backend("cpu")
