"""A third-party backend: NumPy arrays behind its own plugin, found by its entry point."""

from tensorweaver.contract import BackendInfo, DeviceRecord, Problem, hookimpl


@hookimpl
def tw_backend_info():
    return BackendInfo(
        name="pyref",
        version="0.1.0",
        api_version="1.0",
        library="numpy",
        install="pip install tw-example-good",
        aliases=("pyreference",),
    )


@hookimpl
def tw_devices(probe):
    return [DeviceRecord(name="pyref:cpu:0", backend="pyref", kind="cpu", detail={"probe": probe})]


@hookimpl
def tw_diagnose():
    return [Problem("nothing is wrong; this line proves tw_diagnose is called", "none needed")]


@hookimpl
def tw_create_backend(device):
    from tensorweaver_numpy.backend import NumpyBackend

    return NumpyBackend(device)
