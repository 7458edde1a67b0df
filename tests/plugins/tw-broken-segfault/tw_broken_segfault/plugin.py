"""Dereferences a null pointer, as a plugin whose driver query crashes in native code does.

It crashes in ``tw_devices``, or at import with ``TW_BROKEN_SEGFAULT_AT=import``; first it
prints to stdout, which must not spoil the JSON of ``tw devices --json``.
"""

import ctypes
import os

from tensorweaver.contract import BackendInfo, hookimpl

AT = os.environ.get("TW_BROKEN_SEGFAULT_AT", "tw_devices")


def _crash(step):
    if step == AT:
        print(f"brokensegv: querying the driver ({step})", flush=True)
        ctypes.string_at(0)  # reads address 0: SIGSEGV


_crash("import")


@hookimpl
def tw_backend_info():
    return BackendInfo(name="brokensegv", version="0.1.0", api_version="2.0")


@hookimpl
def tw_devices(probe):
    _crash("tw_devices")
    return []
