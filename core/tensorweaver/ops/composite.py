"""Composite ops that a backend may fuse (see ``COMPOSITES`` in the IR contract).

``fused_or_reference`` runs the backend's ``fused_<name>`` when it has one, else the core's
reference decomposition. The fused path records one node whose rule calls
``fused_<name>_backward``; under ``create_graph=True`` the rule differentiates the reference
instead, so double backward stays exact on every backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Callable

from tensorweaver.amp import autocast_dtype
from tensorweaver.autograd.mode import enable_grad, is_grad_enabled
from tensorweaver.ops.apply import apply, check_backends
from tensorweaver.ops.linalg import autocast_operands
from tensorweaver.tensor import Tensor

#: Composites that compute in the autocast dtype inside ``tw.autocast`` (matrix products).
AUTOCAST = frozenset({"conv2d", "scaled_dot_product_attention"})


_reference_only: ContextVar[bool] = ContextVar("tensorweaver_reference_only", default=False)


@contextmanager
def reference_only() -> Iterator[None]:
    """Within the block (this thread or task), composites run the core's decomposition even
    where the backend fuses them: how ``tw check`` computes its reference."""
    token = _reference_only.set(True)
    try:
        yield
    finally:
        _reference_only.reset(token)


def fused_or_reference(
    name: str, reference: Callable[..., Tensor], tensors: tuple, *static: Any
) -> Tensor:
    """``name`` on ``tensors`` (one device, one dtype) with static arguments ``static``."""
    backend = check_backends(name, tensors)
    low = autocast_dtype()
    if low is not None and name in AUTOCAST:
        tensors = autocast_operands(low, *tensors)
    fused = getattr(backend, "fused_" + name, None)
    if fused is None or _reference_only.get():
        return reference(*tensors, *static)
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not dtype and t.dtype.kind == "f":
            raise TypeError(
                f"{name}: all floating-point arguments must have one dtype, got "
                f"{', '.join(t.dtype.name for t in tensors)}; convert them with .to(...)"
            )
    out, saved = fused(*(t.native for t in tensors), *static)
    if not is_grad_enabled() or not any(t.requires_grad for t in tensors):
        return Tensor(out, backend, dtype)
    return apply("fused", out, dtype, tensors, (name, saved, reference, static))


def fused_backward(node: Any, g: Tensor) -> tuple:
    name, saved, reference, static = node.saved
    inputs = node.inputs
    if is_grad_enabled():  # create_graph: differentiate the reference, which records a graph
        from tensorweaver.autograd.engine import grad

        wanted = [t for t in inputs if t.requires_grad]
        with enable_grad():
            y = reference(*inputs, *static)
        found = iter(grad(y, wanted, g, create_graph=True, allow_unused=True))
        return tuple(next(found) if t.requires_grad else None for t in inputs)
    backend = inputs[0].backend
    needs = tuple(p is not None for p in node.parents)
    natives = getattr(backend, f"fused_{name}_backward")(saved, g.native, needs)
    return tuple(
        Tensor(n, backend, t.dtype) if n is not None else None for n, t in zip(natives, inputs)
    )
