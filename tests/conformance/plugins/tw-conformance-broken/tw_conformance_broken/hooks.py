"""The four hooks every backend here shares: one CPU device on a library that may be missing."""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any, Callable

from tensorweaver.contract import BackendInfo, DeviceRecord, Problem, hookimpl
from tensorweaver.contract.records import AVAILABLE, UNAVAILABLE

from tw_conformance_broken import __version__


def hooks(
    name: str, library: str, backend: str, api_version: Any = "2.0"
) -> tuple[Callable[..., Any], ...]:
    """The hooks of backend ``name`` on ``library``, creating ``backend`` ("module:Class"),
    declaring ``api_version``."""
    install = "pip install tw-conformance-broken"

    def problem() -> Problem | None:
        if importlib.util.find_spec(library) is None:
            return Problem(f"{library} is not installed", fix=install)
        return None

    @hookimpl
    def tw_backend_info() -> BackendInfo:
        return BackendInfo(name, __version__, api_version, library=library, install=install)

    @hookimpl
    def tw_devices(probe: bool) -> list[DeviceRecord]:
        missing = problem()
        if missing is not None:
            detail = {"reason": missing.message, "fix": missing.fix}
            return [DeviceRecord(f"{name}:cpu:0", name, "cpu", 0, UNAVAILABLE, detail)]
        return [DeviceRecord(f"{name}:cpu:0", name, "cpu", 0, AVAILABLE)]

    @hookimpl
    def tw_diagnose() -> list[Problem]:
        missing = problem()
        return [] if missing is None else [missing]

    @hookimpl
    def tw_create_backend(device: DeviceRecord) -> object:
        module, cls = backend.split(":")
        return getattr(importlib.import_module(module), cls)(device)

    return tw_backend_info, tw_devices, tw_diagnose, tw_create_backend
