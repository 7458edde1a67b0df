"""Its tw_devices hook does not return for a minute, as a hung driver query does."""

import time

from tensorweaver.contract import BackendInfo, hookimpl


@hookimpl
def tw_backend_info():
    return BackendInfo(name="brokensleep", version="0.1.0", api_version="2.0")


@hookimpl
def tw_devices(probe):
    time.sleep(60)
    return []
