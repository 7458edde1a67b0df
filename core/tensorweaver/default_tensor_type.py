"""``tw.set_default_tensor_type``: PyTorch's deprecated way to set the default float dtype
(and, with a ``cuda`` type, the default device) from a legacy tensor type such as
``tw.DoubleTensor`` or its name ``'torch.cuda.FloatTensor'``."""

from __future__ import annotations

import warnings
from typing import Any

from tensorweaver.tensor_types import NAMES

_BY_NAME = {name: dtype for dtype, name in NAMES.items()}


def set_default_tensor_type(t: Any) -> None:
    from tensorweaver.promotion import set_default_dtype
    from tensorweaver.selection import set_default_device

    warnings.warn(
        "tw.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "tw.set_default_dtype() and tw.set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    name = t if isinstance(t, str) else getattr(t, "__name__", None)
    module, _, short = (name or "").rpartition(".")
    dtype = _BY_NAME.get(short)
    if dtype is None or (
        isinstance(t, str) and module.split(".")[0] not in ("torch", "tensorweaver")
    ):
        raise TypeError(
            f"set_default_tensor_type(): invalid type {t!r}; pass a legacy tensor type such "
            "as tw.FloatTensor or its name 'torch.FloatTensor'"
        )
    if not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    if module.endswith("cuda"):
        from tensorweaver.errors import DeviceNotFoundError

        try:
            set_default_device("cuda")
        except DeviceNotFoundError as error:
            raise TypeError(f"type {name} not available: {error}") from error
    set_default_dtype(dtype)
