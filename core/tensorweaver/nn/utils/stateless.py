"""``torch.nn.utils.stateless.functional_call``: the deprecated spelling of
``tw.func.functional_call`` (it warns as PyTorch's does, then calls it)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Optional

from tensorweaver import func
from tensorweaver.nn.modules.module import Module
from tensorweaver.tensor import Tensor

__all__ = ["functional_call"]


def functional_call(
    module: Module,
    parameters_and_buffers: Mapping[str, Tensor],
    args: Any = None,
    kwargs: Optional[dict[str, Any]] = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """``tw.func.functional_call``, with PyTorch's deprecation warning."""
    warnings.warn(
        "`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be "
        "removed in a future version of PyTorch. Please use `torch.func.functional_call` "
        "instead which is a drop-in replacement.",
        FutureWarning,
        stacklevel=2,
    )
    return func.functional_call(
        module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict
    )
