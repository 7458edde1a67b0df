"""The contract between the core and backend plugins.

A plugin imports only these modules: :mod:`.hookspecs` (the pluggy hooks and the
API version), :mod:`.ir` (the primitive ops a backend object implements),
:mod:`.dtypes` (the dtype objects), :mod:`.records` (device records and the
other plain records hooks return), :mod:`.fft` (the Fourier primitives' scales),
:mod:`.cpu_loops` (the order PyTorch's CPU loops take the dimensions in, and which
elements they compute in their scalar loop, for half precision's rounding) and
:mod:`.errors` (errors a backend raises that callers catch by class).
They import nothing from the rest of the core, so the core can change its insides
without breaking a plugin.
"""

from typing import Any

from tensorweaver.contract.api import API_VERSION
from tensorweaver.contract.dtypes import DType
from tensorweaver.contract.records import BackendInfo, DeviceRecord, Diagnosis, Problem


def __getattr__(name: str) -> Any:
    # hookimpl needs pluggy; import it only when a plugin asks, to keep `import tensorweaver` light.
    if name == "hookimpl":
        from tensorweaver.contract.hookspecs import hookimpl

        return hookimpl
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "API_VERSION",
    "BackendInfo",
    "DType",
    "DeviceRecord",
    "Diagnosis",
    "Problem",
    "hookimpl",
]
