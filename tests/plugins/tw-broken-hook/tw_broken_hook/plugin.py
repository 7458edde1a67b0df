"""Its tw_devices hook raises, as a plugin whose device query crashes does."""

from tensorweaver.contract import BackendInfo, hookimpl


@hookimpl
def tw_backend_info():
    return BackendInfo(name="brokenhook", version="0.1.0", api_version="2.0")


@hookimpl
def tw_devices(probe):
    raise RuntimeError("driver query failed")
