"""``tw.accelerator``: PyTorch's device-agnostic accelerator API (``torch.accelerator``),
answered from the device records the installed backends report.

The accelerator is the first kind in :data:`tensorweaver.registry.GPU_KINDS` (``cuda``,
``rocm``, ``mps``, ``xpu``, ``gpu``) of which some backend reports a device; as in PyTorch
it is reported as a device type (ROCm GPUs are ``cuda``, as PyTorch spells them), even when
none of its devices is usable yet (``check_available=True`` asks for a usable one). Devices
count when their backend reports them available, or plans them without having looked
("not-probed"); one it reports unavailable does not. A device is usable when reported
available: cuPyNumeric reports the GPUs its Legate configuration plans "not-probed" until
the runtime has started (looking would start it), so before its first use or ``tw devices
--probe`` a cuPyNumeric GPU is the accelerator but not available.

TensorWeaver has one current device, where new tensors go (``tw.set_backend``, ``with
tw.device(...)``): the current accelerator index is that device's when it is an accelerator,
else the first usable one's. So :func:`set_device_index` and :func:`device_index` make an
accelerator device where new tensors go, which PyTorch's do not (there the default device
stays the CPU).
"""

from __future__ import annotations

import operator
from typing import Any

from tensorweaver import registry, selection
from tensorweaver.contract.records import AVAILABLE, NOT_PROBED, DeviceRecord

_NONE = "no accelerator device is available"


def _reported() -> list[DeviceRecord]:
    """The accelerator device records of the installed backends: usable or planned."""
    return [
        r
        for r in registry.devices()
        if r.kind in registry.GPU_KINDS and r.status in (AVAILABLE, NOT_PROBED)
    ]


def _kind() -> str | None:
    """The accelerator's kind as the backends name it (``rocm``, not ``cuda``), or None."""
    kinds = {r.kind for r in _reported()}
    return next((k for k in registry.GPU_KINDS if k in kinds), None)


def _usable() -> tuple[str, list[int]]:
    """The accelerator's kind and the sorted indices of its usable devices, or a
    RuntimeError as PyTorch's when it has none."""
    kind = _kind()
    indices = sorted({r.index for r in _reported() if r.kind == kind and r.status == AVAILABLE})
    if not indices:
        raise RuntimeError(
            f"{_NONE} (`tw devices` lists every backend's devices and what is wrong with them)"
        )
    return kind, indices


def current_accelerator(check_available: bool = False) -> selection.device | None:
    """The accelerator as a device type (``tw.device("cuda")``), or None when no backend
    reports one (or, with ``check_available``, none of its devices is usable)."""
    kind = _kind()
    if kind is None or (check_available and not device_count()):
        return None
    return selection.device("cuda" if kind in registry.KIND_ALIASES["cuda"] else kind)


def is_available() -> bool:
    """Whether some accelerator device is usable."""
    return current_accelerator(check_available=True) is not None


def device_count() -> int:
    """How many usable devices the accelerator has (0 without one)."""
    try:
        return len(_usable()[1])
    except RuntimeError:
        return 0


def current_device_index() -> int:
    """The index of the accelerator device in use: the current device's when it is one,
    else the first usable one's."""
    kind, indices = _usable()
    record = selection.current_backend().device
    return record.index if record.kind == kind else indices[0]


def _index(device: Any, fn: str) -> int | None:
    """A device argument (index, spec or ``tw.device``; None: the current one) as an index
    of the accelerator, which must have a usable device."""
    kind, _ = _usable()
    if device is None or isinstance(device, int):
        return device
    spec = selection.device(device)
    if spec.type not in (kind, current_accelerator().type):
        raise ValueError(f"{fn}: {device!r} is not a device of the accelerator {kind!r}")
    return spec.index


def _select(index: int, fn: str) -> str:
    """The spec of the accelerator's device ``index``, after checking that it is usable."""
    kind, indices = _usable()
    index = operator.index(index)
    if index not in indices:
        raise RuntimeError(
            f"{fn}: invalid device index {index}; the usable {kind} devices are {indices}"
        )
    return f"{kind}:{index}"


def set_device_index(device: Any, /) -> None:
    """Make the accelerator's device ``device`` (an index, spec or ``tw.device``; None:
    leave it) current: the process default device (see the module)."""
    index = _index(device, "set_device_index")
    if index is not None:
        selection.set_backend(_select(index, "set_device_index"))


def synchronize(device: Any = None, /) -> None:
    """Check that the accelerator device exists (None: the current one).

    There is nothing to wait for: a result reaches the host only when it is computed.
    """
    index = _index(device, "synchronize")
    _select(current_device_index() if index is None else index, "synchronize")


class device_index:  # noqa: N801 - PyTorch's name
    """``with tw.accelerator.device_index(i):`` makes the accelerator's device ``i`` current
    inside the block (None: no change), as ``with tw.device(...)``."""

    def __init__(self, device: int | None, /) -> None:
        self.idx = device
        self._scope: selection.device | None = None

    def __enter__(self) -> None:
        if self.idx is not None:
            self._scope = selection.device(_select(self.idx, "device_index"))
            self._scope.__enter__()

    def __exit__(self, *exc_info: object) -> None:
        if self._scope is not None:
            self._scope.__exit__(*exc_info)
            self._scope = None
