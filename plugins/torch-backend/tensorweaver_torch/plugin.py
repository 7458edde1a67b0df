"""The pluggy hooks of the ``torch`` backend.

torch is imported only inside the hooks (through :mod:`.devices` and :mod:`.backend`),
so that ``import tensorweaver`` and ``tw --version`` stay fast. Listing devices does
import torch (2-3 s cold on the project's machines): torch has no cheaper way to say
what it sees, and importing it fixes no process-wide state. What torch can cost, starting CUDA,
happens only with ``probe=True``; see :mod:`.devices`.
"""

from __future__ import annotations

import importlib.util
import os
import sys

from tensorweaver.contract import BackendInfo, DeviceRecord, Problem, hookimpl
from tensorweaver.contract.records import AVAILABLE, UNAVAILABLE

from tensorweaver_torch import __version__

INSTALL = "pip install tensorweaver[torch]"


def _torch_installed() -> bool:
    """Whether torch can be imported. Before its first import, OpenMP is told to wait
    passively unless the user chose otherwise: torch's spinning OpenMP threads make every op
    wait for a busy core (10x and worse per training step on a shared 2-core machine)."""
    if importlib.util.find_spec("torch") is None:
        return False
    if "torch" not in sys.modules:
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    return True


@hookimpl
def tw_backend_info() -> BackendInfo:
    return BackendInfo(
        name="torch",
        version=__version__,
        api_version="2.0",
        library="torch",
        install=INSTALL,
        description="PyTorch tensors on CPU, CUDA, ROCm, MPS or XPU",
    )


@hookimpl
def tw_devices(probe: bool) -> list[DeviceRecord]:
    if not _torch_installed():
        reason = f"torch is not installed; install it with: {INSTALL}"
        return [
            DeviceRecord(
                "torch:cpu:0", "torch", "cpu", 0, UNAVAILABLE, {"reason": reason, "fix": INSTALL}
            )
        ]
    from tensorweaver_torch.devices import discover

    return discover(probe)


@hookimpl
def tw_diagnose() -> list[Problem]:
    if not _torch_installed():
        return [Problem("torch is not installed", INSTALL)]
    from tensorweaver_torch.diagnosis import diagnose

    return diagnose()


@hookimpl
def tw_create_backend(device: DeviceRecord) -> object:
    if device.status != AVAILABLE:
        raise RuntimeError(
            f"{device.name} is {device.status}: "
            f"{device.detail.get('reason', 'see `tw devices --probe`')}"
        )
    from tensorweaver_torch.backend import TorchBackend

    if device.kind == "cpu":
        return TorchBackend(device)
    from tensorweaver_torch.errors import on_a_gpu

    return on_a_gpu(TorchBackend)(device)
