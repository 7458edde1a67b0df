"""Optional primitives with a host fallback: the backend's kernel, or NumPy on the host.

The IR's optional primitives (``OPTIONAL`` in the contract: special functions, linear
algebra, ...) give every backend the whole API. A backend that defines one runs its own
kernel; one that does not still works: the core copies the operands to the host, computes
with NumPy, copies the results back, and says so once per backend and primitive with a
:class:`HostFallbackWarning`, so a plugin author sees which kernels are worth writing and a
user is never handed a missing function.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType


class HostFallbackWarning(UserWarning):
    """An optional primitive ran through the host because the backend has no kernel for it."""


_warned: set[tuple[str, str]] = set()

#: Arguments that are static (passed to the kernel or ``host`` as they are), not arrays.
_STATIC = (bool, int, float, str, tuple, list, type(None), DType)


def run_optional(
    backend: Any, name: str, host: Callable[..., Any], dtype: DType, *args: Any
) -> Any:
    """``backend.<name>(*args)``, or ``host`` on host copies of the native arrays in ``args``.

    ``host`` takes NumPy arrays (static arguments pass unchanged) and returns a NumPy array
    or a tuple of them; floating-point results come back to the backend as ``dtype`` (host
    code may compute bfloat16 and float16 in a wider type), other results keep their NumPy
    dtype's kind. Warns once per backend and ``name`` when the host computes, unless the
    arrays are host NumPy arrays already (no copy)."""
    kernel = getattr(backend, name, None)
    if kernel is not None:
        return kernel(*args)
    key = (backend.device.name, name)
    # Arrays already in host NumPy (the NumPy backend) cost no copy: nothing to warn about.
    on_host = all(isinstance(a, (np.ndarray, np.generic)) for a in args if not _static(a))
    if key not in _warned and not on_host:
        _warned.add(key)
        warnings.warn(
            f"{name}: the backend of {key[0]} has no kernel for this optional primitive, so "
            "tensorweaver computes it with NumPy on the host (a copy each way). A plugin "
            f"speeds it up by defining `{name}` (see OPTIONAL in tensorweaver.contract.ir)",
            HostFallbackWarning,
            stacklevel=3,
        )
    host_args = [a if _static(a) else backend.to_host(a) for a in args]
    # NumPy warns where torch's kernels are silent (NaN into det, overflow): keep quiet too.
    with np.errstate(all="ignore"):
        result = host(*host_args)
    if isinstance(result, tuple):
        return tuple(_to_backend(backend, r, dtype) for r in result)
    return _to_backend(backend, result, dtype)


def _static(a: Any) -> bool:
    return isinstance(a, _STATIC)


def _to_backend(backend: Any, value: Any, dtype: DType) -> Any:
    array = np.asarray(value)
    if array.dtype.kind == "f":
        return backend.from_host(array, dtype if dtype.kind == "f" else dtypes.float32)
    if array.dtype.kind == "c" and dtype.kind == "c":  # NumPy may widen complex64 results
        return backend.from_host(array, dtype)
    name = "bool" if array.dtype.kind == "b" else array.dtype.name
    return backend.from_host(array, dtypes.BY_NAME[name])
