"""Hooks of the pyref backend; NumPy is imported only when a backend object is created."""

from __future__ import annotations

from tensorweaver.contract import BackendInfo, DeviceRecord, Problem, hookimpl

from tw_example_good import __version__

NAME = "pyref"


@hookimpl
def tw_backend_info() -> BackendInfo:
    return BackendInfo(
        name=NAME,
        version=__version__,
        api_version="2.0",
        library="numpy",
        install="pip install tw-example-good",
        aliases=("pyreference",),
        description="NumPy behind an array type of its own",
    )


@hookimpl
def tw_devices(probe: bool) -> list[DeviceRecord]:
    return [DeviceRecord(name=f"{NAME}:cpu:0", backend=NAME, kind="cpu", detail={"probe": probe})]


@hookimpl
def tw_diagnose() -> list[Problem]:
    return []  # NumPy is a dependency of the core, so nothing can be missing


@hookimpl
def tw_create_backend(device: DeviceRecord) -> object:
    from tw_example_good.backend import Backend

    return Backend(device)
