"""The pluggy hooks of the ``cunumeric`` backend (alias ``cupynumeric``).

Importing cuPyNumeric starts the Legate runtime, which takes its configuration once and
keeps it for the life of the process. So listing devices (``probe=False``) never imports
legate or cupynumeric: it reports what a start would use, from the environment
(``LEGATE_CONFIG``) and package metadata, with status ``not-probed``. Probing, and
creating a backend, start the runtime (with the CPU default of :mod:`.legate_config`
where Legate's own auto-configuration would fail) and read Legate's machine.

Devices: ``cunumeric:gpu:0`` stands for all of Legate's GPUs (on all nodes) and
``cunumeric:cpu:0`` for its CPUs; Legate partitions every array over the processors of
the chosen kind.
"""

from __future__ import annotations

from typing import Any

from tensorweaver.contract import BackendInfo, DeviceRecord, Problem, hookimpl
from tensorweaver.contract.records import AVAILABLE, NOT_PROBED, UNAVAILABLE

from tensorweaver_cunumeric import __version__, legate_config

NAME = "cunumeric"
INSTALL = "pip install tensorweaver[cunumeric]"
GPU_FIX = (
    "Legate fixes its processors when it starts: launch with `legate --gpus N script.py`, "
    "or set LEGATE_CONFIG='--gpus N' (on a machine with an NVIDIA driver) before anything "
    "imports legate or cupynumeric; or select cunumeric:cpu"
)


def _record(kind: str, status: str, detail: dict[str, Any]) -> DeviceRecord:
    return DeviceRecord(f"{NAME}:{kind}:0", NAME, kind, 0, status, detail)


def _library_detail() -> dict[str, Any]:
    dist, version = legate_config.distribution()
    return {
        "library": legate_config.library_name(),
        "distribution": dist,
        "version": version,
        "legate": legate_config.legate_version(),
    }


@hookimpl
def tw_backend_info() -> BackendInfo:
    return BackendInfo(
        name=NAME,
        version=__version__,
        api_version="2.0",
        library=legate_config.library_name() or "cupynumeric",
        install=INSTALL,
        aliases=("cupynumeric",),
        description="cuPyNumeric on Legate: CPUs, GPUs and multi-node clusters",
    )


@hookimpl
def tw_devices(probe: bool) -> list[DeviceRecord]:
    if legate_config.library_name() is None:
        reason = f"not installed: {INSTALL}"
        return [_record("cpu", UNAVAILABLE, {"reason": reason, "fix": INSTALL})]
    # A runtime that is already running is as cheap to read as the environment.
    if probe or legate_config.started():
        return _probed()
    return _planned()


def _planned() -> list[DeviceRecord]:
    plan = legate_config.planned()
    detail = {
        **_library_detail(),
        "config": plan,
        "probe": "`tw devices --probe` starts the Legate runtime to look",
    }
    records = [_record("cpu", NOT_PROBED, detail)]
    if plan.get("gpus") == "auto" or plan.get("gpus", 0) > 0:
        records.insert(0, _record("gpu", NOT_PROBED, detail))
    return records


def _probed() -> list[DeviceRecord]:
    try:
        facts = legate_config.running()
    except RuntimeError as exc:
        error = str(exc)
        detail = {
            **_library_detail(),
            "reason": error.split("; fix: ")[0],
            "fix": error.partition("; fix: ")[2],
        }
        return [_record("cpu", UNAVAILABLE, detail)]
    common = {
        **_library_detail(),
        "nodes": facts["nodes"],
        "config": facts["source"],
        "LEGATE_CONFIG": facts["LEGATE_CONFIG"],
    }
    if "note" in facts:
        common["note"] = facts["note"]
    cpu = _record(
        "cpu",
        AVAILABLE,
        {**common, "cpus": facts["cpus"], "omps": facts["omps"], "sysmem_mb": facts["sysmem_mb"]},
    )
    if facts["gpus"]:
        gpu = _record(
            "gpu", AVAILABLE, {**common, "gpus": facts["gpus"], "fbmem_mb": facts["fbmem_mb"]}
        )
        return [gpu, cpu]
    # The registry quotes `reason` when cunumeric:gpu is asked for: it names the fix too.
    reason = (
        "the Legate runtime in this process has no GPUs"
        + ("" if legate_config.nvidia_driver() else " (this machine has no NVIDIA driver)")
        + "; Legate takes GPUs only when it starts: `legate --gpus N script.py` or "
        "LEGATE_CONFIG='--gpus N'"
    )
    return [
        cpu,
        _record("gpu", UNAVAILABLE, {**common, "gpus": 0, "reason": reason, "fix": GPU_FIX}),
    ]


@hookimpl
def tw_diagnose() -> list[Problem]:
    if legate_config.library_name() is None:
        return [Problem("cuPyNumeric is not installed", INSTALL)]
    from tensorweaver_cunumeric.diagnosis import diagnose

    return diagnose(GPU_FIX)


@hookimpl
def tw_create_backend(device: DeviceRecord) -> object:
    facts = legate_config.running()  # raises RuntimeError saying what failed and the fix
    if device.kind == "gpu" and not facts["gpus"]:
        raise RuntimeError(
            f"{device.name}: the Legate runtime in this process has no GPUs (it started with "
            f"LEGATE_CONFIG={facts['LEGATE_CONFIG']!r}). {GPU_FIX}"
        )
    from tensorweaver_cunumeric.backend import CunumericBackend

    return CunumericBackend(device)
