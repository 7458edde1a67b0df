"""Its backend object implements only a few primitives."""

from tensorweaver.contract import BackendInfo, DeviceRecord, hookimpl


class IncompleteBackend:
    dtypes = frozenset()

    def __init__(self, device):
        self.device = device

    def add(self, a, b):
        return a + b


@hookimpl
def tw_backend_info():
    return BackendInfo(name="brokenmissing", version="0.1.0", api_version="2.0")


@hookimpl
def tw_devices(probe):
    return [DeviceRecord(name="brokenmissing:cpu:0", backend="brokenmissing", kind="cpu")]


@hookimpl
def tw_diagnose():
    return []


@hookimpl
def tw_create_backend(device):
    return IncompleteBackend(device)
