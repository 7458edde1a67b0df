"""Imports torch at module top, which the contract forbids.

The core cannot stop a plugin doing this; the tests use it to show that
``import tensorweaver`` imports no plugin module at all (torch stays out), while
listing the plugins does import it.
"""

import torch  # noqa: F401
from tensorweaver.contract import BackendInfo, hookimpl


@hookimpl
def tw_backend_info():
    return BackendInfo(name="eager", version="0.1.0", api_version="2.0", library="torch")


@hookimpl
def tw_devices(probe):
    return []
