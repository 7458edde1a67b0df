"""Elementwise ops: unary, binary (with broadcasting and type promotion) and ``where``."""

from __future__ import annotations

import builtins
import math
import warnings
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from tensorweaver.autograd.mode import _restore, _switched, is_grad_enabled
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS, Node, SelfFirst, refuse_saved
from tensorweaver.contract import dtypes
from tensorweaver.contract.cpu_loops import cached_scalar_loop_mask
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import index as ix  # (a module: it imports this one)
from tensorweaver.ops.apply import (
    NO_DIMS,
    all_inference,
    apply,
    broadcast_shapes,
    cast_native,
    check_backends,
    constant,
    expand_array,
    expand_native,
    labelled,
    view_requires_grad,
    written_out,
)
from tensorweaver.ops.casting import rounded_through
from tensorweaver.ops.fusion import fused_kernel
from tensorweaver.ops.overflow import cast_float, fill_value, float_max
from tensorweaver.promotion import get_default_dtype, numpy_scalar_number, result_type
from tensorweaver.tensor import Tensor, _shaped

Operand = Any  # a Tensor or a Python scalar


def _operands(op: str, a: Operand, b: Operand, compute: Callable[[DType], DType]) -> tuple:
    """(a, b, backend, dtype, a_native, b_native): both operands as tensors of one backend,
    natives cast to the computation dtype and broadcast to one shape (or left 0-d)."""
    if isinstance(a, np.generic):  # a NumPy scalar is the Python number PyTorch reads
        a = numpy_scalar_number(a)
    if isinstance(b, np.generic):
        b = numpy_scalar_number(b)
    a, b = _arrays_as_tensors(a, b)
    _int64_only(a)  # PyTorch's OverflowError comes before any check of the dtypes
    _int64_only(b)
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            if a.backend is not b.backend:
                a, b = _cpu_scalar_moved(a, b)
            backend = check_backends(op, (a, b))
            dtype = compute(a.dtype if a.dtype is b.dtype else result_type(a, b))
        else:
            backend = a.backend
            dtype = compute(result_type(a, b))
            b = Tensor(scalar_native(backend, b, dtype), backend, dtype)
    elif isinstance(b, Tensor):
        backend = b.backend
        dtype = compute(result_type(a, b))
        a = Tensor(scalar_native(backend, a, dtype), backend, dtype)
    else:
        raise TypeError(
            f"{op}: expected at least one Tensor, got {type(a).__name__} and {type(b).__name__}"
        )
    an, bn = _converted_native(a, dtype), _converted_native(b, dtype)
    if a.shape != b.shape and a.shape and b.shape:
        shape = broadcast_shapes(op, a.shape, b.shape)
        an = expand_array(backend, an, a._shape, shape)
        bn = expand_array(backend, bn, b._shape, shape)
    return a, b, backend, dtype, an, bn


def _converted_native(t: Tensor, dtype: DType) -> Any:
    """``t``'s array converted to ``dtype`` as PyTorch converts: a double reaches a half type
    through float32 (rounded twice; NumPy's direct conversion rounds once)."""
    if t.dtype is dtype:
        return t.native
    native = t.native
    if dtype in _HALF:
        through = rounded_through(t.dtype, dtype)
        if through:
            native = t.backend.cast(native, through)
    return t.backend.cast(native, dtype)


def _arrays_as_tensors(a: Any, b: Any) -> tuple[Any, Any]:
    """A NumPy array beside a tensor as a tensor on its device, as PyTorch takes one
    (``t * array``, ``array == t``: NumPy defers to the tensor, ``__array_priority__``)."""
    if isinstance(b, np.ndarray) and isinstance(a, Tensor):
        from tensorweaver.ops.creation import as_tensor

        b = as_tensor(b, device=a.device)
    elif isinstance(a, np.ndarray) and isinstance(b, Tensor):
        from tensorweaver.ops.creation import as_tensor

        a = as_tensor(a, device=b.device)
    return a, b


def _cpu_scalar_moved(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """PyTorch's one exception to "one device per op": a 0-d tensor on a CPU joins the other
    operand's device (``cuda_x * torch.tensor(2.0)``). Any other pair is left to fail."""
    if not b.shape and b.backend.device.kind == "cpu":
        return a, b.to(a.backend)
    if not a.shape and a.backend.device.kind == "cpu":
        return a.to(b.backend), b
    return a, b


def _same(dtype: DType) -> DType:
    return dtype


def _floating(dtype: DType) -> DType:
    return dtype if dtype.kind in "fc" else get_default_dtype()


_constants: dict[tuple, Any] = {}


def _wrapped(value: Any, dtype: DType) -> Any:
    """An integer scalar wrapped into ``dtype``'s range, as C (and PyTorch) casts do."""
    if dtype.kind in "iu" and not isinstance(value, bool) and isinstance(value, int):
        bits = 8 * dtype.itemsize
        low = -(1 << (bits - 1)) if dtype.kind == "i" else 0
        return (value - low) % (1 << bits) + low
    return value


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT64_END = 2**64


def _int64_only(value: Any) -> None:
    """PyTorch's OverflowError for a Python int operand outside int64 and uint64. (An int in
    [2**63, 2**64) is a uint64 to PyTorch: see :func:`scalar_native`.)"""
    if type(value) is int and not _INT64_MIN <= value < _UINT64_END:
        raise OverflowError(
            f"int too big to convert: the Python integer {value} does not fit in int64 or "
            "uint64; write it as a float (e.g. float(n)) to use it as a number"
        )


def scalar_native(backend: Any, value: Any, dtype: DType) -> Any:
    """A 0-d native array holding ``value``, cached: scalar operands are mostly repeats."""
    if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX:
        _int64_only(value)  # beyond uint64: raises
        # A uint64 to PyTorch: a float beside floats, else cast as C casts it (wrapped:
        # tensor([5]) * 2**63 is -2**63, tensor([5]) == 2**63 is False).
        value = float(value) if dtype.kind in "fc" else value - _UINT64_END
    value = _wrapped(value, dtype)
    if type(value) is int and dtype.kind in "fc":
        # As a float, so that it may round to inf: torch.full(2**40) in float16 raises on CUDA.
        value = float(value)
    if type(value) is float and dtype.kind == "f":
        value = cast_float(value, dtype)  # x * 1e39 is inf in float32 (no backend raises)
    elif type(value) in (float, complex) and dtype.kind == "c":
        # Each part in the parts' dtype: complex64 x + 1e39 is inf, not an error.
        part = dtype.to_real()
        value = complex(cast_float(value.real, part), cast_float(value.imag, part))
    key = (value, type(value), dtype, backend)
    if value == 0 and type(value) is not int and type(value) is not bool:
        # 0.0 and -0.0 compare equal but differ: the sign goes into the key (a complex
        # zero has two signs; its repr tells them apart).
        key += (repr(value),)
    native = _constants.get(key)
    if native is None:
        if len(_constants) > 4096:
            _constants.clear()
        native = _constants[key] = backend.full((), value, dtype)
    return native


def cached_scalars() -> list:
    """The 0-d native arrays :func:`scalar_native` holds (constants, never written)."""
    return list(_constants.values())


def _scalar_keeps_dtype(a: Tensor, b: Any) -> bool:
    """True when ``a <op> b`` for a Python number b computes in a's dtype (the common case)."""
    kind = a._dtype.kind
    t = type(b)
    return (
        (kind == "f" and (t is float or t is int))
        or (kind == "i" and t is int)
        or (kind == "c" and (t is float or t is int or t is complex))
    )


def _refuse_bool_sub(a: Operand, b: Operand) -> None:
    """PyTorch's RuntimeError for subtracting where either side is a bool."""
    if _is_bool(a) and _is_bool(b):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    if _is_bool(a) or _is_bool(b):
        raise RuntimeError(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
            "trying to invert a mask, use the `~` or `logical_not()` operator instead."
        )


_HALF = (dtypes.float16, dtypes.bfloat16)


@lru_cache(maxsize=1024)
def _exact_in(value: float, dtype: DType) -> bool:
    """Whether the Python number ``value`` is exactly a ``dtype`` (float16 or bfloat16)."""
    wide = np.float32(value)
    if dtype is dtypes.float16:
        with np.errstate(over="ignore"):
            return float(np.float16(value)) == value
    return float(wide) == value and not int(wide.view(np.uint32)) & 0xFFFF


def named(out: Tensor, grad_fn: str) -> Tensor:
    """``out``, its graph node (where it has one) named ``grad_fn``: :func:`labelled` for ops
    whose result is always a node of its own, without that function's check of the inputs
    (it costs ~0.6 us, a third of a small op's time)."""
    node = out._node
    if node is not None:
        node.label = grad_fn
    return out


def _arithmetic(
    name: str,
    *,
    floating: bool = False,
    refuse: Callable[[Operand, Operand], None] | None = None,
    opmath: bool = False,
) -> Callable[[Operand, Operand], Tensor]:
    """A binary op in the promoted dtype (``floating``: ints compute in the default float;
    ``refuse``: raises for operands the op does not take, checked off the fast paths;
    ``opmath``: a half-precision tensor with a number it cannot hold exactly computes in
    float32 and rounds once, as PyTorch's CPU kernels do: x * 1e5 is not x * inf)."""
    compute = _floating if floating else _same
    # PyTorch's name for a tensor minus a tensor; names.py takes a 0-d first operand that
    # needs no gradient for a Python number (RsubBackward1), so the op names it here
    tensors_label = "SubBackward0" if name == "sub" else None

    def widened(t: Tensor, number: Any, number_first: bool) -> Tensor:
        wide = cast(t, dtypes.float32)
        return cast(op(number, wide) if number_first else op(wide, number), t.dtype)

    def keeps(t: Tensor, number: Any) -> bool:
        return _scalar_keeps_dtype(t, number) and (not floating or t._dtype.kind in "fc")

    def op(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
        if out is not None:
            return written_out(name, op(input, other), out, inputs=(input, other))
        if isinstance(input, Tensor):
            if (
                isinstance(other, Tensor)
                and input._dtype is other._dtype  # (the slots: no property on this path)
                and input._shape == other._shape
                and input.backend is other.backend
                and (not floating or input._dtype.kind in "fc")
                and (refuse is None or input._dtype is not dtypes.bool_)
            ):
                # Fast path: one shape, one dtype, one device.
                out = _shaped(
                    getattr(input.backend, name)(input.native, other.native),
                    input.backend,
                    input._dtype,
                    input._shape,
                )
                if (
                    (
                        input._requires_grad
                        or other._requires_grad
                        or input._view_of is not None
                        and view_requires_grad(input)
                        or other._view_of is not None
                        and view_requires_grad(other)
                    )
                    and is_grad_enabled()
                    and not (input._inference and all_inference((input, other)))
                ):
                    out._node = Node(name, (input, other), None)
                    out._requires_grad = True
                    if tensors_label is not None and not input.shape:
                        out._node.label = tensors_label
                return out
            if isinstance(other, np.generic):  # the Python number PyTorch reads
                other = numpy_scalar_number(other)
            if keeps(input, other):
                # Fast path: a tensor and a Python number that does not change its dtype.
                if opmath and input._dtype in _HALF and not _exact_in(other, input._dtype):
                    return widened(input, other, False)
                backend = input.backend
                dtype = input._dtype
                bn = scalar_native(backend, other, dtype)
                native = getattr(backend, name)(input.native, bn)
                out = _shaped(native, backend, dtype, input._shape)
                if (
                    input._requires_grad or input._view_of is not None and input.requires_grad
                ) and is_grad_enabled():
                    out._node = Node(name, (input, _shaped(bn, backend, dtype, NO_DIMS)), None)
                    out._requires_grad = True
                return out
        elif isinstance(other, Tensor):
            if isinstance(input, np.generic):
                input = numpy_scalar_number(input)
            if keeps(other, input):
                # The same with the number on the left (1 - x).
                if opmath and other._dtype in _HALF and not _exact_in(input, other._dtype):
                    return widened(other, input, True)
                backend = other.backend
                dtype = other._dtype
                an = scalar_native(backend, input, dtype)
                native = getattr(backend, name)(an, other.native)
                out = _shaped(native, backend, dtype, other._shape)
                if (
                    other._requires_grad or other._view_of is not None and other.requires_grad
                ) and is_grad_enabled():
                    out._node = Node(name, (_shaped(an, backend, dtype, NO_DIMS), other), None)
                    out._requires_grad = True
                return out
        if opmath:
            number = _half_scalar(input, other)
            if number is not None:
                return widened(input, number, False)
        if refuse is not None:
            _int64_only(input)  # before the refusal, as PyTorch's OverflowError
            _int64_only(other)
            refuse(input, other)
        relabel = (  # (a 0-d tensor first: see tensors_label)
            tensors_label is not None
            and isinstance(input, Tensor)
            and not input.shape
            and isinstance(other, Tensor)
        )
        input, other, backend, dtype, an, bn = _operands(name, input, other, compute)
        out = apply(name, getattr(backend, name)(an, bn), dtype, (input, other))
        if relabel and out._node is not None:
            out._node.label = tensors_label
        return out

    op.__name__ = name
    return op


def _half_scalar(a: Operand, b: Operand) -> Any:
    """The value of a 0-d tensor ``b`` of another dtype beside a half-precision tensor ``a``
    whose dtype the result keeps, when that dtype cannot hold it exactly, else None.

    PyTorch's CPU kernels for ``a * b``, ``a / b`` and ``a // b`` read such a ``b`` (a
    "CPU scalar") at its own precision, in float32: float16 [0, 3] * tensor(2**31 - 1) is
    [0, inf], not [nan, inf], and [3] * tensor(1e-8) is 6e-8, not 0. A ``b`` that requires
    grad is not read so (PyTorch's autograd passes it as a tensor)."""
    if (
        isinstance(a, Tensor)
        and isinstance(b, Tensor)
        and a.dtype in _HALF
        and not b.shape
        and b.dtype is not a.dtype
        and b.dtype.kind != "c"
        and not b.requires_grad
        and result_type(a, b) is a.dtype
    ):
        number = b.item()
        if not _exact_in(number, a.dtype):
            return number
    return None


add_ = _arithmetic("add")
sub_ = _arithmetic("sub", refuse=_refuse_bool_sub)
mul = _arithmetic("mul", opmath=True)
# alpha * b in b's dtype (float32 for half tensors: see _with_alpha), as the in-place
# add_/sub_ fast path (one foreach_add call) computes it: x.add_(y, alpha=a) is add(x, y,
# alpha=a) bit for bit.
_alpha_mul = _arithmetic("mul")
_maximum = _arithmetic("maximum")
_minimum = _arithmetic("minimum")


def require_tensors(op: str, a: Any, b: Any) -> None:
    """PyTorch's binary ops that take no Python number (``maximum(t, 2)`` is a TypeError)."""
    _require_tensor(op, a)
    if not isinstance(b, Tensor):
        raise TypeError(
            f"{op}(): argument 'other' (position 2) must be Tensor, not {type(b).__name__}; "
            "wrap a number with tw.tensor(...)"
        )


def maximum(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
    """The larger of ``input`` and ``other``, elementwise (complex numbers are not ordered)."""
    if out is not None:
        return written_out("maximum", maximum(input, other), out, inputs=(input, other))
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):  # (no call on the hot path)
        require_tensors("maximum", input, other)
    _ordered("maximum", input, other, RuntimeError)
    return _maximum(input, other)


def minimum(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
    """The smaller of ``input`` and ``other``, elementwise (complex numbers are not ordered)."""
    if out is not None:
        return written_out("minimum", minimum(input, other), out, inputs=(input, other))
    if not (isinstance(input, Tensor) and isinstance(other, Tensor)):  # (no call on the hot path)
        require_tensors("minimum", input, other)
    _ordered("minimum", input, other, RuntimeError)
    return _minimum(input, other)


_remainder = _arithmetic("remainder")


def scalar_argument(fn: str, name: str, value: Any, dtype: DType) -> Any:
    """A Python number passed as a Scalar argument of an op computing in ``dtype`` (``alpha``,
    ``value``), read as PyTorch reads it: a bool only for bool results, a float not for
    integer results, a complex only for complex ones, and within the dtype's range."""
    if isinstance(value, Tensor):
        value = value.item()
    elif isinstance(value, np.generic):  # (PyTorch reads a NumPy bool_ as a float)
        value = float(value) if isinstance(value, np.bool_) else value.item()
    if isinstance(value, bool) and dtype is not dtypes.bool_:
        raise RuntimeError(
            f"{fn}: Boolean {name} only supported for Boolean results; pass {name}={int(value)}"
        )
    if isinstance(value, float) and dtype.kind in "biu":
        raise RuntimeError(
            f"{fn}: for integral input tensors, argument {name} must not be a floating point "
            f"number (got {value} for {dtype.name}); convert the tensors to float first"
        )
    if isinstance(value, complex) and dtype.kind != "c":
        raise RuntimeError(
            f"{fn}: for non-complex input tensors, argument {name} must not be a complex number"
        )
    return fill_value(value, dtype, fn)


def _with_alpha(op: Callable, fn: str, a: Operand, b: Operand, alpha: Any) -> Tensor:
    """``op(a, b * alpha)`` as ``add``/``sub`` (``fn``) take it: ``b * alpha`` in the dtype
    they compute in, except for floating-point tensors (for float32 and float64 where alpha
    is not 1), a Python number ``b`` too (see ``_fused_with_alpha``); of two tensors, one
    node (``_alpha_node``)."""
    dtype = result_type(a, b)
    alpha = scalar_argument(fn, "alpha", alpha, dtype)
    if isinstance(a, Tensor) and (dtype in _HALF or (dtype in _FUSED and alpha != 1)):
        if not isinstance(b, Tensor):  # PyTorch's wrapped number: a 0-d tensor in dtype
            b = constant(b, a.backend, dtype)
        return _fused_with_alpha(op, fn, a, b, alpha, dtype)
    if not isinstance(b, Tensor):
        return op(a, b * alpha)
    if not (isinstance(a, Tensor) and (a.requires_grad or b.requires_grad) and is_grad_enabled()):
        return op(a, _alpha_mul(cast(b, dtype), alpha))
    recording = _switched(False)  # (cheaper than two detach() calls)
    try:
        out = op(a, _alpha_mul(cast(b, dtype), alpha))
    finally:
        _restore(recording)
    if not (a._inference and all_inference((a, b))):
        out._node = _alpha_node(fn, a, b, alpha)
        out._requires_grad = True
    return out


def _fused_with_alpha(
    op: Callable, fn: str, a: Tensor, b: Tensor, alpha: Any, dtype: DType
) -> Tensor:
    """``a + b * alpha`` (``sub``: ``-alpha``) as PyTorch's CPU kernel computes it. In
    float32 and float64 torch's is a fused multiply-add with alpha in ``dtype`` (rounded
    once; rounding b * alpha first differs in ~1/10 of the elements): the backend's
    ``foreach_add`` (torch's own; NumPy's rounds twice, as hand-written NumPy: rounding
    once through float64 costs 2.5-9x per add, measured in session 31). In a half ``dtype``: in
    float32 with alpha rounded to ``dtype``, rounded once (rounding b * alpha
    first differs in ~2% of the elements), except in its scalar loop, which rounds b * alpha
    first: over the last (length mod 32) elements of each vectorized inner loop (a broadcast
    operand's rows shorter than 32 and strided operands take it throughout; see the contract's
    ``foreach_add``). Where the backend has ``foreach_add``, it computes the values from
    the operands converted to ``dtype`` and expanded to the result's shape (zero-stride
    views, as torch's own broadcasting sees them; on the torch backend torch's own kernel);
    elsewhere every half element is rounded once (torch's CUDA kernel), wider ones twice.
    The gradient is the per-op one (see ``_alpha_node``)."""
    backend = a.backend
    add_scaled = getattr(backend, "foreach_add", None)
    if add_scaled is None or b.backend is not backend:
        rounded = constant(alpha, backend, dtype).item()
        wider = dtypes.float32 if dtype in _HALF else dtype
        wide = op(cast(a.detach(), wider), _alpha_mul(cast(b.detach(), wider), rounded))
        out = cast(wide, dtype)
    else:
        shape = a.shape if a.shape == b.shape else broadcast_shapes(fn, a.shape, b.shape)
        x, y = _spread(a, dtype, shape), _spread(b, dtype, shape)
        (native,) = add_scaled([x], [y], alpha if fn == "add" else -alpha)
        out = Tensor(native, backend, dtype)
    if (
        (a.requires_grad or b.requires_grad)
        and is_grad_enabled()
        and not (a._inference and all_inference((a, b)))
    ):
        out._node = _alpha_node(fn, a, b, alpha)
        out._requires_grad = True
    return out


def _spread(t: Tensor, dtype: DType, shape: tuple) -> Any:
    """``t``'s native array in ``dtype`` as a view of ``shape`` (a 0-d one too), zero
    strides where it broadcasts."""
    if t.dtype is not dtype:
        t = cast(t.detach(), dtype)
    if t.shape == shape:
        return t.native
    if not t.shape:
        return t.backend.expand(t.backend.reshape(t.native, (1,) * len(shape)), shape)
    return expand_native(t, shape)


def _alpha_node(fn: str, a: Tensor, b: Tensor, alpha: Any) -> Node:
    """PyTorch's AddBackward0/SubBackward0 of ``a`` and ``b``: one node whose rule applies
    alpha (b's gradient g * alpha, in the output's shape and dtype before the sum over
    broadcast dimensions: for a half output in float32 with the unrounded alpha, rounded
    once, ``mul``'s rule), so that its hooks and ``next_functions`` see ``b`` itself."""
    node = Node(fn, (a, b), alpha)
    if fn == "sub":  # (names.py would take a 0-d ``a`` for a Python number: RsubBackward1)
        node.label = "SubBackward0"
    return node


def add(input: Operand, other: Operand, *, alpha: Any = None, out: Tensor | None = None) -> Tensor:
    """``input + alpha * other``."""
    if out is not None:
        return written_out("add", add(input, other, alpha=alpha), out, inputs=(input, other))
    if alpha is None:
        return add_(input, other)
    return _with_alpha(add_, "add", input, other, alpha)


def sub(input: Operand, other: Operand, *, alpha: Any = None, out: Tensor | None = None) -> Tensor:
    """``input - alpha * other``."""
    if out is not None:
        return written_out("sub", sub(input, other, alpha=alpha), out, inputs=(input, other))
    if alpha is None:
        return sub_(input, other)
    _refuse_bool_sub(input, other)
    return _with_alpha(sub_, "sub", input, other, alpha)


_true_divide = _arithmetic("div", floating=True, opmath=True)


def _is_float(value: Operand) -> bool:
    return isinstance(value, (float, complex)) or (
        isinstance(value, Tensor) and value.dtype.kind in "fc"
    )


def _is_bool(value: Operand) -> bool:
    return isinstance(value, bool) or (isinstance(value, Tensor) and value.dtype is dtypes.bool_)


def _has_zero(t: Tensor) -> bool:
    """Whether some element of ``t`` is zero: one reduction, one value read back."""
    n = t.numel()
    if not n:
        return False
    backend = t.backend
    flat = backend.reshape(t.native, (n,))
    hit = backend.any(backend.eq(flat, backend.full((), 0, t.dtype)), (0,), False)
    return bool(backend.to_host(hit))


def check_divisor(op: str, a: Operand, b: Operand) -> None:
    """PyTorch's CPU errors for an integer division ``a / b`` (floor_divide, remainder, fmod,
    div with rounding): NotImplementedError for two bools, RuntimeError for a zero divisor.
    A float division passes: it gives inf or NaN (IEEE)."""
    _int64_only(a)  # PyTorch's OverflowError comes first
    _int64_only(b)
    if _is_float(a) or _is_float(b):
        return
    if _is_bool(a) and _is_bool(b):
        raise NotImplementedError(
            f'"{op}" not implemented for bool tensors; convert them with .int() first'
        )
    if isinstance(a, Tensor) and not a.numel():
        return  # nothing is divided
    if not isinstance(b, Tensor):
        _int64_only(b)
        if type(b) is int and b > _INT64_MAX:
            b -= _UINT64_END  # a uint64, wrapped (see scalar_native)
        b = _wrapped(b, result_type(a, b))  # 256 is 0 for uint8: PyTorch wraps, then divides
    if _has_zero(b) if isinstance(b, Tensor) else b == 0:
        raise RuntimeError(
            f"{op}(): ZeroDivisionError: an integer divisor is zero; divide floats to get inf "
            "or NaN instead"
        )


def div(
    input: Operand, other: Operand, *, rounding_mode: str | None = None, out: Tensor | None = None
) -> Tensor:
    """True division (ints give the default float), or ``"floor"``/``"trunc"`` rounding."""
    if out is not None:
        result = div(input, other, rounding_mode=rounding_mode)
        return written_out("div", result, out, inputs=(input, other))
    if rounding_mode is None:
        return _true_divide(input, other)
    if rounding_mode not in ("floor", "trunc"):
        raise RuntimeError(
            f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}"
        )
    check_divisor("div", input, other)
    if rounding_mode == "floor":
        return _floor_divide(input, other)
    dtype = result_type(input, other)
    if dtype.kind in "fc":
        return trunc(_true_divide(input, other))
    return _trunc_divide(input, other, dtype)


def _trunc_divide(a: Operand, b: Operand, dtype: DType) -> Tensor:
    """Integer division rounded toward zero, exact for every int64 (a float quotient is not):
    the floor quotient, plus one where the division is inexact and the signs differ."""
    if not isinstance(b, Tensor):
        b = Tensor(scalar_native(a.backend, b, dtype), a.backend, dtype)
    elif not isinstance(a, Tensor):
        a = Tensor(scalar_native(b.backend, a, dtype), b.backend, dtype)
    # In the result dtype first: the signs compared below are those of the cast values (a 0-d
    # int32 2**31 - 1 beside int8 is -1)
    a, b = cast(a, dtype), cast(b, dtype)
    quotient = _floor_divide(a, b)
    if dtype.kind == "u":
        return quotient
    rest = _remainder(a, b)  # has b's sign: a and b differ in sign where it differs from a's
    inexact = logical_and(ne(rest, 0), ne(lt(rest, 0), lt(a, 0)))
    return add_(quotient, cast(inexact, dtype))


def floor_divide(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
    """floor(input / other), as Python's ``//``."""
    if out is not None:
        return written_out("floor_divide", floor_divide(input, other), out, inputs=(input, other))
    check_divisor("floor_divide", input, other)
    return _floor_divide(input, other)


def _floor_divide(a: Operand, b: Operand) -> Tensor:
    _ordered("floor_divide", a, b)
    if isinstance(a, Tensor) and a.dtype in _HALF:
        # By a number (or 0-d tensor) the dtype cannot hold: in float32, as PyTorch's CPU kernel
        number = _half_scalar(a, b)
        if number is None and type(b) in (int, float) and not _exact_in(b, a.dtype):
            number = b
        if number is not None:
            return cast(_floor_divide(cast(a, dtypes.float32), number), a.dtype)
    a, b, backend, dtype, an, bn = _operands("floor_divide", a, b, _same)
    return apply("floor_divide", backend.floordiv(an, bn), dtype, (a, b))


def remainder(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
    """input - floor(input / other) * other, with the sign of ``other``, as Python's ``%``."""
    if out is not None:
        return written_out("remainder", remainder(input, other), out, inputs=(input, other))
    check_divisor("remainder", input, other)
    _ordered("remainder", input, other)
    out = _remainder(input, other)
    if not isinstance(other, Tensor) and isinstance(input, Tensor) and input._inference:
        # (of an inference input PyTorch wraps the number: its tensor overload)
        return labelled(out, "RemainderBackward1", input)
    return out


#: An argument of ``pow`` not given.
_NOT_GIVEN: Any = object()


def _number_base(input: Any, exponent: Any, base: Any) -> Any:
    """``pow``'s base passed as ``self=``, the name PyTorch's (Number self, Tensor exponent)
    overload gives it; any other combination is PyTorch's TypeError."""
    if (
        input is not _NOT_GIVEN
        or base is _NOT_GIVEN
        or isinstance(base, Tensor)
        or not isinstance(exponent, Tensor)
    ):
        raise TypeError(
            "pow() received an invalid combination of arguments: expected (Tensor input, "
            "Tensor exponent), (Number self, Tensor exponent) or (Tensor input, Number exponent)"
        )
    return base


def pow(
    input: Operand = _NOT_GIVEN,
    exponent: Operand = _NOT_GIVEN,
    *,
    self: Any = _NOT_GIVEN,
    out: Tensor | None = None,
) -> Tensor:
    """``input ** exponent``. As in PyTorch, an integer tensor to a negative Python int is an
    error, while negative integers in an exponent tensor give 0 (1 and -1 to them give 1 and
    +-1)."""
    if self is not _NOT_GIVEN or input is _NOT_GIVEN or exponent is _NOT_GIVEN:
        input = _number_base(input, exponent, self)
    if out is not None:
        return written_out("pow", pow(input, exponent), out, inputs=(input, exponent))
    if isinstance(input, (int, float, complex)) and isinstance(exponent, Tensor):
        # pow(Scalar, Tensor): PyTorch's result is row-major whatever the exponent's layout
        # (a tensor to a tensor's power follows the operands' layouts)
        return ix.allocated_as(_powers(input, exponent))
    return _powers(input, exponent)


def _powers(input: Operand, exponent: Operand) -> Tensor:
    """``pow``'s computation, its operands given positionally."""
    root = None
    if isinstance(input, Tensor) and isinstance(exponent, (int, float)):
        dtype = result_type(input, exponent)
        if dtype.kind in "iu" and isinstance(exponent, int) and exponent < 0:
            raise RuntimeError(
                "pow: Integers to negative integer powers are not allowed; "
                "use a float base, e.g. x.float() ** -1"
            )
        if dtype.kind in "iu" or dtype in (dtypes.float16, dtypes.bfloat16):
            # PyTorch's overflow check of an exponent it converts to the tensor's dtype
            # (float32 and float64 take theirs as a double).
            exponent = fill_value(exponent, dtype, "pow")
        if (
            dtype.kind == "f"
            and dtype is not dtypes.float16
            and type(exponent) is float
            and exponent in (0.5, -0.5)
        ):
            # PyTorch's sqrt and rsqrt for these exponents: (-inf) ** 0.5 is NaN, and
            # (-0.0) ** -0.5 is -inf (C's pow, which float16 keeps, gives inf and inf); its
            # node is pow's (PowBackward0), recorded below over these values
            if not (input.requires_grad and is_grad_enabled()):
                return _root(cast(input, dtype), exponent < 0)  # (no node: no more to do)
            root = _root(cast(input.detach(), dtype), exponent < 0).native
    elif _is_bool(input) and isinstance(exponent, Tensor) and exponent.dtype is dtypes.bool_:
        raise NotImplementedError(
            '"pow" not implemented for bool exponent tensors with a bool '
            "base; convert them with .int() first"
        )
    number_exponent = not isinstance(exponent, Tensor)
    tensors = not number_exponent and isinstance(input, Tensor)
    power = exponent
    # The operand given as a number, for the gradient (PyTorch's PowBackward0/2 use it)
    numbers = ones = None
    if number_exponent:
        if isinstance(exponent, (int, float, complex)):
            numbers = (None, exponent)
    elif isinstance(input, (int, float, complex)):
        numbers = (input, None)
        ones = input == 1  # PyTorch fills ones then (exp(z * log 1) is NaN where z is)
    input, exponent, backend, dtype, an, bn = _operands("pow", input, exponent, _same)
    if dtype is dtypes.bool_:  # as integers: True ** x is True, x ** False is True
        u8 = dtypes.uint8
        native = backend.pow(backend.cast(an, u8), backend.cast(bn, u8))
        return Tensor(backend.cast(native, dtype), backend, dtype)
    if dtype.kind == "i":
        return Tensor(_int_pow(backend, an, bn, dtype), backend, dtype)
    if root is not None:
        native = root
    elif ones:
        native = backend.full(tuple(exponent.shape), 1, dtype)
    elif (
        number_exponent
        and dtype in _STEPPED_POWERS
        and power in _STEPPED
        and backend.device.kind == "cpu"
    ):
        native = _stepped_power(backend, an, power, dtype)
    elif number_exponent and dtype.kind == "c" and power in _EXACT_COMPLEX:
        # PyTorch's kernels for these exponents (a complex pow is exp(p * log(x)), which
        # makes (1+1j) ** 2 -8.7e-08+2j in complex64; PyTorch gives 2j)
        if power == 1:  # a copy
            native = backend.where(backend.full((), True, dtypes.bool_), an, an)
        elif power in (0.5, -0.5):  # sqrt, and rsqrt as 1 / sqrt
            root = backend.sqrt(an)
            native = root if power.real > 0 else _stepped_power(backend, root, -1, dtype)
        else:
            native = _stepped_power(backend, an, power, dtype)
    elif number_exponent and dtype is dtypes.float32 and _wider_than_float32(power, backend):
        # PyTorch's scalar loop takes the number as a double (pow_tensor_scalar), its vector
        # lanes as a float: the backend gets the double (a CPU backend computing float32 in
        # double sees both; a float64 result from a backend that promotes is rounded once)
        native = backend.cast(backend.pow(an, scalar_native(backend, power, _F64)), dtype)
    else:
        native = backend.pow(an, bn)
    if dtype.kind == "c" and number_exponent and exponent.item() == 0:
        # z ** 0 is 1 for every z, as PyTorch's pow with a number (exp(0 * log 0) is NaN;
        # with an exponent tensor PyTorch gives NaN too)
        native = backend.where(backend.eq(bn, bn), backend.full((), 1, dtype), native)
    if number_exponent and input._inference and all_inference((input,)):
        # pow(Tensor, Scalar): PyTorch's autograd skips it for an inference tensor alone
        return Tensor(native, backend, dtype)
    # A tensor exponent's node keeps the result array, its rule's value, as PyTorch's
    # PowBackward1/2 save the result (a write through ``.data`` reaches it: autograd/node.py
    # output_rewritten); a number exponent's keeps that number (PowBackward0 saves no result)
    saved = numbers if number_exponent else native
    if tensors and SAVED_TENSORS_HOOKS:  # (a 0-d operand is packed too, as PowBackward1's)
        from tensorweaver.autograd.graph import GIVEN_TENSORS

        GIVEN_TENSORS[0] = True
        try:
            out = apply("pow", native, dtype, (input, exponent), saved)
        finally:
            GIVEN_TENSORS[0] = False
    else:
        out = apply("pow", native, dtype, (input, exponent), saved)
    # PyTorch's name for a tensor to a tensor's power, 0-d ones included (names.py takes a
    # 0-d operand that needs no gradient for a Python number)
    return named(out, "PowBackward1") if tensors else out


_F64 = dtypes.float64
#: The dtypes whose ``add``/``sub`` with alpha the backend's ``foreach_add`` computes.
_FUSED = (dtypes.float32, dtypes.float64)


def _wider_than_float32(power: Any, backend: Any) -> bool:
    """Whether the Python number ``power`` is not exactly a float32 (``1.3``), for a CPU
    backend (other devices' kernels are not known to take a double exponent)."""
    return (
        type(power) in (int, float)
        and -3e38 < power < 3e38  # (beyond, float32's inf: the power is 0, 1 or inf either way)
        and float(np.float32(power)) != power
        and backend.device.kind == "cpu"
    )


#: The dtypes whose x ** n (n in _STEPPED) PyTorch's CPU kernel computes in steps.
_STEPPED_POWERS = (dtypes.float32, dtypes.float64, dtypes.bfloat16)
_STEPPED = (2, 3, -1, -2)
#: The number exponents of a complex tensor that PyTorch computes exactly, not by ``pow``.
_EXACT_COMPLEX = (*_STEPPED, 1, 0.5, -0.5)


def _stepped_power(backend: Any, base: Any, power: Any, dtype: DType) -> Any:
    """x ** 2 as x * x, x ** 3 as (x * x) * x, x ** -1 as 1 / x and x ** -2 as 1 / (x * x),
    each step rounded, as PyTorch's CPU kernel (C's pow rounds x ** 3 once: 1 ulp off in
    ~1/4 of the elements; float16 computes in float32 and rounds once, and other devices'
    kernels are not known to step)."""
    if power == 2:
        return backend.mul(base, base)
    if power == 3:
        return backend.mul(backend.mul(base, base), base)
    divisor = base if power == -1 else backend.mul(base, base)
    quotient = backend.div(backend.full((), 1, dtype), divisor)
    if dtype.kind != "c":
        return quotient
    # Smith's division (NumPy's, PyTorch's) gives NaN where neither part of the divisor is
    # finite, C99 Annex G's (cuPyNumeric's) 0 where one is infinite: PyTorch's NaN everywhere
    inf = backend.full((), math.inf, dtype.to_real())
    finite = backend.logical_or(
        backend.lt(backend.abs(backend.real(divisor)), inf),
        backend.lt(backend.abs(backend.imag(divisor)), inf),
    )
    return backend.where(finite, quotient, backend.full((), complex(math.nan, math.nan), dtype))


def _root(x: Tensor, reciprocal_: bool) -> Tensor:
    """sqrt(x), or 1 / sqrt(x) (rounded once from float32 for the half types, as PyTorch)."""
    if not reciprocal_:
        return sqrt(x)
    if x.dtype in _HALF:
        return in_float32(lambda wide: _root(wide, True), x)
    return div(1, sqrt(x))


def _int_pow(backend: Any, base: Any, exponent: Any, dtype: DType) -> Any:
    """Signed integer powers where exponents may be negative: 1 and -1 keep their
    magnitude (-1 to an odd power is -1), any other base gives 0."""
    zero, one = backend.full((), 0, dtype), backend.full((), 1, dtype)
    powers = backend.pow(base, backend.maximum(exponent, zero))
    odd = backend.ne(backend.bitwise_and(exponent, one), zero)
    unit = backend.where(odd, base, one)  # (+-1) ** -n
    small = backend.where(backend.eq(backend.abs(base), one), unit, zero)
    return backend.where(backend.lt(exponent, zero), small, powers)


def refuse_complex(
    op: str, fix: str, *operands: Operand, error: type[Exception] = NotImplementedError
) -> None:
    """PyTorch's ``error`` (mostly NotImplementedError) where an operand is complex (a tensor
    or a number) and ``op`` has no complex form: ``fix`` says what to compute instead."""
    for x in operands:
        if isinstance(x, complex) or (isinstance(x, Tensor) and x.dtype.kind == "c"):
            raise error(f"{op}: {fix}")


def _ordered(
    name: str, a: Operand, b: Operand, error: type[Exception] = NotImplementedError
) -> None:
    """PyTorch's error for ordering complex numbers (``<``, ``max``, ``clamp``...): ``error``
    (RuntimeError for maximum, minimum and clamp)."""
    refuse_complex(
        name,
        "complex numbers are not ordered; compare their .abs() or .real instead",
        a,
        b,
        error=error,
    )


def _comparison(name: str) -> Callable[[Operand, Operand], Tensor]:
    ordered = name not in ("eq", "ne")

    def op(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
        if out is not None:
            return written_out(
                name, op(input, other), out, differentiable=False, inputs=(input, other)
            )
        if (
            isinstance(other, Tensor)
            and isinstance(input, Tensor)
            and input.dtype is other.dtype
            and input.shape == other.shape
            and input.backend is other.backend
            and not (ordered and input.dtype.kind == "c")
        ):
            return Tensor(
                getattr(input.backend, name)(input.native, other.native),
                input.backend,
                dtypes.bool_,
            )
        if not isinstance(input, Tensor):  # tw.eq(2, t): PyTorch takes no number first
            _require_tensor(name, input)
        if ordered:
            _int64_only(input)  # PyTorch's OverflowError comes first
            _int64_only(other)
            _ordered(name, input, other)
        if isinstance(input, Tensor) and _scalar_keeps_dtype(input, other):
            bn = scalar_native(input.backend, other, input.dtype)
            return Tensor(
                getattr(input.backend, name)(input.native, bn), input.backend, dtypes.bool_
            )
        if not isinstance(other, (Tensor, int, float, complex, np.ndarray, np.generic)):
            return NotImplemented
        input, other, backend, _, an, bn = _operands(name, input, other, _same)
        return Tensor(getattr(backend, name)(an, bn), backend, dtypes.bool_)

    op.__name__ = name
    return op


eq = _comparison("eq")
ne = _comparison("ne")
lt = _comparison("lt")
le = _comparison("le")
gt = _comparison("gt")
ge = _comparison("ge")


def _truth(backend: Any, native: Any, dtype: DType) -> Any:
    """``native`` (of ``dtype``) as bools: nonzero, in either part of a complex number."""
    if dtype is dtypes.bool_:
        return native
    if dtype.kind == "c":
        return backend.ne(native, backend.full((), 0, dtype))
    return backend.cast(native, dtypes.bool_)


def _logical(name: str) -> Callable[[Operand, Operand], Tensor]:
    def op(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
        if out is not None:
            return written_out(
                name, op(input, other), out, differentiable=False, inputs=(input, other)
            )
        _require_tensor(name, input)
        _require_tensor(name, other, "other")
        # Each operand is first converted to the promoted dtype, as PyTorch's kernel reads
        # it: int8 with a 0-d int64 256 sees 0 (False), not 256.
        input, other, backend, dtype, an, bn = _operands(name, input, other, _same)
        an, bn = _truth(backend, an, dtype), _truth(backend, bn, dtype)
        return Tensor(getattr(backend, name)(an, bn), backend, dtypes.bool_)

    op.__name__ = name
    return op


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")


def _integral(op: str) -> Callable[[DType], DType]:
    def check(dtype: DType) -> DType:
        if dtype.kind in "fc":
            raise NotImplementedError(
                f"{op} (&, |, ^, ~): only integer and bool tensors are supported, got {dtype.name}"
            )
        return dtype

    return check


def _bitwise(name: str) -> Callable[[Operand, Operand], Tensor]:
    check = _integral(name)

    def op(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
        if out is not None:
            return written_out(name, op(input, other), out, inputs=(input, other))
        input, other, backend, dtype, an, bn = _operands(name, input, other, check)
        return Tensor(getattr(backend, name)(an, bn), backend, dtype)

    op.__name__ = name
    return op


bitwise_and = _bitwise("bitwise_and")
bitwise_or = _bitwise("bitwise_or")
bitwise_xor = _bitwise("bitwise_xor")


def _require_tensor(op: str, x: Any, argument: str = "input") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{argument}' must be a Tensor, not {type(x).__name__}")
    return x


# -- unary ------------------------------------------------------------------------------------


def _no_complex(name: str, x: Tensor) -> None:
    refuse_complex(
        name,
        f"not implemented for complex tensors ({x.dtype.name}); apply it to x.real and "
        "x.imag, or to x.abs()",
        x,
    )


def _unary(
    name: str, *, floating: bool, save_output: bool = False, complex_ok: bool = True
) -> Callable[[Tensor], Tensor]:
    """A unary op; ``floating`` ops compute ints in the default float dtype."""

    def op(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        if out is not None:
            return written_out(name, op(input), out, inputs=(input,))
        if not isinstance(input, Tensor):
            _require_tensor(name, input)
        if not complex_ok:
            _no_complex(name, input)
        if floating and input._dtype.kind not in "fc":
            input = input.to(get_default_dtype())
        backend = input.backend
        native = getattr(backend, name)(input.native)
        out = _shaped(native, backend, input._dtype, input._shape)
        if (
            # (the slots first: the property's call only for a view, whose flag may be its
            # base's)
            (input._requires_grad or input._view_of is not None and input.requires_grad)
            and is_grad_enabled()
            and not (input._inference and all_inference((input,)))
        ):
            out._node = Node(name, (input,), native if save_output else None)
            out._requires_grad = True
        return out

    op.__name__ = name
    return op


_neg = _unary("neg", floating=False)
_abs_real = _unary("abs", floating=False)


def neg(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """-x; a bool tensor is refused, as in PyTorch."""
    if out is not None:
        return written_out("neg", neg(input), out, same_dtype=True, inputs=(input,))
    if _require_tensor("neg", input).dtype is dtypes.bool_:
        raise RuntimeError(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
            "to invert a mask, use the `~` or `logical_not()` operator instead."
        )
    return _neg(input)


def abs(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """|x|; the float modulus of a complex tensor."""
    if out is not None:
        return written_out("abs", abs(input), out, same_dtype=True, inputs=(input,))
    if _require_tensor("abs", input).dtype is dtypes.bool_:
        raise NotImplementedError('"abs" not implemented for bool tensors; use x.int().abs()')
    if input.dtype.kind == "c":
        return apply("abs", input.backend.abs(input.native), input.dtype.to_real(), (input,))
    return _abs_real(input)


exp = _unary("exp", floating=True, save_output=True)
log = _unary("log", floating=True)
sin = _unary("sin", floating=True)
cos = _unary("cos", floating=True)
tanh = _unary("tanh", floating=True, save_output=True)
sqrt = _unary("sqrt", floating=True, save_output=True)
erf = _unary("erf", floating=True, complex_ok=False)


def _piecewise_constant(name: str) -> Callable[[Tensor], Tensor]:
    """Rounding and sign: integer tensors pass through; the gradient is zero."""

    def op(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        if out is not None:
            return written_out(name, op(input), out, same_dtype=True, inputs=(input,))
        _require_tensor(name, input)
        _no_complex(name if name != "sign" else "sign (use tw.sgn for complex numbers)", input)
        if input.dtype is dtypes.bool_ and name != "sign":
            raise NotImplementedError(
                f'"{name}" not implemented for bool tensors; convert them with .int() first'
            )
        if input.dtype.kind != "f" and name != "sign":
            return Tensor(input.native, input.backend, input.dtype)
        return apply(name, getattr(input.backend, name)(input.native), input.dtype, (input,))

    op.__name__ = name
    return op


_sign = _piecewise_constant("sign")


def sign(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """-1, 0 or 1; NaN gives 0, as in PyTorch."""
    if out is not None:
        return written_out("sign", sign(input), out, same_dtype=True, inputs=(input,))
    _require_tensor("sign", input)
    if input.dtype.kind != "f":
        return _sign(input)
    # One node of its own that keeps nothing, as PyTorch's SignBackward0 (no where's node
    # packing a bool NaN mask under saved_tensors_hooks): NaN gives 0 on the arrays
    b, n = input.backend, input.native
    native = b.where(b.ne(n, n), b.full((), 0, input.dtype), b.sign(n))
    return apply("sign", native, input.dtype, (input,))


floor = _piecewise_constant("floor")
ceil = _piecewise_constant("ceil")
trunc = _piecewise_constant("trunc")
_round_even = _piecewise_constant("round")


def round(input: Tensor, *, decimals: int = 0, out: Tensor | None = None) -> Tensor:
    """Round half to even, optionally to ``decimals`` places."""
    if out is not None:
        result = round(input, decimals=decimals)
        return written_out("round", result, out, same_dtype=True, inputs=(input,))
    if decimals == 0:
        return _round_even(input)
    if _require_tensor("round", input).dtype.kind not in "fc":
        raise NotImplementedError(
            f'"round" with decimals is not implemented for {input.dtype.name} tensors; convert '
            "them with .float() first"
        )
    if input.dtype in _HALF:  # 10000 * 100 overflows float16: scaled in float32, as PyTorch
        return cast(round(cast(input, dtypes.float32), decimals=decimals), input.dtype)
    if decimals < 0:  # by 10^-decimals, exact, not by its inexact reciprocal (7000 not 6999.9995)
        scale = 10.0**-decimals
        return mul(_round_even(div(input, scale)), scale)
    scale = 10.0**decimals
    return div(_round_even(mul(input, scale)), scale)


def logical_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        result = logical_not(input)
        return written_out("logical_not", result, out, differentiable=False, inputs=(input,))
    input = _require_tensor("logical_not", input)
    native = _truth(input.backend, input.native, input.dtype)
    return Tensor(input.backend.logical_not(native), input.backend, dtypes.bool_)


class BitwiseNotError(TypeError, NotImplementedError):
    """``~x`` or ``bitwise_not(x)`` of a float or complex tensor: PyTorch raises TypeError for
    the operator and NotImplementedError for the function, which share this code."""


def bitwise_not(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        result = bitwise_not(input)
        return written_out("bitwise_not", result, out, same_dtype=True, inputs=(input,))
    input = _require_tensor("bitwise_not", input)
    if input.dtype.kind in "fc":
        raise BitwiseNotError(
            "~ (bitwise_not) is only implemented on integer and bool tensors, got "
            f"{input.dtype.name}"
        )
    return Tensor(input.backend.bitwise_not(input.native), input.backend, input.dtype)


def _float_input(op: str, x: Tensor) -> Tensor:
    _require_tensor(op, x)
    _no_complex(op, x)
    return x if x.dtype.kind == "f" else x.to(get_default_dtype())


def sigmoid(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """1 / (1 + e^-x): the backend's optional ``sigmoid`` kernel, else e^-|x| composed so
    neither tail loses its relative accuracy (sigmoid(-100) is 3.7e-44, not 0) and nothing
    overflows."""
    if out is not None:
        return written_out("sigmoid", sigmoid(input), out, inputs=(input,))
    if isinstance(input, Tensor) and input.dtype.kind == "c":
        # composed, as PyTorch's complex kernel
        return reciprocal(add(exp(neg(input)), 1))
    input = _float_input("sigmoid", input)
    b = input.backend
    kernel = getattr(b, "sigmoid", None)
    if kernel is not None:
        native = kernel(input.native)
    else:
        e = b.exp(b.neg(b.abs(input.native)))
        positive = b.div(b.full((), 1, input.dtype), b.add(b.full((), 1, input.dtype), e))
        zero = b.full((), 0, input.dtype)
        native = b.where(b.ge(input.native, zero), positive, b.mul(e, positive))
    return apply("sigmoid", native, input._dtype, (input,), native, input._shape)


def relu(input: Tensor) -> Tensor:
    """max(x, 0), through the backend's fused kernel where it has one. The node keeps the
    output, not x: the gradient passes where the output is positive."""
    _require_tensor("relu", input)
    _no_complex("relu", input)
    if input.dtype is dtypes.bool_:
        raise RuntimeError("relu: Boolean inputs not supported for relu; convert with .int()")
    backend = input.backend
    fused = fused_kernel(backend, "relu") if input.dtype.kind == "f" else None
    if fused is None:
        # maximum(0, x): NaN stays, and NumPy's maximum returns its second operand on a tie,
        # so -0.0 stays as in PyTorch (one pass; lt + where took 7x as long on NumPy)
        zero = scalar_native(backend, 0, input.dtype)
        native, saved = backend.maximum(zero, input.native), None
    else:
        native, saved = fused(input.native)
    return apply("relu", native, input._dtype, (input,), (native, saved), input._shape)


def in_float32(fn: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """``fn(x)`` for a half-precision ``x`` computed in float32 and rounded once, as PyTorch's
    CPU kernels compute them (a composed formula in float16 loses digits or overflows)."""
    return cast(fn(cast(x, dtypes.float32)), x.dtype)


def log1p(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """log(1 + x), accurate for tiny x: log(u) * (x / (u - 1)) with u = 1 + x (Goldberg);
    complex x composed plainly."""
    if out is not None:
        return written_out("log1p", log1p(input), out, inputs=(input,))
    if isinstance(input, Tensor) and input.dtype.kind == "c":
        return _complex_log1p(input)
    input = _float_input("log1p", input)
    if input.dtype in _HALF:
        return in_float32(log1p, input)
    b = input.backend
    one = b.full((), 1, input.dtype)
    u = b.add(input.native, one)
    um1 = b.sub(u, one)
    exact = b.eq(um1, b.full((), 0, input.dtype))
    safe = b.where(exact, one, um1)
    # (x / (u - 1) first: log(u) * x overflows for x near the dtype's largest value)
    native = b.where(exact, input.native, b.mul(b.log(u), b.div(input.native, safe)))
    # Where u is inf the ratio is inf * x / inf: take log(u) itself.
    native = b.where(b.eq(u, b.full((), math.inf, input.dtype)), u, native)
    return apply("log1p", native, input.dtype, (input,))


def _complex_log1p(z: Tensor) -> Tensor:
    """log(1 + z) from z's parts, accurate for small z (log(add(z, 1)) loses the digits of
    a tiny real part): arg(1 + z) = atan2(y, 1 + x); log|1 + z| = log1p(x (2 + x) + y^2) / 2
    for |z| < 1/2 (x itself where that sum underflows to 0), else log(hypot(1 + x, y)), whose
    squares cannot overflow (y = 1e20 in complex64), as PyTorch's CUDA kernel; its CPU
    kernel agrees to rounding but for the NaNs below."""
    from tensorweaver.ops.complex import complex, imag, real
    from tensorweaver.ops.numeric import hypot
    from tensorweaver.ops.special import atan2

    x, y = real(z), imag(z)
    small = lt(abs(z), 0.5)
    # Each branch sees harmless values where the other is taken (no inf * 0 in a gradient).
    r = where(small, add(mul(x, add(x, 2)), mul(y, y)), 0.0)
    near = where(eq(r, 0), x, mul(log1p(r), 0.5))
    far = log(hypot(where(small, 1.0, add(x, 1)), where(small, 0.0, y)))
    # PyTorch's CPU kernel takes log(u) * (z / (u - 1)): NaN + NaNj for an infinite imaginary
    # part with a finite real part that 1 + x loses (log1p(1e-8 + infj) in complex64).
    lost = logical_and(logical_and(isinf(y), isfinite(x)), ne(sub(add(x, 1), 1), x))
    return complex(
        where(lost, math.nan, where(small, near, far)),
        where(lost, math.nan, atan2(y, add(x, 1))),
    )


def expm1(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """e^x - 1, accurate for tiny x: (u - 1) * x / log(u) with u = e^x; complex x composed
    plainly."""
    if out is not None:
        return written_out("expm1", expm1(input), out, inputs=(input,))
    if isinstance(input, Tensor) and input.dtype.kind == "c":
        return _complex_expm1(input)
    input = _float_input("expm1", input)
    if input.dtype in _HALF:
        return in_float32(expm1, input)
    b = input.backend
    one = b.full((), 1, input.dtype)
    u = b.exp(input.native)
    um1 = b.sub(u, one)
    logu = b.log(u)
    plain = b.logical_or(
        b.eq(um1, b.full((), 0, input.dtype)), b.eq(b.abs(logu), b.full((), math.inf, input.dtype))
    )
    ratio = b.div(b.mul(um1, input.native), b.where(plain, one, logu))
    native = b.where(
        b.eq(um1, b.full((), 0, input.dtype)), input.native, b.where(plain, um1, ratio)
    )
    # For large |x| where u - 1 == -1 the formula's 0/0 corner is avoided by `plain`.
    native = b.where(b.eq(um1, b.full((), -1, input.dtype)), um1, native)
    return apply("expm1", native, input.dtype, (input,), native)


def _complex_expm1(z: Tensor) -> Tensor:
    """e^z - 1 from z's parts, accurate for small z (exp(z) - 1 is 0 for z = 1e-8 in
    complex64), as PyTorch: expm1(x) cos(y) - 2 sin(y / 2)^2 + i e^x sin(y)."""
    from tensorweaver.ops.complex import complex, imag, real

    x, y = real(z), imag(z)
    half = sin(mul(y, 0.5))
    return complex(sub(mul(expm1(x), cos(y)), mul(mul(half, half), 2)), mul(exp(x), sin(y)))


def clamp(input: Tensor, min: Any = None, max: Any = None, *, out: Tensor | None = None) -> Tensor:
    """Limit ``input`` to [min, max]; the gradient passes where min <= input <= max, as in
    PyTorch."""
    if out is not None:
        result = clamp(input, min, max)
        return written_out("clamp", result, out, same_dtype=True, inputs=(input, min, max))
    _require_tensor("clamp", input)
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of 'min' and 'max' must not be None")
    if (isinstance(min, Tensor) or isinstance(max, Tensor)) and not all(
        isinstance(v, (Tensor, type(None))) for v in (min, max)
    ):
        # A number beside a tensor bound: PyTorch reads a 0-d one as a number too, and
        # refuses the pair otherwise.
        if any(isinstance(v, Tensor) and v.shape for v in (min, max)):
            raise TypeError(
                "clamp(): min and max must both be tensors or both be numbers (either may be "
                f"None), got {type(min).__name__} and {type(max).__name__}; wrap the number "
                "with tw.tensor"
            )
        min, max = (v.item() if isinstance(v, Tensor) else v for v in (min, max))
    # PyTorch's classes: RuntimeError for a complex bound on real floats, else (complex or
    # integer inputs) NotImplementedError.
    error = RuntimeError if input.dtype.kind == "f" else NotImplementedError
    for bound in (min, max):
        _ordered("clamp", input, bound, error)
    if input.dtype is dtypes.bool_ and all(isinstance(v, (bool, type(None))) for v in (min, max)):
        raise NotImplementedError(
            "clamp: not implemented for bool tensors with bool bounds; convert with .int() first"
        )
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        if (
            input._inference
            or (min is not None and min._inference)
            or (max is not None and max._inference)
        ):
            if inference_alone(input, min, max):
                return _without_graph(clamp, input, min, max)
            if is_grad_enabled():
                refuse_saved_inference("clamp", (input, min, max), (input, min, max))
        # All three in their promoted dtype first, as PyTorch: a 0-d int64 bound beside an
        # int64 one is not wrapped into an int8 x's dtype on the way.
        dtype = result_type(input, *(v for v in (min, max) if v is not None))
        input, min, max = (None if v is None else cast(v, dtype) for v in (input, min, max))
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        if is_grad_enabled() and any(v is not None and v.requires_grad for v in (input, min, max)):
            return _clamp_gradients(input, min, max, out)
        return out
    dtype = result_type(input, *(v for v in (min, max) if v is not None))
    # Scalar bounds must fit the result dtype (PyTorch's overflow check; -1 wraps in uint8).
    min, max = (None if v is None else fill_value(v, dtype, "clamp") for v in (min, max))
    b = input.backend
    native = cast_native(input, dtype)
    if min is not None:
        native = b.maximum(native, scalar_native(b, min, dtype))
    if max is not None:
        native = b.minimum(native, scalar_native(b, max, dtype))
    if dtype is not input.dtype:
        input = input.to(dtype)
    return apply("clamp", native, dtype, (input,), (min, max))


def refuse_saved_inference(op: str, operands: tuple, saved: tuple) -> None:
    """PyTorch's error where the node of ``op`` on ``operands`` is recorded (one requires
    grad) and saves an inference tensor among ``saved`` (as given, before any cast: a cast
    copy is no inference tensor). None and numbers among either are skipped."""
    if any(isinstance(t, Tensor) and t.requires_grad for t in operands):
        for t in saved:
            if isinstance(t, Tensor) and t._inference:
                refuse_saved(op, t)


def _clamp_gradients(x: Tensor, low: Tensor | None, high: Tensor | None, out: Tensor) -> Tensor:
    """``out``, x clamped to tensor bounds, rebuilt so that its gradient goes where
    PyTorch's does: to x where low <= x <= high (a tie is x's: maximum would halve it), to
    low where x < low < high, to high where x > high or high < low, to none where a NaN or
    x < low == high decides."""
    take_x, take_low, take_high = None, None, None
    if low is not None:
        take_x = ge(x, low)
        take_low = lt(x, low) if high is None else logical_and(lt(x, low), lt(low, high))
    if high is not None:
        below = le(x, high)
        take_x = below if take_x is None else logical_and(take_x, below)
        take_high = gt(x, high) if low is None else logical_or(gt(x, high), lt(high, low))
    result = out.detach()
    for take, source in ((take_high, high), (take_low, low), (take_x, x)):
        if take is not None:  # (the three are disjoint)
            result = where(take, source, result)
    return labelled(result, "ClampBackward0", x, low, high)  # (None: a bound not given)


def _fits_mask(condition: Tensor, t: Operand, number: Operand) -> bool:
    return (
        isinstance(t, Tensor)
        and condition.dtype is dtypes.bool_
        and condition.shape == t.shape
        and condition.backend is t.backend
        and _scalar_keeps_dtype(t, number)
    )


def where_number(condition: Tensor, t: Tensor, number: Any, number_first: bool) -> Tensor:
    """``where(condition, t, number)`` (or with the number first) as one backend call."""
    filled = Tensor(scalar_native(t.backend, number, t.dtype), t.backend, t.dtype)
    x, y = (filled, t) if number_first else (t, filled)
    native = t.backend.where(condition.native, x.native, y.native)
    return apply("where", native, t.dtype, (condition, x, y))


def _where_number(number: Operand, other: Operand) -> Operand:
    """An int beside an integer tensor, checked as PyTorch does: it must fit that dtype
    (negative ints wrap into uint8); other numbers convert unchecked (1e10 is inf in
    float16)."""
    if type(number) is int and isinstance(other, Tensor) and other.dtype.kind in "iu":
        return fill_value(number, other.dtype, "where")
    if (
        type(number) is float
        and isinstance(other, Tensor)
        and other.dtype.kind == "f"
        and other.dtype not in _HALF
    ):
        fill_value(number, other.dtype, "where")  # 1e39 beside float32 raises, as PyTorch
    return number


def where(condition: Tensor, input: Operand, other: Operand) -> Tensor:
    """``input`` where ``condition`` holds, else ``other`` (all three broadcast together)."""
    _require_tensor("where", condition)
    if type(input) is not type(other):
        input, other = _where_number(input, other), _where_number(other, input)
    # Fast paths: a bool mask of the tensor's shape and a number that keeps its dtype:
    # where(mask, x, 0.0) (most gradient rules) and where(mask, 0.0, g) (masked_fill's).
    if _fits_mask(condition, input, other):
        return where_number(condition, input, other, number_first=False)
    if _fits_mask(condition, other, input):
        return where_number(condition, other, input, number_first=True)
    if condition.dtype is not dtypes.bool_:
        if condition.dtype is not dtypes.uint8:
            raise RuntimeError(
                f"where: expected condition to be a bool tensor, got {condition.dtype.name}; "
                "compare first, e.g. where(x != 0, a, b)"
            )
        warnings.warn(
            "where received a uint8 condition tensor; this is deprecated, use a bool condition",
            UserWarning,
            stacklevel=2,
        )
    backend = condition.backend
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        dtype = result_type(input, other)
        input, other = constant(input, backend, dtype), constant(other, backend, dtype)
    input, other, backend, dtype, an, bn = _operands("where", input, other, _same)
    check_backends("where", (condition, input))
    cond = cast_native(condition, dtypes.bool_)
    shapes = [t.shape for t in (condition, input, other)]
    if len({*shapes}) > 1:
        shape = broadcast_shapes("where", *shapes)
        cond = expand_array(backend, cond, condition._shape, shape)
        an = expand_array(backend, an, an.shape, shape)  # (broadcast by _operands already)
        bn = expand_array(backend, bn, bn.shape, shape)
    native = backend.where(cond, an, bn)
    return apply("where", native, dtype, (condition, input, other))


def with_zero_gradient(value: Tensor, source: Tensor) -> Tensor:
    """``value`` (computed without a graph, of ``source``'s shape and dtype) in ``source``'s
    graph with a zero gradient, as PyTorch's outputs of piecewise-constant ops."""
    if not (source.requires_grad and is_grad_enabled()):
        return value
    keep = Tensor(value.backend.full((), True, dtypes.bool_), value.backend, dtypes.bool_)
    return where(keep, value, source)


def cast(x: Tensor, dtype: DType) -> Tensor:
    """``x`` converted to ``dtype``; differentiable between float dtypes."""
    if x.dtype is dtype:
        return x
    if dtype not in x.backend.dtypes:
        raise TypeError(
            f"to({dtype.name}): the {x.backend.device.name} device has no {dtype.name}; "
            f"it supports {', '.join(sorted(d.name for d in x.backend.dtypes))}"
        )
    if x.dtype.kind == "c" and dtype is dtypes.bool_:
        return ne(x, 0)  # nonzero in either part, as PyTorch: nothing is discarded
    if x.dtype.kind == "c" and dtype.kind != "c":
        warnings.warn(
            "Casting complex values to real discards the imaginary part; take x.real (or "
            "x.abs()) to say which you mean",
            UserWarning,
            stacklevel=3,
        )
    native = _converted_native(x, dtype)
    if dtype.kind not in "fc":
        return Tensor(native, x.backend, dtype)
    return apply("cast", native, dtype, (x,))


def as_copy_of(out: Tensor, x: Tensor) -> Tensor:
    """``out``, a user's copy of ``x`` (``x.float()``, ``x.to(dtype)``, ``x.clone()``; no
    internal cast), recorded where ``x`` is an inference tensor that requires grad: the op of
    it alone recorded nothing, while PyTorch's copy into a new normal tensor records
    ``CopyBackwards`` (its rule reads no value: nothing inference is saved)."""
    if (
        out is x
        or out._node is not None
        or not (x._inference and x.requires_grad and is_grad_enabled())
        or out.dtype.kind not in "fc"
    ):
        return out
    out._node = Node("cast" if out.dtype is not x.dtype else "identity", (x,), None)
    out._requires_grad = True
    return labelled(out, "CopyBackwards", x)


# -- compositions (their gradients come from the ops they are made of) -----------------------


def reciprocal(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_out("reciprocal", reciprocal(input), out, inputs=(input,))
    if isinstance(input, Tensor) and input.dtype.kind == "f":
        return _with_result_node("reciprocal", input, div(1, input.detach()))
    # labelled: torch's node saves the result, so an in-place change of it is refused
    return labelled(div(1, input), "ReciprocalBackward0", input)


def _with_result_node(op: str, x: Tensor, out: Tensor) -> Tensor:
    """``out`` (computed from ``x`` without a graph) with a node of ``op`` saving it, whose
    rule takes PyTorch's steps on the result (a half gradient rounds as its)."""
    if x.requires_grad and is_grad_enabled() and not (x._inference and all_inference((x,))):
        out._node = Node(op, (x,), out.native)
        out._requires_grad = True
    return out


def rsqrt(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_out("rsqrt", rsqrt(input), out, inputs=(input,))
    if isinstance(input, Tensor) and input.dtype in _HALF:
        return _half_rsqrt(input)
    if isinstance(input, Tensor) and input.dtype.kind == "f":
        return _with_result_node("rsqrt", input, _rsqrt(input.detach()))
    return labelled(_rsqrt(input), "RsqrtBackward0", input)


def _rsqrt(x: Tensor) -> Tensor:
    return div(1, sqrt(x))


def _half_rsqrt(x: Tensor) -> Tensor:
    """rsqrt of a half-precision ``x`` as PyTorch's CPU kernel: 1 / sqrt(x) in float32,
    rounded once, except the elements its scalar loop takes (``contract.cpu_loops``), where
    sqrt(x) is rounded to x's dtype first (on other devices every element rounds once).
    Computed on the native arrays; its gradient is PyTorch's rule on the result."""
    backend, half, wide = x.backend, x.dtype, dtypes.float32
    # sqrt in float64, then float32: correctly rounded as torch's kernels' sqrt (torch's own
    # float32 sqrt is not on every CPU: sqrt(65504) is 255.9375, not 255.93748, on AVX-512
    # EPYC); for sqrt that double rounding is harmless (53 >= 2 * 24 + 2 bits)
    exact = dtypes.float64 if dtypes.float64 in backend.dtypes else wide  # (MPS has none)
    root = backend.cast(backend.sqrt(backend.cast(x.native, exact)), wide)
    scalar = None
    if backend.device.kind == "cpu":
        scalar = cached_scalar_loop_mask(x.shape, (x.stride(),), backend=backend)
    if scalar is not None:
        root = backend.where(scalar, backend.cast(backend.cast(root, half), wide), root)
    native = backend.cast(backend.div(backend.full((), 1, wide), root), half)
    return _with_result_node("rsqrt", x, Tensor(native, backend, half))


def square(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_out("square", square(input), out, inputs=(input,))
    if input.dtype is dtypes.bool_:  # PyTorch squares bools as int64
        input = cast(input, dtypes.int64)
    return named(mul(input, input), "PowBackward0")  # PyTorch's x ** 2


def tan(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_out("tan", tan(input), out, inputs=(input,))
    # labelled: torch's node saves the result, so an in-place change of it is refused
    return labelled(_tan(input), "TanBackward0", input)


def _tan(x: Tensor) -> Tensor:
    if isinstance(x, Tensor) and x.dtype in _HALF:  # one rounding, not three (bfloat16)
        return in_float32(_tan, x)
    if isinstance(x, Tensor) and x.dtype.kind == "c":
        return _complex_tan(x)
    return div(sin(x), cos(x))


def _complex_tan(z: Tensor) -> Tensor:
    """tan(z) = -i tanh(iz): sin(z) / cos(z) is inf / inf for a large imaginary part (tan(1e20j)
    is 1j)."""
    from tensorweaver.ops.complex import complex, imag, real

    w = tanh(complex(neg(imag(z)), real(z)))
    return complex(imag(w), neg(real(w)))


def _real_scaled(z: Tensor, factor: float) -> Tensor:
    """``z * factor`` for a real ``factor``: each part of a complex z alone, as C++'s complex
    by real division (a complex product would turn log(0)'s -inf + 0j into NaN parts)."""
    if z.dtype.kind != "c":
        return div(z, 1 / factor)
    from tensorweaver.ops.complex import complex, imag, real

    return complex(div(real(z), 1 / factor), div(imag(z), 1 / factor))


def log2(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_out("log2", log2(input), out, inputs=(input,))
    if isinstance(input, Tensor) and input.dtype in _HALF:
        # log2(0.5) is -1 exactly in bfloat16 too
        return labelled(in_float32(log2, input), "Log2Backward0", input)
    return labelled(_real_scaled(log(input), 1 / math.log(2.0)), "Log2Backward0", input)


def log10(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_out("log10", log10(input), out, inputs=(input,))
    if isinstance(input, Tensor) and input.dtype in _HALF:  # one rounding, as PyTorch's kernel
        return labelled(in_float32(log10, input), "Log10Backward0", input)
    return labelled(_real_scaled(log(input), 1 / math.log(10.0)), "Log10Backward0", input)


def isnan(input: Tensor) -> Tensor:
    return ne(input, input)


def isinf(input: Tensor) -> Tensor:
    if input.dtype.kind == "c":  # either part, as PyTorch (|x| can overflow where neither is)
        from tensorweaver.ops.complex import imag, real

        return logical_or(isinf(real(input)), isinf(imag(input)))
    if input.dtype.kind != "f":
        return ne(input, input)
    return eq(abs(input), math.inf)


def isfinite(input: Tensor) -> Tensor:
    if input.dtype.kind == "c":
        from tensorweaver.ops.complex import imag, real

        return logical_and(isfinite(real(input)), isfinite(imag(input)))
    if input.dtype.kind != "f":
        return eq(input, input)
    return lt(abs(input), math.inf)


def nan_to_num(
    input: Tensor,
    nan: float = 0.0,
    posinf: float | None = None,
    neginf: float | None = None,
    *,
    out: Tensor | None = None,
) -> Tensor:
    if out is not None:
        result = nan_to_num(input, nan, posinf, neginf)
        return written_out("nan_to_num", result, out, same_dtype=True, inputs=(input,))
    for name, value in (("nan", nan), ("posinf", posinf), ("neginf", neginf)):
        if value is not None and not isinstance(value, (int, float)):
            raise TypeError(
                f"nan_to_num(): argument '{name}' must be float, not {type(value).__name__}"
            )
    # Ints are read as floats (2**64 too, as PyTorch's double argument takes it).
    nan, posinf, neginf = (None if v is None else float(v) for v in (nan, posinf, neginf))
    if input.dtype.kind == "c":  # each part, as PyTorch
        from tensorweaver.ops.complex import complex, imag, real

        if input.requires_grad and is_grad_enabled() and not inference_alone(input):
            raise RuntimeError(
                "nan_to_num does not support automatic differentiation for outputs with "
                "complex dtype (as PyTorch); apply it to input.detach(), or to x.real and "
                "x.imag with tw.complex"
            )
        parts = (nan_to_num(part(input), nan, posinf, neginf) for part in (real, imag))
        return complex(*parts)
    if input.dtype.kind != "f":
        return input
    largest = float_max(input.dtype)
    # PyTorch casts these unchecked: 1e39 is inf in float32
    nan, posinf, neginf = (
        None if v is None else cast_float(v, input.dtype) for v in (nan, posinf, neginf)
    )
    # Every mask reads `input`: a replacement that overflows the dtype (nan=1e6 in float16
    # is inf) stays what it is, as PyTorch's.
    out = where(eq(input, -math.inf), -largest if neginf is None else neginf, input)
    out = where(eq(input, math.inf), largest if posinf is None else posinf, out)
    return labelled(where(isnan(input), nan, out), "NanToNumBackward0", input)


def inference_alone(input: Operand, *others: Operand) -> bool:
    """Whether ``input`` is an inference tensor used where a graph is recorded, and so is
    every tensor among ``others``: PyTorch's autograd skips an op of such alone, while a step
    of a composition of ops (``t * value``) would record a node."""
    return (
        isinstance(input, Tensor)
        and input._inference
        and is_grad_enabled()
        and all_inference(tuple(t for t in (input, *others) if isinstance(t, Tensor)))
    )


def _without_graph(op: Callable[..., Tensor], *operands: Operand, **kwargs: Any) -> Tensor:
    """``op(*operands, **kwargs)`` with no graph recorded."""
    recording = _switched(False)
    try:
        return op(*operands, **kwargs)
    finally:
        _restore(recording)


def lerp(input: Tensor, end: Tensor, weight: Operand, *, out: Tensor | None = None) -> Tensor:
    """``input + weight * (end - input)`` for floating-point ``input`` and ``end`` of one
    dtype, as PyTorch requires."""
    if out is not None:
        return written_out("lerp", lerp(input, end, weight), out, inputs=(input, end, weight))
    _require_tensor("lerp", input)
    if not isinstance(end, Tensor):
        raise TypeError(f"lerp(): argument 'end' must be a Tensor, not {type(end).__name__}")
    if inference_alone(input, end, weight):
        return _without_graph(lerp, input, end, weight)
    if (
        isinstance(weight, Tensor)
        and not weight.shape
        and weight.dtype is not input.dtype
        and end.dtype is input.dtype
    ):
        # A 0-d weight of another dtype takes part in promotion, as in PyTorch: int16 ends
        # with a 0-d float16 weight are a float16 lerp, float32 ends keep float32.
        dtype = result_type(input, end, weight)
        input, end, weight = (cast(t, dtype) for t in (input, end, weight))
    if input.dtype.kind not in "fc":
        raise NotImplementedError(
            f'"lerp" not implemented for {input.dtype.name} tensors; convert them with .float()'
        )
    if end.dtype is not input.dtype:
        raise RuntimeError(
            f"lerp: expected dtype {input.dtype.name} for `end` but got dtype {end.dtype.name}"
        )
    if isinstance(weight, complex) and input.dtype.kind != "c":
        raise RuntimeError(f"lerp: a complex weight cannot be converted to {input.dtype.name}")
    if isinstance(weight, Tensor) and weight.dtype is not input.dtype:
        raise RuntimeError(
            f"lerp: expected dtype {input.dtype.name} for `weight` but got dtype "
            f"{weight.dtype.name}"
        )
    if input.dtype in _HALF:  # in float32, rounded once, as PyTorch: no overflow in between
        wide = lerp(*(_as_dtype(v, dtypes.float32) for v in (input, end, weight)))
        if isinstance(weight, Tensor):
            return labelled(cast(wide, input.dtype), "LerpBackward1", input, end, weight)
        return labelled(cast(wide, input.dtype), "LerpBackward0", input, end)
    # PyTorch's form: from the nearer end, so that weight 1 gives ``end`` exactly
    diff = sub(end, input)
    if isinstance(weight, Tensor):
        near_start = lt(abs(weight), 0.5)
        out = where(near_start, add(input, mul(weight, diff)), sub(end, mul(diff, sub(1, weight))))
        return labelled(out, "LerpBackward1", input, end, weight)
    _opmath_number("lerp", weight, input.dtype)
    if builtins.abs(weight) < 0.5:
        return labelled(add(input, mul(weight, diff)), "LerpBackward0", input, end)
    return labelled(sub(end, mul(diff, 1 - weight)), "LerpBackward0", input, end)


def _product_value(fn: str, value: Any, dtype: DType) -> Any:
    """addcmul/addcdiv's ``value`` for a result of ``dtype``: converted to an integer dtype
    with PyTorch's checks (2.5 is 2, 300 does not fit int8), and never complex for a real
    result."""
    if isinstance(value, Tensor):
        value = value.item()
    if dtype.kind in "biu" or (isinstance(value, complex) and dtype.kind != "c"):
        return fill_value(value, dtype, fn)
    return _opmath_number(fn, value, dtype)


def _opmath_number(fn: str, number: Any, dtype: DType) -> Any:
    """A number an op computes with in ``dtype``'s compute type (float32 for the half types),
    checked as PyTorch does: 1e39 beside float32 raises, 1e6 beside float16 is fine (the
    result may still round to inf)."""
    if type(number) is float or type(number) is int:
        fill_value(number, dtypes.float32 if dtype in _HALF else dtype, fn)
    return number


def addcmul(
    input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1, out: Tensor | None = None
) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    if out is not None:
        result = addcmul(input, tensor1, tensor2, value=value)
        return written_out("addcmul", result, out, inputs=(input, tensor1, tensor2))
    if inference_alone(input, tensor1, tensor2):
        return _without_graph(addcmul, input, tensor1, tensor2, value=value)
    dtype = result_type(input, tensor1, tensor2)
    if dtype is dtypes.bool_:
        raise NotImplementedError(
            "addcmul: not implemented for bool tensors; convert them with .int() first"
        )
    value = _product_value("addcmul", value, dtype)
    # Every operand in the result dtype first, as PyTorch: int16 * 0-d int64 beside an int64
    # x is an int64 product, not a wrapped int16 one.
    given = input, tensor1, tensor2
    input, tensor1, tensor2 = (_as_dtype(v, dtype) for v in given)
    if dtype in _HALF:  # in float32, rounded once, as PyTorch: no overflow in between
        wide = addcmul(*(cast(v, dtypes.float32) for v in (input, tensor1, tensor2)), value=value)
        result = cast(wide, dtype)
    elif SAVED_TENSORS_HOOKS:  # (AddcmulBackward0 packs tensor1, then tensor2: mul's order not)
        with SelfFirst():
            product = mul(mul(tensor1, value), tensor2) if value != 1 else mul(tensor1, tensor2)
        result = add(input, product)
    else:  # PyTorch's order
        product = mul(mul(tensor1, value), tensor2) if value != 1 else mul(tensor1, tensor2)
        result = add(input, product)
    # labelled (of the operands as given): its hooks see each operand's gradient, as torch's
    return labelled(result, "AddcmulBackward0", *(v for v in given if isinstance(v, Tensor)))


def _as_dtype(v: Operand, dtype: DType) -> Operand:
    return cast(v, dtype) if isinstance(v, Tensor) else v


def addcdiv(
    input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1, out: Tensor | None = None
) -> Tensor:
    """``input + value * tensor1 / tensor2``; ``tensor1`` and ``tensor2`` may not both be
    integers, as in PyTorch."""
    if out is not None:
        result = addcdiv(input, tensor1, tensor2, value=value)
        return written_out("addcdiv", result, out, inputs=(input, tensor1, tensor2))
    if inference_alone(input, tensor1, tensor2):
        return _without_graph(addcdiv, input, tensor1, tensor2, value=value)
    if (
        isinstance(tensor1, Tensor)
        and isinstance(tensor2, Tensor)
        and (tensor1._inference or tensor2._inference)
        and is_grad_enabled()
    ):
        # (PyTorch's node saves tensor2, and tensor1 for tensor2's gradient, even where only
        # input needs one: the quotient's node here would read neither)
        saved = (tensor2, tensor1) if tensor2.requires_grad else (tensor2,)
        refuse_saved_inference("addcdiv", (input, tensor1, tensor2), saved)
    if not (_is_float(tensor1) or _is_float(tensor2)):
        raise RuntimeError(
            "addcdiv: integer division with addcdiv is no longer supported; convert tensor1 or "
            "tensor2 to a floating-point dtype (true division), or use tw.div(tensor1, "
            "tensor2, rounding_mode='trunc') for the old integer behaviour"
        )
    dtype = result_type(input, tensor1, tensor2)
    value = _product_value("addcdiv", value, dtype)
    # as addcmul's
    given = input, tensor1, tensor2
    input, tensor1, tensor2 = (_as_dtype(v, dtype) for v in given)
    if dtype in _HALF:  # in float32, rounded once, as PyTorch: no overflow in between
        wide = addcdiv(*(cast(v, dtypes.float32) for v in (input, tensor1, tensor2)), value=value)
        result = cast(wide, dtype)
    elif SAVED_TENSORS_HOOKS:  # (as addcmul's: AddcdivBackward0 packs tensor1 first)
        with SelfFirst():
            quotient = div(mul(tensor1, value), tensor2) if value != 1 else div(tensor1, tensor2)
        result = add(input, quotient)
    else:  # PyTorch's order
        quotient = div(mul(tensor1, value), tensor2) if value != 1 else div(tensor1, tensor2)
        result = add(input, quotient)
    # labelled (of the operands as given): its hooks see each operand's gradient, as torch's
    return labelled(result, "AddcdivBackward0", *(v for v in given if isinstance(v, Tensor)))
