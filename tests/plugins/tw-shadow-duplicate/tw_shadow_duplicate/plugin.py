"""Registers the backend name `pyref`, which tw-example-good already provides."""

from tensorweaver.contract import BackendInfo, hookimpl


@hookimpl
def tw_backend_info():
    return BackendInfo(name="pyref", version="0.1.0", api_version="2.0")
