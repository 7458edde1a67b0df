"""``tw_diagnose`` of the torch backend: torch's build, the GPU driver, what would make a
GPU usable, and torch's threads.

The driver is read from ``nvidia-smi`` (its header names the driver's CUDA version) and
from ``/proc/driver/nvidia/version`` where ``nvidia-smi`` is missing; an AMD GPU from
``/dev/kfd``. ``torch.cuda.device_count()`` asks NVML, so nothing here starts CUDA.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Optional

import torch
from tensorweaver.contract import Diagnosis

SELECTOR = "https://pytorch.org/get-started/locally/"
INDEX = "https://download.pytorch.org/whl/"
#: CUDA versions download.pytorch.org has wheels for; a driver runs any CUDA up to its own.
CUDA_INDEXES = ((11, 8), (12, 1), (12, 4), (12, 6), (12, 8), (12, 9), (13, 0))
SMI_TIMEOUT = 10.0
DRIVER_FIX = "reinstall the GPU driver until `nvidia-smi` (or `rocm-smi`) lists the GPUs"
NVIDIA_PROC = "/proc/driver/nvidia/version"
AMD_DEVICE = "/dev/kfd"
ROCM_VERSION_FILE = "/opt/rocm/.info/version"


@dataclass(frozen=True)
class Driver:
    """What the NVIDIA driver says: its version, the CUDA it supports, its GPUs, or why
    ``nvidia-smi`` could not tell."""

    version: str = ""
    cuda: Optional[tuple[int, int]] = None
    gpus: tuple[str, ...] = ()
    error: str = ""


def diagnose() -> list[Diagnosis]:
    """The torch backend's findings, best first: build, driver, devices, threads."""
    driver = nvidia_driver()
    found = [Diagnosis(f"torch {torch.__version__}, {_build()}", subject="build", severity="ok")]
    if driver is not None:
        found.append(_driver_finding(driver))
    elif os.path.exists(AMD_DEVICE):
        found.append(
            Diagnosis(
                f"AMD GPU driver ({AMD_DEVICE}), ROCm {_rocm() or 'version unknown'}",
                subject="driver",
                severity="ok",
            )
        )
    elif sys.platform != "darwin":  # a Mac's GPU is MPS, found below
        found.append(
            Diagnosis(
                "no GPU driver: nvidia-smi not found, no " + AMD_DEVICE,
                subject="driver",
                severity="info",
            )
        )
    found += _devices(driver)
    found.append(
        Diagnosis(
            f"{torch.get_num_threads()} intra-op threads, {torch.get_num_interop_threads()} "
            "inter-op threads",
            subject="threads",
            severity="ok",
        )
    )
    return found


def _build() -> str:
    if torch.version.hip:
        return f"built for ROCm {torch.version.hip}"
    if torch.version.cuda:
        return f"built for CUDA {torch.version.cuda}"
    if getattr(torch.version, "xpu", None):
        return f"built for Intel XPU {torch.version.xpu}"
    if sys.platform == "darwin" and torch.backends.mps.is_built():
        return "built for the CPU and MPS"
    return "CPU-only build"


def _release() -> str:
    """torch's version without its local part (``2.13.0+cpu`` -> ``2.13.0``)."""
    return torch.__version__.split("+")[0]


def nvidia_driver() -> Optional[Driver]:
    """The NVIDIA driver, or None where the machine has none."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        if not os.path.exists(NVIDIA_PROC):
            return None
        with open(NVIDIA_PROC) as f:
            match = re.search(r"Kernel Module\s+([0-9.]+)", f.read())
        return Driver(version=match.group(1) if match else "", error="nvidia-smi is not on PATH")
    try:
        header = _run(smi)
        listing = _run(smi, "-L")
    except (OSError, subprocess.SubprocessError) as exc:
        return Driver(error=f"nvidia-smi failed: {_first_line(str(exc))}")
    version = re.search(r"Driver Version:\s*([0-9.]+)", header)
    cuda = re.search(r"CUDA Version:\s*([0-9]+)\.([0-9]+)", header)
    gpus = tuple(m.group(1) for m in re.finditer(r"^GPU \d+: (.+?)(?: \(UUID.*)?$", listing, re.M))
    return Driver(
        version=version.group(1) if version else "",
        cuda=(int(cuda.group(1)), int(cuda.group(2))) if cuda else None,
        gpus=gpus,
    )


def _run(*argv: str) -> str:
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=SMI_TIMEOUT, stdin=subprocess.DEVNULL
    )
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip()
        raise subprocess.SubprocessError(f"exit code {done.returncode}: {said}")
    return done.stdout


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _driver_finding(driver: Driver) -> Diagnosis:
    if driver.error:
        return Diagnosis(
            f"NVIDIA driver {driver.version or '(version unknown)'}: {driver.error}",
            fix=DRIVER_FIX,
            subject="driver",
            severity="warning",
        )
    cuda = "CUDA {}.{}".format(*driver.cuda) if driver.cuda else "CUDA version unknown"
    gpus = f"{len(driver.gpus)} GPU{'s' * (len(driver.gpus) != 1)}"
    names = f": {', '.join(sorted(set(driver.gpus)))}" if driver.gpus else ""
    return Diagnosis(
        f"NVIDIA driver {driver.version} ({cuda}), {gpus}{names}", subject="driver", severity="ok"
    )


def cuda_index(driver_cuda: Optional[tuple[int, int]]) -> Optional[str]:
    """The newest wheel index whose CUDA the driver runs (None: the driver's CUDA is unknown
    or older than every index)."""
    if driver_cuda is None:
        return None
    usable = [v for v in CUDA_INDEXES if v <= driver_cuda]
    return "{}cu{}{}".format(INDEX, *usable[-1]) if usable else None


def _install(index: Optional[str]) -> str:
    if index is None:
        return f"pip install torch=={_release()} --index-url <the index {SELECTOR} names>"
    return f"pip install torch=={_release()} --index-url {index}"


def _devices(driver: Optional[Driver]) -> list[Diagnosis]:
    """What torch can use here, and what would make a GPU usable."""
    hip, cuda = torch.version.hip, torch.version.cuda
    if not hip and not cuda:
        return _cpu_only(driver)
    count = torch.cuda.device_count()
    kind = "rocm" if hip else "cuda"
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    if count:
        return [
            Diagnosis(
                f"{count} GPU{'s' * (count != 1)} usable as torch:{kind}:0..{count - 1}",
                subject="devices",
                severity="ok",
            )
        ]
    if driver is None and not hip:
        return [
            Diagnosis(
                f"built for CUDA {cuda}, but this machine has no NVIDIA driver: torch:cpu only",
                subject="devices",
                severity="info",
            )
        ]
    if cuda and driver is not None and driver.cuda and _version(cuda) > driver.cuda:
        index = cuda_index(driver.cuda)
        return [
            Diagnosis(
                f"torch is built for CUDA {cuda}, newer than the driver's CUDA "
                "{}.{}: torch sees no GPU".format(*driver.cuda),
                fix=_install(index) if index else "upgrade the NVIDIA driver",
                subject="devices",
                severity="warning",
            )
        ]
    why = f" (CUDA_VISIBLE_DEVICES={hidden!r})" if hidden is not None else ""
    return [
        Diagnosis(
            f"torch (built for {'ROCm ' + hip if hip else 'CUDA ' + cuda}) sees no GPU{why}",
            fix="unset CUDA_VISIBLE_DEVICES" if hidden is not None else DRIVER_FIX,
            subject="devices",
            severity="warning",
        )
    ]


def _cpu_only(driver: Optional[Driver]) -> list[Diagnosis]:
    release = _release()
    if driver is not None:
        index = cuda_index(driver.cuda)
        gpus = f"{len(driver.gpus)} NVIDIA GPU{'s' * (len(driver.gpus) != 1)}"
        return [
            Diagnosis(
                f"torch {torch.__version__} is a CPU-only build, but this machine has {gpus}: "
                f"torch:cuda needs a CUDA build of torch {release}"
                + (f" ({index} is the newest index the driver runs)" if index else ""),
                fix=_install(index),
                subject="devices",
                severity="warning",
            )
        ]
    if os.path.exists(AMD_DEVICE):
        rocm = _rocm()
        index = f"{INDEX}rocm{'.'.join(rocm.split('.')[:2])}" if rocm else None
        return [
            Diagnosis(
                f"torch {torch.__version__} is a CPU-only build, but this machine has an AMD GPU "
                "driver: torch:rocm needs a ROCm build of torch",
                fix=_install(index),
                subject="devices",
                severity="warning",
            )
        ]
    mps = []
    if sys.platform == "darwin":
        ok = torch.backends.mps.is_available()
        mps = [
            Diagnosis(
                "MPS available: torch:mps"
                if ok
                else "MPS not available (it needs macOS 12.3 or later on Apple silicon)",
                subject="devices",
                severity="ok" if ok else "info",
            )
        ]
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        mps.append(
            Diagnosis(
                f"{xpu.device_count()} Intel XPU devices: torch:xpu",
                subject="devices",
                severity="ok",
            )
        )
    return mps or [
        Diagnosis(
            "torch:cpu only: this machine has no GPU that torch could use",
            subject="devices",
            severity="info",
        )
    ]


def _version(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor.split(".")[0] or 0)


def _rocm() -> str:
    try:
        with open(ROCM_VERSION_FILE) as f:
            return f.read().strip()
    except OSError:
        return ""
