"""Its tw_devices hook aborts the process, as a library's failed C assertion does."""

import os

from tensorweaver.contract import BackendInfo, hookimpl


@hookimpl
def tw_backend_info():
    return BackendInfo(name="brokenabort", version="0.1.0", api_version="2.0")


@hookimpl
def tw_devices(probe):
    os.abort()
