"""Optimizer steps over a whole parameter group at once, on backends that offer it.

A backend may define the optional ``foreach_*`` primitives (``OPTIONAL`` in the IR
contract): one call then updates every parameter of a group, where the per-parameter path
makes a few core ops (each a Python dispatch and a tensor) per parameter. PyTorch's
``foreach=`` option decides as in PyTorch: None uses it when it can, False never does.
"""

from __future__ import annotations

from typing import Any, Optional

from tensorweaver.ops.in_place_writes import assign, foreach_update, large, natives
from tensorweaver.tensor import Tensor

__all__ = ["assign", "each", "foreach_backend", "foreach_update", "large", "natives"]


def each(method: str, tensors: list[Tensor], *args: Any, **kwargs: Any) -> list[Any]:
    """``tensor.<method>(...)`` for each of ``tensors``, one after another, an argument that
    is a list giving one value per tensor: a ``torch._foreach_<method>`` as PyTorch runs it
    on a CPU, each tensor's operation reading its operands as the ones before left them
    (an optimizer's ``_step_in_foreach_order``)."""
    results = []
    for i, t in enumerate(tensors):
        own = [a[i] if type(a) is list else a for a in args]
        named = {k: v[i] if type(v) is list else v for k, v in kwargs.items()}
        results.append(getattr(t, method)(*own, **named))
    return results


def foreach_backend(params: list[Tensor], group: dict[str, Any]) -> Optional[Any]:
    """The backend to step ``params`` on with foreach primitives, or None (step each alone).

    That takes the group's ``foreach`` option not False, every parameter a floating-point
    tensor on one backend, and that backend defining the foreach primitives."""
    if group.get("foreach") is False or group.get("differentiable"):
        return None
    if isinstance(group.get("lr"), Tensor) or any(
        isinstance(b, Tensor) for b in group.get("betas", ())
    ):  # (kept tensors: PyTorch's single-tensor step)
        return None
    backend = params[0].backend
    if getattr(backend, "foreach_add", None) is None:
        return None
    for p in params:
        if p.backend is not backend or p.dtype.kind != "f":
            return None
    return backend
