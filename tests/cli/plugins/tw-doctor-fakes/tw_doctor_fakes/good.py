"""A backend that reports a finding, a problem with its fix, and an old-style Problem."""

from __future__ import annotations

from tensorweaver.contract import BackendInfo, DeviceRecord, Diagnosis, Problem, hookimpl
from tensorweaver.contract.records import UNAVAILABLE


@hookimpl
def tw_backend_info() -> BackendInfo:
    return BackendInfo(name="docgood", version="0.7.1", api_version="2.0")


@hookimpl
def tw_devices(probe: bool) -> list[DeviceRecord]:
    return [DeviceRecord("docgood:cpu:0", "docgood", "cpu", status=UNAVAILABLE)]


@hookimpl
def tw_diagnose() -> list[Problem]:
    return [
        Diagnosis("fake library 1.2 found", subject="library", severity="ok"),
        Diagnosis(
            "fake accelerator firmware is too old",
            fix="fakectl update-firmware",
            subject="firmware",
            severity="warning",
        ),
        Problem("an old-style problem", fix="fakectl repair"),
    ]
