"""A simulated accelerator backend: ``TW_FAKEACCEL_GPUS`` devices of kind ``gpu``, and a CPU.

Computed by pyref's backend. It lets the tests check the ``auto`` order and
``tw.use_gpu()`` / ``tw.use_cpu()`` on a machine without a GPU; the variable plays the
part ``CUDA_VISIBLE_DEVICES`` plays for a real one (default 1).
"""

import os

from tensorweaver.contract import BackendInfo, DeviceRecord, hookimpl

NAME = "fakeaccel"


@hookimpl
def tw_backend_info():
    return BackendInfo(name=NAME, version="0.1.0", api_version="2.0", library="numpy")


@hookimpl
def tw_devices(probe):
    gpus = int(os.environ.get("TW_FAKEACCEL_GPUS", "1"))
    records = [
        DeviceRecord(f"{NAME}:gpu:{i}", NAME, "gpu", i, detail={"simulated": True})
        for i in range(gpus)
    ]
    return records + [DeviceRecord(f"{NAME}:cpu:0", NAME, "cpu")]


@hookimpl
def tw_diagnose():
    return []


@hookimpl
def tw_create_backend(device):
    from tw_example_good.backend import Backend

    return Backend(device)
