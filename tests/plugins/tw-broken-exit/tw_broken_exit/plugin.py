"""Calls ``sys.exit(3)`` at import, or in the hook that ``TW_BROKEN_EXIT_AT`` names
(``tw_backend_info``, ``tw_devices``, ``tw_create_backend``); with
``TW_BROKEN_EXIT_WITH=interrupt`` it raises ``KeyboardInterrupt`` there instead, which the
core must let through. Otherwise a working CPU backend (pyref's arrays) whose device
record says which process answered (``pid``)."""

import os
import sys

from tensorweaver.contract import BackendInfo, DeviceRecord, hookimpl

NAME = "brokenexit"


def _leave(step):
    if step == os.environ.get("TW_BROKEN_EXIT_AT", "import"):
        if os.environ.get("TW_BROKEN_EXIT_WITH") == "interrupt":
            raise KeyboardInterrupt
        sys.exit(3)


_leave("import")


@hookimpl
def tw_backend_info():
    _leave("tw_backend_info")
    return BackendInfo(name=NAME, version="0.1.0", api_version="2.0")


@hookimpl
def tw_devices(probe):
    _leave("tw_devices")
    return [DeviceRecord(f"{NAME}:cpu:0", NAME, "cpu", detail={"pid": os.getpid()})]


@hookimpl
def tw_diagnose():
    return []


@hookimpl
def tw_create_backend(device):
    _leave("tw_create_backend")
    from tw_example_good.backend import Backend

    return Backend(device)
