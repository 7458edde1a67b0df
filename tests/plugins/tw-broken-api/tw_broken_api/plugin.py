"""Speaks a backend API version this core does not; the core must refuse it."""

from tensorweaver.contract import BackendInfo, hookimpl


@hookimpl
def tw_backend_info():
    return BackendInfo(name="brokenapi", version="0.1.0", api_version="99.0")
