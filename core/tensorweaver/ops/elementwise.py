"""Elementwise ops: unary, binary (with broadcasting and type promotion) and ``where``."""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import Node
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops.apply import (
    apply,
    broadcast_shapes,
    cast_native,
    check_backends,
    constant,
    expand_native,
    labelled,
)
from tensorweaver.ops.fusion import fused_kernel
from tensorweaver.promotion import get_default_dtype, result_type
from tensorweaver.tensor import Tensor

Operand = Any  # a Tensor or a Python scalar


def _operands(op: str, a: Operand, b: Operand, compute: Callable[[DType], DType]) -> tuple:
    """(a, b, backend, dtype, a_native, b_native): both operands as tensors of one backend,
    natives cast to the computation dtype and broadcast to one shape (or left 0-d)."""
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
    an, bn = cast_native(a, dtype), cast_native(b, dtype)
    if a.shape != b.shape and a.shape and b.shape:
        shape = broadcast_shapes(op, a.shape, b.shape)
        an = expand_native(Tensor(an, backend, dtype), shape)
        bn = expand_native(Tensor(bn, backend, dtype), shape)
    return a, b, backend, dtype, an, bn


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


def scalar_native(backend: Any, value: Any, dtype: DType) -> Any:
    """A 0-d native array holding ``value``, cached: scalar operands are mostly repeats."""
    value = _wrapped(value, dtype)
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
    kind = a.dtype.kind
    t = type(b)
    return (
        (kind == "f" and (t is float or t is int))
        or (kind == "i" and t is int)
        or (kind == "c" and (t is float or t is int or t is complex))
    )


def _arithmetic(name: str, *, floating: bool = False) -> Callable[[Operand, Operand], Tensor]:
    """A binary op in the promoted dtype (``floating``: ints compute in the default float)."""
    compute = _floating if floating else _same

    def keeps(t: Tensor, number: Any) -> bool:
        return _scalar_keeps_dtype(t, number) and (not floating or t.dtype.kind in "fc")

    def op(a: Operand, b: Operand) -> Tensor:
        if isinstance(a, Tensor):
            if (
                isinstance(b, Tensor)
                and a.dtype is b.dtype
                and a.shape == b.shape
                and a.backend is b.backend
                and (not floating or a.dtype.kind in "fc")
            ):
                # Fast path: one shape, one dtype, one device.
                out = Tensor(getattr(a.backend, name)(a.native, b.native), a.backend, a.dtype)
                if (a.requires_grad or b.requires_grad) and is_grad_enabled():
                    out._node = Node(name, (a, b), None)
                    out.requires_grad = True
                return out
            if keeps(a, b):
                # Fast path: a tensor and a Python number that does not change its dtype.
                backend = a.backend
                bn = scalar_native(backend, b, a.dtype)
                out = Tensor(getattr(backend, name)(a.native, bn), backend, a.dtype)
                if a.requires_grad and is_grad_enabled():
                    out._node = Node(name, (a, Tensor(bn, backend, a.dtype)), None)
                    out.requires_grad = True
                return out
        elif isinstance(b, Tensor) and keeps(b, a):
            # The same with the number on the left (1 - x).
            backend = b.backend
            an = scalar_native(backend, a, b.dtype)
            out = Tensor(getattr(backend, name)(an, b.native), backend, b.dtype)
            if b.requires_grad and is_grad_enabled():
                out._node = Node(name, (Tensor(an, backend, b.dtype), b), None)
                out.requires_grad = True
            return out
        a, b, backend, dtype, an, bn = _operands(name, a, b, compute)
        return apply(name, getattr(backend, name)(an, bn), dtype, (a, b))

    op.__name__ = name
    return op


add_ = _arithmetic("add")
sub_ = _arithmetic("sub")
mul = _arithmetic("mul")
_maximum = _arithmetic("maximum")
_minimum = _arithmetic("minimum")


def maximum(a: Operand, b: Operand) -> Tensor:
    """The larger of ``a`` and ``b``, elementwise (complex numbers are not ordered)."""
    _ordered("maximum", a, b)
    return _maximum(a, b)


def minimum(a: Operand, b: Operand) -> Tensor:
    """The smaller of ``a`` and ``b``, elementwise (complex numbers are not ordered)."""
    _ordered("minimum", a, b)
    return _minimum(a, b)


_remainder = _arithmetic("remainder")


def add(a: Operand, b: Operand, *, alpha: Any = None) -> Tensor:
    return add_(a, b if alpha is None else mul(b, alpha))


def sub(a: Operand, b: Operand, *, alpha: Any = None) -> Tensor:
    return sub_(a, b if alpha is None else mul(b, alpha))


_true_divide = _arithmetic("div", floating=True)


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
    if _is_float(a) or _is_float(b):
        return
    if _is_bool(a) and _is_bool(b):
        raise NotImplementedError(
            f'"{op}" not implemented for bool tensors; convert them with .int() first'
        )
    if isinstance(a, Tensor) and not a.numel():
        return  # nothing is divided
    if _has_zero(b) if isinstance(b, Tensor) else b == 0:
        raise RuntimeError(
            f"{op}(): ZeroDivisionError: an integer divisor is zero; divide floats to get inf "
            "or NaN instead"
        )


def div(a: Operand, b: Operand, *, rounding_mode: str | None = None) -> Tensor:
    """True division (ints give the default float), or ``"floor"``/``"trunc"`` rounding."""
    if rounding_mode is None:
        return _true_divide(a, b)
    if rounding_mode not in ("floor", "trunc"):
        raise ValueError(
            f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}"
        )
    check_divisor("div", a, b)
    if rounding_mode == "floor":
        return _floor_divide(a, b)
    return cast(trunc(_true_divide(a, b)), result_type(a, b))


def floor_divide(a: Operand, b: Operand) -> Tensor:
    """floor(a / b), as Python's ``//``."""
    check_divisor("floor_divide", a, b)
    return _floor_divide(a, b)


def _floor_divide(a: Operand, b: Operand) -> Tensor:
    _ordered("floor_divide", a, b)
    a, b, backend, dtype, an, bn = _operands("floor_divide", a, b, _same)
    return apply("floor_divide", backend.floordiv(an, bn), dtype, (a, b))


def remainder(a: Operand, b: Operand) -> Tensor:
    """a - floor(a / b) * b, with the sign of ``b``, as Python's ``%``."""
    check_divisor("remainder", a, b)
    _ordered("remainder", a, b)
    return _remainder(a, b)


def pow(a: Operand, b: Operand) -> Tensor:
    """``a ** b``; an integer base with a negative integer exponent is an error, as in PyTorch."""
    a, b, backend, dtype, an, bn = _operands("pow", a, b, _same)
    if dtype.kind == "i" and (backend.to_host(bn) < 0).any():
        raise RuntimeError(
            "pow: integers to negative integer powers are not allowed; "
            "use a float base, e.g. x.float() ** -1"
        )
    if dtype is dtypes.bool_:  # as integers: True ** x is True, x ** False is True
        u8 = dtypes.uint8
        native = backend.pow(backend.cast(an, u8), backend.cast(bn, u8))
        return Tensor(backend.cast(native, dtype), backend, dtype)
    return apply("pow", backend.pow(an, bn), dtype, (a, b))


def refuse_complex(op: str, fix: str, *operands: Operand) -> None:
    """PyTorch's NotImplementedError where an operand is complex (a tensor or a number) and
    ``op`` has no complex form: ``fix`` says what to compute instead."""
    for x in operands:
        if isinstance(x, complex) or (isinstance(x, Tensor) and x.dtype.kind == "c"):
            raise NotImplementedError(f"{op}: {fix}")


def _ordered(name: str, a: Operand, b: Operand) -> None:
    """PyTorch's error for ordering complex numbers (``<``, ``max``, ``clamp``...)."""
    refuse_complex(
        name, "complex numbers are not ordered; compare their .abs() or .real instead", a, b
    )


def _comparison(name: str) -> Callable[[Operand, Operand], Tensor]:
    ordered = name not in ("eq", "ne")

    def op(a: Operand, b: Operand) -> Tensor:
        if (
            isinstance(b, Tensor)
            and isinstance(a, Tensor)
            and a.dtype is b.dtype
            and a.shape == b.shape
            and a.backend is b.backend
            and not (ordered and a.dtype.kind == "c")
        ):
            return Tensor(getattr(a.backend, name)(a.native, b.native), a.backend, dtypes.bool_)
        if ordered:
            _ordered(name, a, b)
        if isinstance(a, Tensor) and _scalar_keeps_dtype(a, b):
            bn = scalar_native(a.backend, b, a.dtype)
            return Tensor(getattr(a.backend, name)(a.native, bn), a.backend, dtypes.bool_)
        if not isinstance(b, (Tensor, int, float, complex)):
            return NotImplemented
        a, b, backend, _, an, bn = _operands(name, a, b, _same)
        return Tensor(getattr(backend, name)(an, bn), backend, dtypes.bool_)

    op.__name__ = name
    return op


eq = _comparison("eq")
ne = _comparison("ne")
lt = _comparison("lt")
le = _comparison("le")
gt = _comparison("gt")
ge = _comparison("ge")


def _to_bool(dtype: DType) -> DType:
    return dtypes.bool_


def _logical(name: str) -> Callable[[Operand, Operand], Tensor]:
    def op(a: Operand, b: Operand) -> Tensor:
        a, b, backend, _, an, bn = _operands(name, a, b, _to_bool)
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

    def op(a: Operand, b: Operand) -> Tensor:
        a, b, backend, dtype, an, bn = _operands(name, a, b, check)
        return Tensor(getattr(backend, name)(an, bn), backend, dtype)

    op.__name__ = name
    return op


bitwise_and = _bitwise("bitwise_and")
bitwise_or = _bitwise("bitwise_or")
bitwise_xor = _bitwise("bitwise_xor")


def _require_tensor(op: str, x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(x).__name__}")
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

    def op(x: Tensor) -> Tensor:
        _require_tensor(name, x)
        if not complex_ok:
            _no_complex(name, x)
        if floating and x.dtype.kind not in "fc":
            x = x.to(get_default_dtype())
        native = getattr(x.backend, name)(x.native)
        out = Tensor(native, x.backend, x.dtype)
        if x.requires_grad and is_grad_enabled():
            out._node = Node(name, (x,), native if save_output else None)
            out.requires_grad = True
        return out

    op.__name__ = name
    return op


neg = _unary("neg", floating=False)
_abs_real = _unary("abs", floating=False)


def abs(x: Tensor) -> Tensor:
    """|x|; the float modulus of a complex tensor."""
    if _require_tensor("abs", x).dtype.kind == "c":
        return apply("abs", x.backend.abs(x.native), x.dtype.to_real(), (x,))
    return _abs_real(x)


exp = _unary("exp", floating=True, save_output=True)
log = _unary("log", floating=True)
sin = _unary("sin", floating=True)
cos = _unary("cos", floating=True)
tanh = _unary("tanh", floating=True, save_output=True)
sqrt = _unary("sqrt", floating=True, save_output=True)
erf = _unary("erf", floating=True, complex_ok=False)


def _piecewise_constant(name: str) -> Callable[[Tensor], Tensor]:
    """Rounding and sign: integer tensors pass through; the gradient is zero."""

    def op(x: Tensor) -> Tensor:
        _require_tensor(name, x)
        _no_complex(name if name != "sign" else "sign (use tw.sgn for complex numbers)", x)
        if x.dtype.kind != "f" and name != "sign":
            return Tensor(x.native, x.backend, x.dtype)
        return apply(name, getattr(x.backend, name)(x.native), x.dtype, (x,))

    op.__name__ = name
    return op


_sign = _piecewise_constant("sign")


def sign(x: Tensor) -> Tensor:
    """-1, 0 or 1; NaN gives 0, as in PyTorch."""
    out = _sign(x)
    return where(isnan(x), 0, out) if x.dtype.kind == "f" else out


floor = _piecewise_constant("floor")
ceil = _piecewise_constant("ceil")
trunc = _piecewise_constant("trunc")
_round_even = _piecewise_constant("round")


def round(x: Tensor, *, decimals: int = 0) -> Tensor:
    """Round half to even, optionally to ``decimals`` places."""
    if decimals == 0:
        return _round_even(x)
    scale = 10.0**decimals
    return div(_round_even(mul(x, scale)), scale)


def logical_not(x: Tensor) -> Tensor:
    x = _require_tensor("logical_not", x)
    return Tensor(x.backend.logical_not(cast_native(x, dtypes.bool_)), x.backend, dtypes.bool_)


def bitwise_not(x: Tensor) -> Tensor:
    x = _require_tensor("bitwise_not", x)
    if x.dtype.kind in "fc":  # PyTorch's class for ~ here, unlike the binary ops'
        raise TypeError(
            f"~ (bitwise_not) is only implemented on integer and bool tensors, got {x.dtype.name}"
        )
    return Tensor(x.backend.bitwise_not(x.native), x.backend, x.dtype)


def _float_input(op: str, x: Tensor) -> Tensor:
    _require_tensor(op, x)
    _no_complex(op, x)
    return x if x.dtype.kind == "f" else x.to(get_default_dtype())


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + e^-x): the backend's optional ``sigmoid`` kernel, else e^-|x| composed so
    neither tail loses its relative accuracy (sigmoid(-100) is 3.7e-44, not 0) and nothing
    overflows."""
    if isinstance(x, Tensor) and x.dtype.kind == "c":  # composed, as PyTorch's complex kernel
        return reciprocal(add(exp(neg(x)), 1))
    x = _float_input("sigmoid", x)
    b = x.backend
    kernel = getattr(b, "sigmoid", None)
    if kernel is not None:
        native = kernel(x.native)
    else:
        e = b.exp(b.neg(b.abs(x.native)))
        positive = b.div(b.full((), 1, x.dtype), b.add(b.full((), 1, x.dtype), e))
        zero = b.full((), 0, x.dtype)
        native = b.where(b.ge(x.native, zero), positive, b.mul(e, positive))
    return apply("sigmoid", native, x.dtype, (x,), native)


def relu(x: Tensor) -> Tensor:
    """max(x, 0), through the backend's fused kernel where it has one. The node keeps the
    output, not x: the gradient passes where the output is positive."""
    _require_tensor("relu", x)
    _no_complex("relu", x)
    backend = x.backend
    fused = fused_kernel(backend, "relu") if x.dtype.kind == "f" else None
    if fused is None:
        native, saved = backend.maximum(x.native, scalar_native(backend, 0, x.dtype)), None
    else:
        native, saved = fused(x.native)
    return apply("relu", native, x.dtype, (x,), (native, saved))


def log1p(x: Tensor) -> Tensor:
    """log(1 + x), accurate for tiny x: log(u) * x / (u - 1) with u = 1 + x (Goldberg);
    complex x composed plainly."""
    if isinstance(x, Tensor) and x.dtype.kind == "c":
        return log(add(x, 1))
    x = _float_input("log1p", x)
    b = x.backend
    one = b.full((), 1, x.dtype)
    u = b.add(x.native, one)
    um1 = b.sub(u, one)
    exact = b.eq(um1, b.full((), 0, x.dtype))
    safe = b.where(exact, one, um1)
    native = b.where(exact, x.native, b.div(b.mul(b.log(u), x.native), safe))
    # Where u is inf the ratio is inf * x / inf: take log(u) itself.
    native = b.where(b.eq(u, b.full((), math.inf, x.dtype)), u, native)
    return apply("log1p", native, x.dtype, (x,))


def expm1(x: Tensor) -> Tensor:
    """e^x - 1, accurate for tiny x: (u - 1) * x / log(u) with u = e^x; complex x composed
    plainly."""
    if isinstance(x, Tensor) and x.dtype.kind == "c":
        return sub(exp(x), 1)
    x = _float_input("expm1", x)
    b = x.backend
    one = b.full((), 1, x.dtype)
    u = b.exp(x.native)
    um1 = b.sub(u, one)
    logu = b.log(u)
    plain = b.logical_or(
        b.eq(um1, b.full((), 0, x.dtype)), b.eq(b.abs(logu), b.full((), math.inf, x.dtype))
    )
    ratio = b.div(b.mul(um1, x.native), b.where(plain, one, logu))
    native = b.where(b.eq(um1, b.full((), 0, x.dtype)), x.native, b.where(plain, um1, ratio))
    # For large |x| where u - 1 == -1 the formula's 0/0 corner is avoided by `plain`.
    native = b.where(b.eq(um1, b.full((), -1, x.dtype)), um1, native)
    return apply("expm1", native, x.dtype, (x,), native)


def clamp(x: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Limit ``x`` to [min, max]; the gradient passes where min <= x <= max, as in PyTorch."""
    _require_tensor("clamp", x)
    if min is None and max is None:
        raise ValueError("clamp: at least one of 'min' and 'max' must be given")
    for bound in (min, max):
        _ordered("clamp", x, bound)
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    dtype = result_type(x, *(v for v in (min, max) if v is not None))
    b = x.backend
    native = cast_native(x, dtype)
    if min is not None:
        native = b.maximum(native, scalar_native(b, min, dtype))
    if max is not None:
        native = b.minimum(native, scalar_native(b, max, dtype))
    if dtype is not x.dtype:
        x = x.to(dtype)
    return apply("clamp", native, dtype, (x,), (min, max))


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


def where(condition: Tensor, a: Operand, b: Operand) -> Tensor:
    """``a`` where ``condition`` holds, else ``b`` (all three broadcast together)."""
    _require_tensor("where", condition)
    # Fast paths: a bool mask of the tensor's shape and a number that keeps its dtype:
    # where(mask, x, 0.0) (most gradient rules) and where(mask, 0.0, g) (masked_fill's).
    if _fits_mask(condition, a, b):
        return where_number(condition, a, b, number_first=False)
    if _fits_mask(condition, b, a):
        return where_number(condition, b, a, number_first=True)
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
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        dtype = result_type(a, b)
        a, b = constant(a, backend, dtype), constant(b, backend, dtype)
    a, b, backend, dtype, an, bn = _operands("where", a, b, _same)
    check_backends("where", (condition, a))
    cond = cast_native(condition, dtypes.bool_)
    shapes = [t.shape for t in (condition, a, b)]
    if len({*shapes}) > 1:
        shape = broadcast_shapes("where", *shapes)
        cond = expand_native(Tensor(cond, backend, dtypes.bool_), shape)
        an = expand_native(Tensor(an, backend, dtype), shape)
        bn = expand_native(Tensor(bn, backend, dtype), shape)
    native = backend.where(cond, an, bn)
    return apply("where", native, dtype, (condition, a, b))


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
    native = x.backend.cast(x.native, dtype)
    if dtype.kind not in "fc":
        return Tensor(native, x.backend, dtype)
    return apply("cast", native, dtype, (x,))


# -- compositions (their gradients come from the ops they are made of) -----------------------


def reciprocal(x: Tensor) -> Tensor:
    return div(1, x)


def rsqrt(x: Tensor) -> Tensor:
    return div(1, sqrt(x))


def square(x: Tensor) -> Tensor:
    if x.dtype is dtypes.bool_:  # PyTorch squares bools as int64
        x = cast(x, dtypes.int64)
    return mul(x, x)


def tan(x: Tensor) -> Tensor:
    return div(sin(x), cos(x))


def log2(x: Tensor) -> Tensor:
    return div(log(x), math.log(2.0))


def log10(x: Tensor) -> Tensor:
    return div(log(x), math.log(10.0))


def isnan(x: Tensor) -> Tensor:
    return ne(x, x)


def isinf(x: Tensor) -> Tensor:
    if x.dtype.kind == "c":  # either part, as PyTorch (|x| can overflow where neither is)
        from tensorweaver.ops.complex import imag, real

        return logical_or(isinf(real(x)), isinf(imag(x)))
    if x.dtype.kind != "f":
        return ne(x, x)
    return eq(abs(x), math.inf)


def isfinite(x: Tensor) -> Tensor:
    if x.dtype.kind == "c":
        from tensorweaver.ops.complex import imag, real

        return logical_and(isfinite(real(x)), isfinite(imag(x)))
    if x.dtype.kind != "f":
        return eq(x, x)
    return lt(abs(x), math.inf)


def nan_to_num(
    x: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None
) -> Tensor:
    if x.dtype.kind == "c":  # each part, as PyTorch
        from tensorweaver.ops.complex import complex, imag, real

        parts = (nan_to_num(part(x), nan, posinf, neginf) for part in (real, imag))
        return complex(*parts)
    if x.dtype.kind != "f":
        return x
    info = _float_limits(x.dtype)
    out = where(isnan(x), nan, x)
    out = where(eq(out, math.inf), info if posinf is None else posinf, out)
    return where(eq(out, -math.inf), -info if neginf is None else neginf, out)


def _float_limits(dtype: DType) -> float:
    return {
        "float16": 65504.0,
        "bfloat16": 3.3895313892515355e38,
        "float32": 3.4028234663852886e38,
    }.get(dtype.name, 1.7976931348623157e308)


def lerp(start: Tensor, end: Operand, weight: Operand) -> Tensor:
    name = "LerpBackward1" if isinstance(weight, Tensor) else "LerpBackward0"
    return labelled(add(start, mul(weight, sub(end, start))), name, start)


def addcmul(x: Tensor, t1: Tensor, t2: Tensor, *, value: Any = 1) -> Tensor:
    return add(x, mul(mul(t1, t2), value) if value != 1 else mul(t1, t2))


def addcdiv(x: Tensor, t1: Tensor, t2: Tensor, *, value: Any = 1) -> Tensor:
    return add(x, mul(div(t1, t2), value) if value != 1 else div(t1, t2))
