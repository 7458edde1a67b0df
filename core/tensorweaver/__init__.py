"""TensorWeaver: PyTorch's API on pluggable array backends."""

from tensorweaver.contract.dtypes import (
    bfloat16,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from tensorweaver.contract.dtypes import bool_ as bool  # noqa: A001  (PyTorch's name)
from tensorweaver.errors import BackendError, DeviceNotFoundError, PluginError, UnknownBackendError
from tensorweaver.registry import devices, plugins
from tensorweaver.selection import (
    Device,
    device,
    get_backend,
    set_backend,
    use_cpu,
    use_gpu,
)
from tensorweaver.version import __version__

__all__ = [
    "BackendError",
    "Device",
    "DeviceNotFoundError",
    "PluginError",
    "UnknownBackendError",
    "__version__",
    "bfloat16",
    "bool",
    "device",
    "devices",
    "float16",
    "float32",
    "float64",
    "get_backend",
    "int8",
    "int16",
    "int32",
    "int64",
    "plugins",
    "set_backend",
    "uint8",
    "use_cpu",
    "use_gpu",
]
