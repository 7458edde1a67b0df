"""A backend whose tw_diagnose raises, as a plugin with a bug in it does."""

from __future__ import annotations

from tensorweaver.contract import BackendInfo, DeviceRecord, Problem, hookimpl


@hookimpl
def tw_backend_info() -> BackendInfo:
    return BackendInfo(name="docraise", version="0.7.1", api_version="2.0")


@hookimpl
def tw_devices(probe: bool) -> list[DeviceRecord]:
    return []


@hookimpl
def tw_diagnose() -> list[Problem]:
    raise RuntimeError("the firmware query crashed")
