"""The devices the installed torch can see, and what keeps it from seeing a GPU.

Names are ``torch:<kind>:<index>``, best first: ``cuda`` (or ``rocm``), ``mps``,
``xpu``, then ``cpu``. On a ROCm build (``torch.version.hip`` set) the kind, and so
the name, is ``rocm`` (``torch:rocm:0``) although torch itself still calls the device
``"cuda:0"``; ``detail["torch_device"]`` always holds torch's own spelling.

``probe=False`` counts GPUs the way ``torch.cuda.device_count()`` does, through NVML,
which neither initialises CUDA nor stops the process from forking workers that use
CUDA later. The facts that need CUDA initialised (GPU name, memory, compute
capability, native bf16) come only with ``probe=True``; that result is cached, since
once CUDA is up the set of devices cannot change.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from tensorweaver.contract import DeviceRecord

GIB = 1 << 30


def torch_device(kind: str, index: int) -> torch.device:
    """torch's device for a record's kind and index (ROCm GPUs are ``cuda`` to torch)."""
    if kind == "cpu":
        return torch.device("cpu")
    return torch.device("cuda" if kind == "rocm" else kind, index)


def discover(probe: bool) -> list[DeviceRecord]:
    """Every device this torch can see, best first; the CPU is always there."""
    # A copy, so that a caller cannot change the cached list.
    return list(_probed()) if probe else _listed(False)


@functools.cache
def _probed() -> list[DeviceRecord]:
    return _listed(True)


def _listed(probe: bool) -> list[DeviceRecord]:
    base = {"torch": torch.__version__}
    return [*_cuda(base, probe), *_mps(base, probe), *_xpu(base, probe), _cpu(base)]


def _record(kind: str, index: int, detail: dict[str, Any]) -> DeviceRecord:
    detail["torch_device"] = str(torch_device(kind, index))
    return DeviceRecord(f"torch:{kind}:{index}", "torch", kind, index, detail=detail)


def _cuda(base: dict[str, Any], probe: bool) -> list[DeviceRecord]:
    hip = torch.version.hip
    kind = "rocm" if hip else "cuda"
    version = {"hip": hip} if hip else {"cuda": torch.version.cuda}
    records = []
    for i in range(torch.cuda.device_count()):
        detail = {**base, **version}
        if probe:
            props = torch.cuda.get_device_properties(i)
            detail.update(
                gpu=props.name,
                memory_gib=round(props.total_memory / GIB, 1),
                multiprocessors=props.multi_processor_count,
            )
            if hip:
                detail.update(arch=props.gcnArchName, bf16=True)
            else:
                # Ampere (8.0) and later do bf16 in hardware; older GPUs emulate it slowly.
                detail.update(
                    compute_capability=f"{props.major}.{props.minor}", bf16=props.major >= 8
                )
        records.append(_record(kind, i, detail))
    return records


def _mps(base: dict[str, Any], probe: bool) -> list[DeviceRecord]:
    if not torch.backends.mps.is_available():
        return []
    detail = dict(base)
    if probe:
        detail["bf16"] = _can_make_bf16("mps")  # needs macOS 14 or later
    return [_record("mps", 0, detail)]


def _xpu(base: dict[str, Any], probe: bool) -> list[DeviceRecord]:
    xpu = getattr(torch, "xpu", None)
    if xpu is None or not xpu.is_available():
        return []
    records = []
    for i in range(xpu.device_count()):
        detail = dict(base)
        if probe:
            props = xpu.get_device_properties(i)
            detail.update(
                gpu=props.name,
                memory_gib=round(props.total_memory / GIB, 1),
                bf16=_can_make_bf16(f"xpu:{i}"),
            )
        records.append(_record("xpu", i, detail))
    return records


def _cpu(base: dict[str, Any]) -> DeviceRecord:
    # torch computes bf16 on every CPU; the capability says whether with wide vectors.
    detail = {
        **base,
        "threads": torch.get_num_threads(),
        "bf16": True,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }
    return _record("cpu", 0, detail)


def _can_make_bf16(device: str) -> bool:
    try:
        torch.ones(1, dtype=torch.bfloat16, device=device)
    except (RuntimeError, TypeError):
        return False
    return True
