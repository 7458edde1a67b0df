"""Hooks of the NumPy backend (NumPy is cheap to import, so listing needs no probe)."""

from __future__ import annotations

import os

from tensorweaver.contract import BackendInfo, DeviceRecord, Problem, hookimpl

from tensorweaver_numpy import __version__

NAME = "numpy"


@hookimpl
def tw_backend_info() -> BackendInfo:
    return BackendInfo(
        name=NAME,
        version=__version__,
        api_version="1.0",
        library="numpy",
        install="pip install tensorweaver",
        description="NumPy on the CPU",
    )


@hookimpl
def tw_devices(probe: bool) -> list[DeviceRecord]:
    import numpy

    detail = {"numpy": numpy.__version__, "threads": os.cpu_count() or 1}
    return [DeviceRecord(name=f"{NAME}:cpu:0", backend=NAME, kind="cpu", detail=detail)]


@hookimpl
def tw_diagnose() -> list[Problem]:
    return []


@hookimpl
def tw_create_backend(device: DeviceRecord) -> object:
    from tensorweaver_numpy.backend import NumpyBackend

    return NumpyBackend(device)
