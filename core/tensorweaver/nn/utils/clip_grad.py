"""Gradient clipping: ``clip_grad_norm_`` (and its deprecated ``clip_grad_norm``) and
``clip_grad_value_``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from typing import Any, Optional, Union

import tensorweaver as tw
from tensorweaver.optim.foreach import foreach_update
from tensorweaver.tensor import Tensor

TensorOrTensors = Union[Tensor, Iterable[Tensor]]


def _grads(parameters: TensorOrTensors) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    # (each .grad read once: PyTorch's reads it twice, which only a None one, read once
    # either way, can tell by its warning on a non-leaf)
    return [g for p in parameters if (g := p.grad) is not None]


#: The dtype a gradient of these dtypes is multiplied in (the factor kept in it too).
_COMPUTED_IN = {tw.float16: tw.float32, tw.bfloat16: tw.float32}

#: The orders the IR's ``foreach_norm`` takes; others go through the core's norm.
_FOREACH_ORDERS = (1.0, 2.0, math.inf)


def _groups(tensors: list[Tensor]) -> dict[tuple[int, Any], list[Tensor]]:
    """``tensors`` by backend and dtype, in order of first appearance (PyTorch's grouping)."""
    groups: dict[tuple[int, Any], list[Tensor]] = {}
    for t in tensors:
        groups.setdefault((id(t.backend), t.dtype), []).append(t)
    return groups


def _foreach_backend(group: list[Tensor], name: str, foreach: Optional[bool]) -> Any:
    """The backend to run primitive ``name`` on over ``group`` at once, or None; raises for
    ``foreach=True`` on a backend without it, as PyTorch does for a device without it."""
    if foreach is False:
        return None
    backend = group[0].backend
    if getattr(backend, name, None) is None:
        if foreach:
            raise RuntimeError(
                f"foreach=True was passed, but can't use the foreach API on {group[0].device} "
                "tensors (its backend has no foreach primitives); pass foreach=None or False"
            )
        return None
    return backend


def _norms(tensors: list[Tensor], norm_type: float, foreach: Optional[bool]) -> list[Tensor]:
    """The ``norm_type``-norm of each of ``tensors``: one backend call per backend and dtype
    where the backend has ``foreach_norm``, else a few core ops per tensor."""
    norms: list[Tensor] = []
    for group in _groups(tensors).values():
        natives = _foreach_norms(group, norm_type, foreach)
        if natives is not None:
            backend, dtype = group[0].backend, group[0]._dtype
            norms.extend(Tensor(n, backend, dtype) for n in natives)
        else:
            norms.extend(t.detach().norm(norm_type) for t in group)
    return norms


def _foreach_norms(
    group: list[Tensor], norm_type: float, foreach: Optional[bool]
) -> list[Any] | None:
    """The backend's arrays of the ``norm_type``-norms of ``group`` (one backend and
    dtype) from one ``foreach_norm`` call, or None where that call does not serve."""
    backend = _foreach_backend(group, "foreach_norm", foreach)
    if (
        backend is not None
        and norm_type in _FOREACH_ORDERS
        and group[0]._dtype.kind == "f"
        and all(t.numel() for t in group)
    ):
        return backend.foreach_norm([t.native for t in group], norm_type)
    return None


def _total_of_one_group(
    tensors: list[Tensor], norm_type: float, foreach: Optional[bool]
) -> Tensor | None:
    """:func:`_norms` then :func:`_vector`'s cat and its norm where ``tensors`` share one
    backend and dtype that ``foreach_norm`` serves, on the arrays alone (no 0-d Tensor made
    of each norm, to be unwrapped again: 1-2 us a gradient); else None."""
    backend, dtype = tensors[0].backend, tensors[0]._dtype
    for t in tensors:
        if t.backend is not backend or t._dtype is not dtype:
            return None
    natives = _foreach_norms(tensors, norm_type, foreach)
    if natives is None:
        return None
    (total,) = backend.foreach_norm([_stacked(backend, natives)], norm_type)
    return Tensor(total, backend, dtype)


def _vector(norms: list[Tensor], device: Any) -> Tensor:
    """``tw.stack`` of the 0-d ``norms`` on ``device``: where they share a backend and dtype,
    one reshape per norm and one cat on the backend, without the core's per-op work."""
    backend, dtype = norms[0].backend, norms[0].dtype
    if any(n.backend is not backend or n.dtype is not dtype for n in norms):
        return tw.stack([n.to(device) for n in norms])
    return Tensor(_stacked(backend, [n.native for n in norms]), backend, dtype)


def _stacked(backend: Any, natives: list) -> Any:
    """The backend's 0-d arrays ``natives`` as one 1-d array: a reshape each, one cat."""
    return backend.cat([backend.reshape(n, (1,)) for n in natives], 0)


def _refuse_sparse(tensors: list[Tensor], kernel: str, fn: str) -> None:
    """PyTorch's NotImplementedError for a sparse tensor among ``tensors``: its ``kernel``
    has no sparse version."""
    for t in tensors:
        if t.is_sparse:
            layout = "SparseCUDA" if t.device.kind == "cuda" else "SparseCPU"
            raise NotImplementedError(
                f"Could not run 'aten::{kernel}' with arguments from the '{layout}' backend "
                f"({fn} of a sparse gradient, as in PyTorch); make the gradients dense first "
                "(p.grad = p.grad.to_dense())"
            )


def get_total_norm(
    tensors: TensorOrTensors,
    norm_type: Union[float, str] = 2.0,
    error_if_nonfinite: bool = False,
    foreach: Optional[bool] = None,
) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together, as if concatenated (PyTorch 2.6's
    first half of ``clip_grad_norm_``). ``foreach`` as in PyTorch: None uses the backend's
    ``foreach_norm`` where it has one, True insists on it, False never uses it."""
    tensors = [tensors] if isinstance(tensors, Tensor) else [t for t in tensors if t is not None]
    _refuse_sparse(tensors, "linalg_vector_norm", "get_total_norm")
    return total_norm(tensors, norm_type, error_if_nonfinite, foreach)


def total_norm(
    tensors: list[Tensor],
    norm_type: Union[float, str] = 2.0,
    error_if_nonfinite: bool = False,
    foreach: Optional[bool] = None,
) -> Tensor:
    """:func:`get_total_norm` of a list, sparse tensors included (their stored values): for
    tw.fit's ``clip``, which trains a model with sparse gradients where PyTorch's
    ``clip_grad_norm_`` has no sparse kernel."""
    norm_type = float(norm_type)
    if not tensors:
        return tw.tensor(0.0)
    device = tensors[0].device
    with tw.no_grad():
        total = _total_of_one_group(tensors, norm_type, foreach)
        if total is None:
            norms = _norms(tensors, norm_type, foreach)
            total = _norms([_vector(norms, device)], norm_type, foreach)[0]
    if error_if_nonfinite and not bool(tw.isfinite(total)):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def clip_grads_with_norm_(
    parameters: TensorOrTensors,
    max_norm: float,
    total_norm: Tensor,
    foreach: Optional[bool] = None,
) -> None:
    """Scale the gradients by ``max_norm / total_norm`` where that is below 1 (the second
    half of ``clip_grad_norm_``). ``foreach=True`` raises on a backend without foreach
    primitives, as in PyTorch; the scaling is the same either way."""
    grads = _grads(parameters)
    if not grads:
        return
    # The 1e-6 keeps the factor finite for a zero norm; clamping to 1 only ever shrinks.
    factor = tw.clamp(float(max_norm) / (total_norm + 1e-6), max=1.0)
    with tw.no_grad():
        for group in _groups(grads).values():
            backend, dtype = group[0].backend, group[0].dtype
            grouped = _foreach_backend(group, "foreach_mul", foreach) is not None
            grouped = grouped and not _shares_memory(group)
            wide = _COMPUTED_IN.get(dtype, dtype)
            scale = factor.to(group[0].device).to(wide).native
            if wide is not dtype:
                # Each product in float32, rounded once (PyTorch's kernels compute a float16
                # or bfloat16 product with a 0-d factor in float32, its "opmath").
                for g in group:
                    product = backend.mul(backend.cast(g.native, wide), scale)
                    g._assign(Tensor(backend.cast(product, dtype), backend, dtype), "mul_")
                continue
            if grouped:
                # g.mul_(scale) for the whole group, into the gradients' own memory where
                # it can be (ops/in_place_writes.py): the small ones too, as torch's
                # _foreach_mul_ does, so that one call writes them all where a new array
                # and a rebind each cost more (torch:cpu, the word-LM Transformer's 29
                # gradients, 24 of them under 65,536 elements: 1468 against 1055 us)
                foreach_update(group, "mul", (scale,), "mul_", list(range(len(group))))
                continue
            # The backend's mul, as g.mul_(scale) makes it, without the core's checks on
            # operands that are known good (one dtype, a 0-d factor); one gradient after
            # another, each read after the last write, as PyTorch's loop of mul_: a gradient
            # listed twice, or shared by two parameters, is scaled twice.
            for g in group:
                g._assign(Tensor(backend.mul(g.native, scale), backend, g.dtype), "mul_")


def _shares_memory(tensors: list[Tensor]) -> bool:
    """Whether two of ``tensors`` are one tensor or views of one: PyTorch's
    ``_foreach_mul_`` scales them one after another (shared elements twice), which one
    grouped call, reading every array before writing any, would not."""
    roots = set()
    for t in tensors:
        while t._view_of is not None:
            t = t._view_of[0]
        if id(t) in roots:
            return True
        roots.add(id(t))
    return False


def clip_grad_norm_(
    parameters: TensorOrTensors,
    max_norm: float,
    norm_type: Union[float, str] = 2.0,
    error_if_nonfinite: bool = False,
    foreach: Optional[bool] = None,
) -> Tensor:
    """Scale all gradients together so that their joint ``norm_type``-norm is at most
    ``max_norm``; returns the norm before clipping. ``foreach`` as in PyTorch (see
    ``get_total_norm``)."""
    parameters = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(
    parameters: TensorOrTensors,
    max_norm: float,
    norm_type: Union[float, str] = 2.0,
    error_if_nonfinite: bool = False,
    foreach: Optional[bool] = None,
) -> Tensor:
    """The deprecated spelling of ``clip_grad_norm_`` (it warns as PyTorch's does)."""
    warnings.warn(
        "`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
        "`torch.nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(
    parameters: TensorOrTensors, clip_value: float, foreach: Optional[bool] = None
) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]`` in place (``foreach`` is
    accepted as in PyTorch; the result is the same either way)."""
    clip_value = float(clip_value)
    grads = _grads(parameters)
    _refuse_sparse(grads, "clamp_min_", "clip_grad_value_")
    with tw.no_grad():
        for g in grads:
            g.clamp_(min=-clip_value, max=clip_value)
