"""What every op shares: wrapping a native result, recording its graph node, operand checks.

Fast paths matter here: an op on two tensors of one shape, dtype and backend costs a few
attribute reads before the backend call, no registry look-up and no graph when nothing
requires grad.
"""

from __future__ import annotations

import warnings
from typing import Any

from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import Node
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import out_arguments as oa  # (a module: it imports this one)
from tensorweaver.ops.casting import can_cast
from tensorweaver.tensor import Size, Tensor, _out_of_order, _shaped

#: The shape of a 0-d result (a whole reduction, a scalar operand's tensor).
NO_DIMS = Size(())


def apply(
    op: str, native: Any, dtype: DType, inputs: tuple, saved: Any = None, shape: Any = None
) -> Tensor:
    """The output tensor of ``op``; it records a node when an input requires grad.
    ``shape``: the ``Size`` of ``native``'s shape where the caller knows it (an input's, for
    an op that keeps it), which spares reading it (``tensor._shaped``)."""
    if shape is None:
        out = Tensor(native, inputs[0].backend, dtype)
    else:
        out = _shaped(native, inputs[0].backend, dtype, shape)
    if is_grad_enabled():
        for t in inputs:
            # (the slot: no property on every op's path; a view's flag may be its base's)
            if t._requires_grad or t._view_of is not None and view_requires_grad(t):
                if t._inference and all_inference(inputs):
                    break  # (PyTorch's autograd skips an op of inference tensors alone)
                out._node = Node(op, inputs, saved)
                out._requires_grad = True
                break
    return out


def view_requires_grad(view: Tensor) -> bool:
    """Whether the view ``view``, whose own ``_requires_grad`` slot says no, requires grad by
    its base's flag, set after the view was made (``v = a[0:2]; a.requires_grad_()``): the
    ``requires_grad`` property's answer, its cost spared where the base is a root that does
    not require grad (a view of a tensor without grad: the common case)."""
    base = view._view_of[0]
    return (base._requires_grad or base._view_of is not None) and view.requires_grad


def all_inference(inputs: tuple) -> bool:
    """Whether every one of ``inputs`` is an inference tensor (made in inference_mode())."""
    from tensorweaver.ops.memory_facts import is_inference

    return all(t._inference and is_inference(t) for t in inputs)


def labelled(out: Tensor, grad_fn: str, *inputs: Tensor | None) -> Tensor:
    """``out``, its graph node named ``grad_fn`` (PyTorch's name for the composite op that
    made it from ``inputs``, PyTorch's node's inputs in its order, None for an optional one
    not given) unless the op returned an input's node unchanged."""
    node = out._node
    if node is None:
        return out
    # Where each input's gradient goes, so that a hook on this node can see the whole
    # composite's (autograd/composite_hooks.py). A plain loop: the cheapest here.
    edges = []
    for t in inputs:
        if t is None:  # (an absent weight or bias: PyTorch's node has no gradient there)
            edges.append(None)
            continue
        parent = t._node
        if parent is node:
            return out
        edges.append(parent if parent is not None else (t if t.requires_grad else None))
    node.label = grad_fn
    node.edges = tuple(edges)
    return out


def check_backends(op: str, tensors: tuple) -> Any:
    """The one backend all ``tensors`` live on, or an error naming both devices."""
    backend = tensors[0].backend
    for t in tensors[1:]:
        if t.backend is not backend:
            raise RuntimeError(
                f"{op}: expected all tensors on one device, but found tensors on "
                f"{backend.device.name} and {t.backend.device.name}; move one with "
                f".to({backend.device.name!r})"
            )
    return backend


def constant(value: Any, backend: Any, dtype: DType) -> Tensor:
    """A 0-d tensor holding a Python scalar."""
    return Tensor(backend.full((), value, dtype), backend, dtype)


def broadcast_shapes(op: str, *shapes: tuple) -> tuple:
    """The shape every one of ``shapes`` broadcasts to (NumPy's rule), or a clear error."""
    if len(shapes) == 2:
        a, b = shapes
        if a == b:
            return tuple(a)
        if not b:
            return tuple(a)
        if not a:
            return tuple(b)
    ndim = max(map(len, shapes))
    out = [1] * ndim
    for s in shapes:
        offset = ndim - len(s)
        for i, n in enumerate(s):
            m = out[offset + i]
            if n != m:
                if m == 1:
                    out[offset + i] = n
                elif n != 1:
                    raise RuntimeError(
                        f"{op}: shapes {' and '.join(str(tuple(x)) for x in shapes)} cannot be "
                        f"broadcast together (dimension {offset + i - ndim} is {m} in one and "
                        f"{n} in another; sizes must match or be 1)"
                    )
    return tuple(out)


def expand_native(t: Tensor, shape: tuple) -> Any:
    """``t``'s native array broadcast to ``shape`` (0-d stays 0-d: the IR takes it as is).

    ``shape`` is a broadcast of arrays on ``t``'s backend, so it is within its ``max_ndim``.
    """
    return expand_array(t.backend, t.native, t._shape, shape)


def expand_array(backend: Any, native: Any, own: tuple, shape: tuple) -> Any:
    """:func:`expand_native` of an array of shape ``own`` on ``backend``, for a caller with
    no tensor of it at hand (a tensor made only to be expanded costs ~0.8 us)."""
    if own == shape or not own:
        return native
    if len(own) < len(shape):
        native = backend.reshape(native, (1,) * (len(shape) - len(own)) + tuple(own))
    return backend.expand(native, shape)


def cast_native(t: Tensor, dtype: DType) -> Any:
    return t.native if t.dtype is dtype else t.backend.cast(t.native, dtype)


def written_out(
    op: str,
    result: Tensor,
    out: Any,
    *,
    same_dtype: bool = False,
    differentiable: bool = True,
    inputs: tuple = (),
) -> Tensor:
    """``result`` written into ``out`` (the ``out=`` of ``op``), as PyTorch does it: ``out``
    takes a dtype ``result``'s converts to without lowering its category (exactly
    ``result``'s where ``same_dtype``: neg, abs, floor, sign...), is resized to ``result``'s
    shape (with PyTorch's deprecation warning unless it was empty; it then takes the result's
    strides, else it keeps its own), and no operand may require grad, unless ``op`` is one
    PyTorch defines no derivative for (``differentiable=False``: eq, logical_and, histc, the
    Bessel functions...): then ``out`` is written as data, keeping its ``requires_grad`` and
    history, as PyTorch writes it. ``inputs``: the operands of an op PyTorch computes
    elementwise into ``out`` (its TensorIterator), none of which ``out`` may share part of
    the memory of."""
    if not isinstance(out, Tensor):
        raise TypeError(f"{op}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if not differentiable:
        # Data, not a step of a graph: PyTorch neither refuses an out that requires grad nor
        # records the write (out keeps its flag and its history), and resizes it freely.
        requires_grad, out._requires_grad = out.requires_grad, False
        try:
            with no_grad():
                return _write_out(op, result, out, same_dtype, inputs)
        finally:
            out._requires_grad = requires_grad
    if is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise out_needs_no_grad(op)
    return _write_out(op, result, out, same_dtype, inputs)


def out_needs_no_grad(op: str) -> RuntimeError:
    """PyTorch's error for ``out=`` given to ``op`` where an argument requires grad."""
    return RuntimeError(
        f"{op}(): functions with out=... arguments don't support automatic "
        "differentiation, but one of the arguments requires grad; call it under "
        "tw.no_grad() or without out="
    )


def _write_out(op: str, result: Tensor, out: Tensor, same_dtype: bool, inputs: tuple) -> Tensor:
    if same_dtype and out.dtype is not result.dtype:
        raise RuntimeError(
            f"{op}(): Found dtype {out.dtype.name} but expected {result.dtype.name}: its out= "
            "tensor must have the result's dtype"
        )
    if inputs:  # (checked before the cast, as PyTorch's TensorIterator)
        oa._refuse_overlapping_operands(out, op, inputs, {})
        oa.refuse_resizing_an_input(op, out, result.shape, inputs)
    if not can_cast(result.dtype, out.dtype):
        raise RuntimeError(
            f"{op}(): result type {result.dtype.name} can't be cast to the desired output type "
            f"{out.dtype.name}"
        )
    if out.shape != result.shape:
        if inputs:  # (PyTorch's TensorIterator refuses it before it resizes out)
            oa._refuse_repeats(op, out.shape, out)
        if out.numel():
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).",
                UserWarning,
                stacklevel=4,
            )
        linked = out._view_of is not None or out._alias_of is not None
        out.resize_(*result.shape)
        if result.backend is out.backend:
            # PyTorch restrides a resized out as its result (TensorIterator's resize_out):
            # out takes the result's array, where copy_ would keep out's new C order; one
            # over other tensors' memory lays it out there with the result's strides
            if linked and inputs and _out_of_order(result) and result._dense_order() is not None:
                out.as_strided_(result.shape, result.stride())
            return out._assign(result.to(out.dtype), op)
    return out.copy_(result)
