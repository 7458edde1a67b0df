"""``tw_diagnose`` of the cuPyNumeric backend: what stops Legate, then what it would use.

Nothing here starts Legate: a runtime that is not running is described by the
configuration a start would use (:func:`legate_config.planned`), one that is running by
its machine. Problems come first, in the order the plugin has always given them.
"""

from __future__ import annotations

from tensorweaver.contract import Diagnosis

from tensorweaver_cunumeric import legate_config

PROBE = "tw devices --probe"


def diagnose(gpu_fix: str) -> list[Diagnosis]:
    """Problems (no driver library, a stand-in that hides a driver, a failed or stale
    start), then the library, the driver, and Legate's configuration."""
    return [*_problems(), _library(), _driver(), *_config(gpu_fix)]


def _problems() -> list[Diagnosis]:
    found = []
    if legate_config.driver_library_missing():
        found.append(
            Diagnosis(
                "the PyPI cuPyNumeric wheels are CUDA builds that need the CUDA driver library "
                "libcuda.so.1, and this machine has none",
                legate_config.STANDIN_FIX,
                "driver",
                "warning",
            )
        )
    standin = legate_config.standin()
    if standin and legate_config.nvidia_driver():
        found.append(
            Diagnosis(
                f"TensorWeaver's CPU stand-in for libcuda.so.1 ({standin}) hides this machine's "
                "NVIDIA driver from Legate",
                f"rm {standin}",
                "driver",
                "warning",
            )
        )
    failure = legate_config.failure()
    if failure:
        message, _, fix = failure.partition("; fix: ")
        found.append(Diagnosis(message, fix, "Legate start", "warning"))
    elif legate_config.started():
        note = legate_config.running().get("note")
        if note:
            found.append(
                Diagnosis(
                    note,
                    "set LEGATE_CONFIG before the first import of legate",
                    "Legate config",
                    "warning",
                )
            )
    return found


def _library() -> Diagnosis:
    dist, version = legate_config.distribution()
    build = ", a CUDA build" if dist == legate_config.CUDA_WHEEL else ""
    return Diagnosis(
        f"{legate_config.library_name()} {version} ({dist}{build}), "
        f"Legate {legate_config.legate_version()}",
        subject="library",
        severity="ok",
    )


def _driver() -> Diagnosis:
    standin = legate_config.standin()
    if legate_config.nvidia_driver():
        return Diagnosis("this machine has an NVIDIA driver", subject="driver", severity="ok")
    if standin:
        return Diagnosis(
            f"no NVIDIA driver; TensorWeaver's CPU stand-in for libcuda.so.1 ({standin}) lets "
            "the CUDA build run on the CPUs",
            subject="driver",
            severity="ok",
        )
    return Diagnosis(
        "no NVIDIA driver: Legate can use the CPUs only", subject="driver", severity="info"
    )


def _config(gpu_fix: str) -> list[Diagnosis]:
    """The configuration Legate runs with, or would start with, and the GPUs it has."""
    if legate_config.failure():
        return []
    if legate_config.started():
        facts = legate_config.running()
        where = (
            f"Legate running on {facts['nodes']} node(s) with {facts['cpus']} CPUs, "
            f"{facts['gpus']} GPUs, {facts['sysmem_mb']} MiB system memory"
        )
        found = [
            Diagnosis(f"{where}; source: {facts['source']}", subject="Legate config", severity="ok")
        ]
        gpus = facts["gpus"]
    else:
        plan = legate_config.planned()
        found = [
            Diagnosis(
                f"not started; a start would use LEGATE_CONFIG={plan['LEGATE_CONFIG']!r}; "
                f"source: {plan['source']}",
                subject="Legate config",
                severity="ok",
            )
        ]
        gpus = plan.get("gpus")
    if gpus == 0 and legate_config.nvidia_driver() and not legate_config.standin():
        found.append(
            Diagnosis(
                "Legate has no GPUs although this machine has an NVIDIA driver",
                gpu_fix,
                "GPUs",
                "warning",
            )
        )
    elif gpus == "auto" and not legate_config.nvidia_driver():
        found.append(
            Diagnosis(
                "Legate's auto-configuration is on and finds no GPU here: the start would fail",
                f"export LEGATE_AUTO_CONFIG=0 LEGATE_CONFIG='{legate_config.default_config()}'",
                "GPUs",
                "warning",
            )
        )
    elif gpus == "auto":
        found.append(
            Diagnosis(
                f"Legate's auto-configuration picks the GPUs when it starts ({PROBE} starts it)",
                subject="GPUs",
            )
        )
    else:
        found.append(Diagnosis(f"Legate has {gpus or 0} GPUs", subject="GPUs", severity="ok"))
    return found
