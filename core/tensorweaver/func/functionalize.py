"""``torch.func.functionalize`` and ``debug_unwrap``. TensorWeaver's IR is functional
already (an in-place op rebinds a tensor's storage, and writes through views reach their
bases, as a functionalized program's copies back do) and its transforms wrap no tensors,
so both hand back what they are given, after PyTorch's argument checks."""

from __future__ import annotations

from typing import Any, Callable

from tensorweaver.tensor import Tensor

__all__ = ["debug_unwrap", "functionalize"]

_REMOVE = ("mutations", "mutations_and_views")


def functionalize(func: Callable[..., Any], *, remove: str = "mutations") -> Callable[..., Any]:
    """``func`` with its mutations removed: ``func`` itself here (see the module)."""
    if remove not in _REMOVE:
        raise RuntimeError(
            f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}."
            " Valid options are 'mutations' and 'mutations_and_views'."
        )
    return func


def debug_unwrap(tensor: Tensor, *, recurse: bool = True) -> Tensor:
    """The plain tensor under a transform's wrapper: ``tensor`` itself here."""
    return tensor
