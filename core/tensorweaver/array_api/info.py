"""The inspection API: ``__array_namespace_info__()`` and the object it returns."""

from __future__ import annotations

from typing import Any, Optional, Union

import tensorweaver as tw
from tensorweaver.array_api.dtypes import DTYPES, isdtype
from tensorweaver.contract.dtypes import DType
from tensorweaver.promotion import default_complex_dtype
from tensorweaver.selection import backend_of, current_backend, device_of

#: Statuses of device records that cannot be used.
_UNUSABLE = ("unavailable", "error")


class Info:
    """What this namespace supports, per device: the standard's inspection object."""

    __module__ = "tensorweaver.array_api"

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent output shapes are supported; ``max
        dimensions`` is the current device's limit (None: none)."""
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": getattr(current_backend(), "max_ndim", None),
        }

    def default_device(self) -> tw.device:
        """The device new arrays go to now (``tw.device(...)`` scopes and ``tw.set_backend``)."""
        return device_of(current_backend())

    def devices(self) -> tuple[tw.device, ...]:
        """The usable devices of every installed backend."""
        return tuple(tw.device(r) for r in tw.devices() if r.status not in _UNUSABLE)

    def default_dtypes(self, *, device: Any = None) -> dict[str, Optional[DType]]:
        """The default dtype of each kind (complex: that of the default float's precision)."""
        return {
            "real floating": tw.get_default_dtype(),
            "complex floating": default_complex_dtype(),
            "integral": tw.int64,
            "indexing": tw.int64,
        }

    def dtypes(
        self, *, device: Any = None, kind: Union[str, DType, tuple, None] = None
    ) -> dict[str, DType]:
        """The standard's dtypes ``device`` (None: the current one) supports, of ``kind``."""
        backend = current_backend() if device is None else backend_of(device)
        return {
            name: d
            for name, d in DTYPES.items()
            if d in backend.dtypes and (kind is None or isdtype(d, kind))
        }


def __array_namespace_info__() -> Info:
    """The inspection object of this namespace."""
    return Info()
