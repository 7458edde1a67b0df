"""Elementwise special functions: the trigonometric and hyperbolic family, gamma and error
functions, Bessel functions and the small compositions PyTorch names (xlogy, sinc, ...).

Functions no composition computes well are optional primitives of the IR (API 2.3): the
backend's kernel where it has one, else NumPy on the host (:mod:`tensorweaver.ops.
host_fallback`, kernels in :mod:`tensorweaver.ops.special_host`); their gradient rules are in
:mod:`tensorweaver.autograd.special_rules`. The rest are compositions of tensor ops, so their
gradients follow; each says why a composition is accurate enough. Integer and bool inputs
compute in the default float dtype, as in PyTorch.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

from tensorweaver.autograd.function import Function
from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import frees_nothing
from tensorweaver.contract import dtypes
from tensorweaver.ops import complex as cx
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import special_host as host
from tensorweaver.ops.apply import apply, constant, labelled, out_needs_no_grad, written_out
from tensorweaver.ops.host_fallback import run_optional
from tensorweaver.ops.out_arguments import _refuse_overlapping_operands
from tensorweaver.promotion import get_default_dtype, result_type
from tensorweaver.tensor import Tensor

Operand = Any  # a Tensor or a Python scalar


def _need_tensor(op: str, name: str, position: int, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(
            f"{op}(): argument '{name}' (position {position}) must be Tensor, "
            f"not {type(value).__name__}"
        )
    return value


def need_int(op: str, name: str, position: int, value: Any) -> int:
    """``value`` as an int (a 0-d integer tensor too); a float or bool is a TypeError, as
    PyTorch's argument parser raises."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(
        f"{op}(): argument '{name}' (position {position}) must be int, not {type(value).__name__}"
    )


def _float_input(op: str, x: Any) -> Tensor:
    x = _need_tensor(op, "input", 1, x)
    _real_only(op, x)
    return x if x.dtype.kind == "f" else ew.cast(x, get_default_dtype())


def _real_only(op: str, *operands: Any) -> None:
    """Refuse complex operands where tensorweaver has no complex formula (never cast them)."""
    ew.refuse_complex(
        op,
        "not implemented for complex numbers in tensorweaver; compute it from x.real and "
        "x.imag, or from tw.exp and tw.log",
        *operands,
    )


def _unary(name: str, host_fn: Callable[[Any], Any], *, save_output: bool = False) -> Any:
    """An optional unary primitive on float input (ints and bools in the default float)."""

    def op(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        if out is not None:
            return written_out(name, op(input), out, inputs=(input,))
        if isinstance(input, Tensor) and input.dtype.is_complex:
            complex_form = _COMPLEX_FORMS.get(name)
            if complex_form is not None:
                return complex_form(input)
            if name in _COMPLEX_KERNELS:
                native = run_optional(input.backend, name, host_fn, input.dtype, input.native)
                return apply(name, native, input.dtype, (input,))
        x = _float_input(name, input)
        _refuse_half(name, x.dtype)
        native = run_optional(x.backend, name, host_fn, x.dtype, x.native)
        return apply(name, native, x.dtype, (x,), native if save_output else None)

    op.__name__ = op.__qualname__ = name
    return op


#: PyTorch's kernels of these take float32 and float64 only (CPU and CUDA).
_NO_HALF = frozenset({"erfcx", "log_ndtr", "ndtri", "zeta"})
_HALF_NAMES = {dtypes.float16: "Half", dtypes.bfloat16: "BFloat16"}


def _refuse_half(name: str, dtype: Any) -> None:
    if name in _NO_HALF and dtype in _HALF_NAMES:
        raise NotImplementedError(
            f"\"{name}\" not implemented for '{_HALF_NAMES[dtype]}' (as in PyTorch); compute "
            "it in float32 with .float() and convert back"
        )


def _hyperbolic(z: Tensor, even: bool) -> Tensor:
    """sinh (or cosh, ``even``) of complex z, PyTorch's node (its gradient g times the
    conjugate of cosh z, or sinh z) where a gradient is recorded: a Function adds tens of
    microseconds, so not otherwise. PyTorch's autograd skips an inference tensor alone."""
    if z.requires_grad and is_grad_enabled() and not ew.inference_alone(z):
        name = "CoshBackward0" if even else "SinhBackward0"
        return labelled(_ComplexHyperbolic.apply(z, even), name, z)
    return _hyperbolic_values(z, even)


class _ComplexHyperbolic(Function):
    """Complex sinh (cosh when ``even``) with PyTorch's gradient g * conj(cosh z) (g *
    conj(sinh z)), in tensor ops, so it differentiates again; the composition's own would
    be NaN where an edge value is chosen by a mask."""

    @staticmethod
    def forward(ctx: Any, z: Tensor, even: bool) -> Tensor:
        ctx.save_for_backward(z)
        ctx.even = even
        return _hyperbolic_values(z, even)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        (z,) = ctx.saved_tensors
        return ew.mul(g, cx.conj(_hyperbolic(z, not ctx.even))), None


def _hyperbolic_values(z: Tensor, even: bool) -> Tensor:
    """sinh (or cosh, ``even``) of complex z = x + iy from its parts, with C99's values (as
    torch's csinh/ccosh): sinh x cos y + i cosh x sin y (cosh x cos y + i sinh x sin y).
    (e^z - e^-z) / 2 cancels near 0: sinh(1e-3) lost four digits in complex64. The products
    give inf * 0 or 0 * NaN at the edges C99 defines otherwise (:func:`_at_the_edges`)."""
    x, y = cx.real(z), cx.imag(z)
    grows, odd = cosh(x), sinh(x)
    first, second = (grows, odd) if even else (odd, grows)
    cos_y, sin_y = ew.cos(y), ew.sin(y)
    real, imag = ew.mul(first, cos_y), ew.mul(second, sin_y)
    out = cx.complex(real, imag)
    # Every edge makes a part of these products inf or NaN (cos y is never 0), so where all
    # are finite the products are the values: one read spares the edges' 30-odd ops.
    if bool(ew.isfinite(out).all()):
        return out
    return cx.complex(*_at_the_edges(x, y, grows, cos_y, sin_y, real, imag, even))


def _at_the_edges(
    x: Tensor,
    y: Tensor,
    grows: Tensor,
    cos_y: Tensor,
    sin_y: Tensor,
    real: Tensor,
    imag: Tensor,
    even: bool,
) -> tuple[Tensor, Tensor]:
    """The parts of sinh (cosh, ``even``) of x + iy, given the products ``real`` and
    ``imag`` of :func:`_hyperbolic_values` and cosh x (``grows``), with C99's values where
    those products overflow or give inf * 0 or 0 * NaN."""
    negative = ew.lt(x, 0)
    # cosh x overflows for a finite x where its product with cos y or sin y need not (or is
    # 0, y = 0): e^|x| / 2 as (e^(|x|/4))^4 / 2, each factor finite (|x| clamped where the
    # product is inf anyway), multiplied into the factor in turn
    quarter = ew.exp(ew.mul(ew.clamp(ew.abs(x), max=_QUARTER_EXP_LIMIT[x.dtype]), 0.25))

    def half_exp_times(factor: Tensor) -> Tensor:
        out = ew.mul(factor, 0.5)
        for _ in range(4):
            out = ew.mul(out, quarter)
        return out

    scaled_real, scaled_imag = half_exp_times(cos_y), half_exp_times(sin_y)
    if even:  # (sinh x's sign, on the part it multiplies)
        scaled_imag = ew.where(negative, ew.neg(scaled_imag), scaled_imag)
    else:
        scaled_real = ew.where(negative, ew.neg(scaled_real), scaled_real)
    overflow = ew.logical_and(ew.isinf(grows), ew.isfinite(x))
    real = ew.where(overflow, scaled_real, real)
    imag = ew.where(overflow, scaled_imag, imag)
    # x infinite or NaN, y = 0: i y (i y times the sign of x for cosh), not inf * 0
    unbounded_x = ew.logical_not(ew.isfinite(x))
    on_axis = ew.logical_and(ew.eq(y, 0), unbounded_x)
    imag = ew.where(on_axis, ew.where(negative, ew.neg(y), y) if even else y, imag)
    # y infinite or NaN: x infinite gives inf + i NaN, x = 0 gives +-0 + i NaN (NaN + i 0
    # for cosh), not NaN from inf * NaN or 0 * NaN
    unbounded_y = ew.logical_not(ew.isfinite(y))
    real = ew.where(ew.logical_and(ew.isinf(x), unbounded_y), ew.abs(x), real)
    at_zero = ew.logical_and(ew.eq(x, 0), unbounded_y)
    if even:
        imag = ew.where(at_zero, ew.abs(x), imag)
    else:
        real = ew.where(at_zero, x, real)
    return real, imag


#: |x| past which e^(|x|/4) overflows the part dtype (less a margin): there e^|x| / 2 times
#: any non-zero sin y or cos y overflows.
_QUARTER_EXP_LIMIT = {dtypes.float32: 4 * 88.0, dtypes.float64: 4 * 709.0}


#: Complex inputs of the optional primitives, composed from their parts (no branch cut).
_COMPLEX_FORMS: dict[str, Callable[[Tensor], Tensor]] = {
    "sinh": lambda z: _hyperbolic(z, even=False),
    "cosh": lambda z: _hyperbolic(z, even=True),
}
#: The inverse functions on complex input: the backend's kernel (C99's principal values and
#: branch cuts, as torch's CPU kernels, NumPy and cuPyNumeric give them) rather than a
#: composition of log and sqrt, which lands on the wrong side of a cut for some inputs.
_COMPLEX_KERNELS = frozenset({"acos", "asin", "atan", "asinh", "acosh", "atanh"})

acos = _unary("acos", host.acos)
asin = _unary("asin", host.asin)
atan = _unary("atan", host.atan)
sinh = _unary("sinh", host.sinh)
cosh = _unary("cosh", host.cosh)
asinh = _unary("asinh", host.asinh)
acosh = _unary("acosh", host.acosh)
atanh = _unary("atanh", host.atanh)
lgamma = _unary("lgamma", host.lgamma)
digamma = _unary("digamma", host.digamma)
erfinv = _unary("erfinv", host.erfinv, save_output=True)
erfc = _unary("erfc", host.erfc)
erfcx = _unary("erfcx", host.erfcx, save_output=True)
i0 = _unary("i0", host.i0)
i0e = _unary("i0e", host.i0e, save_output=True)
i1 = _unary("i1", host.i1, save_output=True)
i1e = _unary("i1e", host.i1e, save_output=True)
ndtri = _unary("ndtri", host.ndtri, save_output=True)
log_ndtr = _unary("log_ndtr", host.log_ndtr, save_output=True)


def _float_pair(op: str, a: Operand, b: Operand) -> tuple:
    """(a, b, backend, dtype, a_native, b_native) in the promoted float dtype, broadcast."""
    return ew._operands(op, a, b, ew._floating)


def atan2(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The angle of the point (other, input), in [-pi, pi]."""
    if out is not None:
        return written_out("atan2", atan2(input, other), out, inputs=(input, other))
    _need_tensor("atan2", "input", 1, input)
    _need_tensor("atan2", "other", 2, other)
    _real_only("atan2", input, other)
    a, b, backend, dtype, an, bn = _float_pair("atan2", input, other)
    native = run_optional(backend, "atan2", host.atan2, dtype, an, bn)
    return apply("atan2", native, dtype, (a, b))


def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The n-th derivative of digamma (n = 0 is digamma itself)."""
    if out is not None:
        return written_out("polygamma", polygamma(n, input), out, inputs=(input,))
    n = need_int("polygamma", "n", 1, n)
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n (got {n})")
    x = _float_input("polygamma", input)
    if n == 1 and getattr(x.backend, "polygamma", None) is None:
        native = _trigamma(x.detach()).native
    else:
        native = run_optional(x.backend, "polygamma", host.polygamma, x.dtype, n, x.native)
    return apply("polygamma", native, x.dtype, (x,), n)


def _trigamma(x: Tensor) -> Tensor:
    """polygamma(1, x) as PyTorch's CPU kernel computes it (for a backend without a polygamma
    kernel): below 1/2 the reflection pi^2 / sin^2(pi x) - trigamma(1 - x), six steps of
    trigamma(x) = 1 / x^2 + trigamma(x + 1), then the asymptotic series. Its rounding is
    PyTorch's, so a pole x = -k is huge but finite (pi x rounded is not a multiple of pi),
    where the Hurwitz zeta of the host's polygamma is inf. Half inputs compute in float32."""
    dtype = x.dtype
    if dtype in (dtypes.float16, dtypes.bfloat16):
        return ew.cast(_trigamma(ew.cast(x, dtypes.float32)), dtype)
    reflected = ew.lt(x, 0.5)
    turn = ew.mul(x, math.pi)
    if dtype is dtypes.float32 and dtypes.float64 in x.backend.dtypes:
        # sin of the float32 argument correctly rounded, as C's sinf (NumPy's float32 sin is
        # not: the reflection term of a negative x amplifies an ulp of it)
        sine = ew.cast(ew.sin(ew.cast(turn, dtypes.float64)), dtype)
    else:
        sine = ew.sin(turn)
    pi = constant(math.pi, x.backend, dtype)
    result = ew.where(reflected, ew.neg(ew.div(ew.square(pi), ew.square(sine))), 0.0)
    x = ew.where(reflected, ew.sub(1.0, x), x)
    for _ in range(6):
        result = ew.add(result, ew.reciprocal(ew.square(x)))
        x = ew.add(x, 1.0)
    ixx = ew.reciprocal(ew.square(x))
    series = ew.mul(ixx, ew.sub(1 / 6, ew.mul(ixx, ew.sub(1 / 30, ew.mul(ixx, 1 / 42)))))
    tail = ew.div(ew.add(ew.add(ew.reciprocal(ew.mul(x, 2.0)), 1.0), series), x)
    result = ew.add(result, tail)
    return ew.where(reflected, ew.neg(result), result)


def zeta(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
    """The Hurwitz zeta function sum((other + k) ** -input for k >= 0)."""
    if out is not None:
        return written_out("zeta", zeta(input, other), out, inputs=(input, other))
    a, b, backend, dtype, an, bn = _float_pair("zeta", input, other)
    _refuse_half("zeta", dtype)
    return apply("zeta", run_optional(backend, "zeta", host.zeta, dtype, an, bn), dtype, (a, b))


# -- compositions -----------------------------------------------------------------------------


_LN2 = math.log(2.0)


def exp2(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """2 ** input, through pow for real input: exact for integer exponents (exp(x ln 2)
    would not be); complex input as PyTorch's exp(z ln 2)."""
    if out is not None:
        return written_out("exp2", exp2(input), out, inputs=(input,))
    if ew.inference_alone(input):  # (PyTorch's autograd skips its kernel; 2 ** x would record)
        with no_grad():
            return exp2(input)
    if isinstance(input, Tensor) and input.dtype.is_complex:
        if input.requires_grad and is_grad_enabled():
            return labelled(_ComplexExp2.apply(input), "Exp2Backward0", input)
        return _complex_exp2(input)
    x = _float_input("exp2", input)
    if x.requires_grad and is_grad_enabled():
        # pow's values, as one node saving its result, as PyTorch's Exp2Backward0 (pow's
        # PowBackward2 would save x): autograd/special_rules.py "exp2" reads it
        with no_grad():
            native = ew.pow(2.0, x).native
        return apply("exp2", native, x.dtype, (x,), native)
    return ew.pow(2.0, x)


def _complex_exp2(z: Tensor) -> Tensor:
    """PyTorch's exp(ln 2 * z), ln 2 a real factor of each part: a complex one would multiply
    an infinite part by its 0 imaginary part."""
    return ew.exp(cx.complex(ew.mul(cx.real(z), _LN2), ew.mul(cx.imag(z), _LN2)))


class _ComplexExp2(Function):
    """Complex exp2 with PyTorch's gradient (g * conj(2^z)) * ln 2 from the saved result, ln 2
    a complex factor as in its formula (so an infinite part gives NaN where torch's does);
    tensor ops, so it differentiates again."""

    @staticmethod
    def forward(ctx: Any, z: Tensor) -> Tensor:
        out = _complex_exp2(z)
        ctx.save_for_backward(out)  # (PyTorch's node saves the result, not z)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (out,) = ctx.saved_tensors
        return exp2_gradient(g, out)


def exp2_gradient(g: Tensor, result: Tensor) -> Tensor:
    """PyTorch's exp2 backward, ``(g * conj(result)) * ln 2`` from the saved ``result``."""
    scaled = ew.mul(g, cx.conj(result))
    return labelled(ew.mul(scaled, _LN2), "MulBackward1", scaled)  # (times a Scalar)


def deg2rad(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input * pi / 180 (PyTorch multiplies by the same rounded constant)."""
    if out is not None:
        return written_out("deg2rad", deg2rad(input), out, inputs=(input,))
    _refuse_out_kernel("deg2rad", input)
    x = _float_input("deg2rad", input)  # (PyTorch's node saves no tensor: backward reruns)
    return frees_nothing(ew.mul(x, math.pi / 180), x)


def rad2deg(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input * 180 / pi."""
    if out is not None:
        return written_out("rad2deg", rad2deg(input), out, inputs=(input,))
    _refuse_out_kernel("rad2deg", input)
    x = _float_input("rad2deg", input)  # (PyTorch's node saves no tensor: backward reruns)
    return frees_nothing(ew.mul(x, 180 / math.pi), x)


def _refuse_out_kernel(op: str, input: Tensor) -> None:
    """PyTorch's error for ``op`` of an inference tensor that requires grad, outside
    inference_mode: its autograd skips the op, whose kernel is an out= one, which refuses."""
    if isinstance(input, Tensor) and input._inference and input.requires_grad and is_grad_enabled():
        raise out_needs_no_grad(op)


def signbit(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """True where the sign bit is set: negative numbers and -0.0 (1 / -0.0 is -inf). The IR
    has no bit cast, so a NaN's sign bit is not seen: NaN gives False."""
    if out is not None:
        return written_out("signbit", signbit(input), out, same_dtype=True, inputs=(input,))
    x = _need_tensor("signbit", "input", 1, input).detach()  # (a bool result: no graph)
    _real_only("signbit", x)
    if x.dtype.kind != "f":
        return ew.lt(x, 0) if x.dtype.kind == "i" else ew.ne(x, x)
    return ew.logical_or(ew.lt(x, 0), ew.logical_and(ew.eq(x, 0), ew.lt(ew.div(1, x), 0)))


def _float_operands(op: str, input: Operand, other: Operand) -> tuple[Tensor, Tensor]:
    """Both operands as tensors of their promoted dtype, ints and bools as the default float."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError(
            f"{op}(): expected a Tensor as input or other, got {type(input).__name__} and "
            f"{type(other).__name__}"
        )
    dtype = ew._floating(result_type(input, other))
    backend = (input if isinstance(input, Tensor) else other).backend

    def tensor(v: Operand) -> Tensor:
        if isinstance(v, Tensor):
            return ew.cast(v, dtype)
        return Tensor(ew.scalar_native(backend, v, dtype), backend, dtype)

    return tensor(input), tensor(other)


def copysign(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
    """|input| with the sign of other (as signbit sees it); float result."""
    if out is not None:
        return written_out("copysign", copysign(input, other), out, inputs=(input, other))
    _need_tensor("copysign", "input", 1, input)
    _real_only("copysign", input, other)
    if isinstance(other, Tensor) and ew.inference_alone(input, other):
        # (PyTorch's autograd skips its kernel; a number is wrapped into a normal tensor)
        with no_grad():
            return copysign(input, other)
    if input._inference and input.requires_grad and is_grad_enabled():
        # (PyTorch's node saves self where self needs a gradient)
        ew.refuse_saved_inference("copysign", (input,), (input,))
    a, b = _float_operands("copysign", input, other)
    magnitude = ew.abs(a)
    out = ew.where(signbit(b), ew.neg(magnitude), magnitude)
    if isinstance(other, Tensor) and b.requires_grad:
        # PyTorch's other gets zeros that need no grad: b through a node of the zero rule a
        # draw's parameters get (its values, never selected, are b's own); of an inference
        # b, which records no node alone, b itself (zeros then that need grad where the
        # output's gradient does)
        zeros_to_b = apply("draw", b.native, b.dtype, (b,))
        out = ew.with_zero_gradient(out, zeros_to_b if zeros_to_b.requires_grad else b)
    # (PyTorch's node, which saves its output, is numbered by the kind of ``other``)
    return labelled(
        out, "CopysignBackward0" if isinstance(other, Tensor) else "CopysignBackward1", a, b
    )


def _float_power_dtype(input: Operand, exponent: Operand) -> Any:
    """complex128 where an operand is complex, else float64."""
    complex_ = any(
        isinstance(v, complex) or (isinstance(v, Tensor) and v.dtype.kind == "c")
        for v in (input, exponent)
    )
    return dtypes.complex128 if complex_ else dtypes.float64


def float_power(input: Operand, exponent: Operand, *, out: Tensor | None = None) -> Tensor:
    """input ** exponent in float64 (complex128 for complex operands), each operand converted
    to it first, as PyTorch: an int16 base is not rounded to a float16 exponent's dtype."""
    if out is not None:
        result = float_power(input, exponent)
        return written_out("float_power", result, out, same_dtype=True, inputs=(input, exponent))
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError(
            "float_power(): expected a Tensor as input or exponent, got "
            f"{type(input).__name__} and {type(exponent).__name__}"
        )
    dtype = _float_power_dtype(input, exponent)
    backend = (input if isinstance(input, Tensor) else exponent).backend

    def tensor(v: Operand) -> Tensor:
        if isinstance(v, Tensor):
            return ew.cast(v, dtype)
        return Tensor(ew.scalar_native(backend, v, dtype), backend, dtype)

    # A number stays one (x ** 0.5 is sqrt, 1 ** x is 1, as PyTorch's pow with a Scalar)
    if not isinstance(exponent, Tensor):
        return ew.pow(tensor(input), exponent)
    if not isinstance(input, Tensor):
        return ew.pow(input, tensor(exponent))
    return ew.pow(tensor(input), tensor(exponent))


def ldexp(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input * 2 ** other, float. A float input with an integer exponent scales exactly, as
    C's ldexp with the exponent cast to a C int (PyTorch's kernel: 2**40 wraps to 0, 0 *
    2**5000 is 0, and 2**-30 * 2**100 is not inf in float16); else input * 2.0 ** other with
    both in their promoted float dtype (a complex128 0-d input keeps complex128)."""
    if out is not None:
        return written_out("ldexp", ldexp(input, other), out, inputs=(input, other))
    _need_tensor("ldexp", "input", 1, input)
    _need_tensor("ldexp", "other", 2, other)
    if input.dtype.kind != "f" or other.dtype.kind == "f" or other.dtype.kind == "c":
        a, b = _float_operands("ldexp", input, other)
        return labelled(ew.mul(a, ew.pow(2.0, b)), "LdexpBackward0", a, b)
    if other.dtype is dtypes.bool_:
        raise NotImplementedError(
            '"ldexp" not implemented for bool exponents of float tensors; convert them with '
            ".int() first"
        )
    dtype = result_type(input, other)
    # Beyond +-3000 every float64 over- or underflows alike: three powers of 2 of one sign,
    # each finite in float64, scale it without an intermediate inf.
    e = ew.clamp(ew.cast(other, dtypes.int32), -3000, 3000).to(dtypes.float64)
    first = ew.floor(ew.div(e, 3))
    second = ew.floor(ew.div(ew.sub(e, first), 2))
    third = ew.sub(ew.sub(e, first), second)
    out = ew.cast(input, dtypes.float64)
    for part in (first, second, third):
        out = ew.mul(out, ew.pow(2.0, part))
    return labelled(ew.cast(out, dtype), "LdexpBackward0", input)  # (PyTorch's saves it)


def xlogy(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
    """input * log(other), 0 where input is 0 (unless other is NaN). There log sees 1 where
    log(other) is not finite, so no 0 * inf reaches the forward; the gradients are
    PyTorch's (:class:`_XLogY`)."""
    if out is not None:
        return written_out("xlogy", xlogy(input, other), out, inputs=(input, other))
    if _skipped_or_refused("xlogy", input, other):
        with no_grad():
            return xlogy(input, other)
    a, b = _float_operands("xlogy", input, other)
    return labelled(_xlogy(a, b, False), _xlogy_name("XlogyBackward", input, other), a, b)


def xlog1py(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
    """input * log1p(other), 0 where input is 0 (unless other is NaN), as xlogy."""
    if out is not None:
        return written_out("xlog1py", xlog1py(input, other), out, inputs=(input, other))
    if _skipped_or_refused("xlog1py", input, other):
        with no_grad():
            return xlog1py(input, other)
    a, b = _float_operands("xlog1py", input, other)
    name = _xlogy_name("SpecialXlog1PyBackward", input, other)
    return labelled(_xlogy(a, b, True), name, a, b)


def _skipped_or_refused(op: str, input: Operand, other: Operand) -> bool:
    """Whether ``op(input, other)`` is of inference tensors alone, which PyTorch's autograd
    skips; else PyTorch's error where it is recorded and an operand is an inference tensor
    (its node saves both, a number wrapped as a tensor included)."""
    if isinstance(other, Tensor) and ew.inference_alone(input, other):
        return True
    if is_grad_enabled():
        ew.refuse_saved_inference(op, (input, other), (input, other))
    return False


def _xlogy_name(stem: str, input: Operand, other: Operand) -> str:
    """PyTorch's node name: overload 0 for two tensors, 1 for a number input, 2 for a
    number other."""
    if not isinstance(input, Tensor):
        return stem + "1"
    return stem + ("0" if isinstance(other, Tensor) else "2")


def _xlogy(a: Tensor, b: Tensor, shifted: bool) -> Tensor:
    """xlogy(a, b), or xlog1py(a, b) when ``shifted``; through :class:`_XLogY` only when a
    gradient is recorded (a Function adds tens of microseconds to each call)."""
    if is_grad_enabled() and (a.requires_grad or b.requires_grad):
        return _XLogY.apply(a, b, shifted)
    return _xlogy_values(a, b, shifted)


def _xlogy_values(a: Tensor, b: Tensor, shifted: bool) -> Tensor:
    """xlogy(a, b), or xlog1py(a, b) when ``shifted``."""
    pole = -1 if shifted else 0
    outside = ew.logical_not(ew.logical_and(ew.gt(b, pole), ew.lt(b, math.inf)))
    safe = ew.where(_zero_times(a, b, outside), 1.0 + pole, b)
    product = ew.mul(a, ew.log1p(safe) if shifted else ew.log(safe))
    return _positive_zero(a, b, product)


class _XLogY(Function):
    """xlogy (xlog1py when ``shifted``) with PyTorch's gradients: of input, xlogy(g, other)
    (xlog1py), 0 where input is 0 and other is at or below the log's pole; of other,
    g * input / other (other + 1), so NaN at input 0 on the pole, as PyTorch's. Tensor ops,
    so it differentiates again."""

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, shifted: bool) -> Tensor:
        ctx.save_for_backward(a, b)
        ctx.shifted = shifted
        return _xlogy_values(a, b, shifted)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        a, b = ctx.saved_tensors
        of_a = of_b = None
        if ctx.needs_input_grad[0]:
            pole = -1 if ctx.shifted else 0
            of_a = (xlog1py if ctx.shifted else xlogy)(g, b)
            of_a = _summed_to(ew.where(ew.logical_and(ew.eq(a, 0), ew.le(b, pole)), 0.0, of_a), a)
        if ctx.needs_input_grad[1]:
            of_b = _summed_to(ew.div(ew.mul(g, a), ew.add(b, 1) if ctx.shifted else b), b)
        return of_a, of_b, None


def _summed_to(grad: Tensor, like: Tensor) -> Tensor:
    """A broadcast operand's gradient summed back to its shape."""
    return grad if grad.shape == like.shape else grad.sum_to_size(like.shape)


def _positive_zero(a: Tensor, b: Tensor, product: Tensor) -> Tensor:
    """``product`` (a times a log of b), +0.0 where a is zero and b is not NaN, as PyTorch:
    xlogy(0, 0.5) is 0.0, not 0 * log(0.5) = -0.0. Adding 0.0 changes nothing else and
    passes the gradient unchanged (PyTorch's is log(b) there too)."""
    zero = ew.logical_and(ew.eq(a, 0), ew.eq(b, b))
    return ew.where(zero, ew.add(product, 0.0), product)


def _zero_times(a: Tensor, b: Tensor, outside: Tensor) -> Tensor:
    """Where a is 0, b is not NaN and the log of b is not finite."""
    return ew.logical_and(ew.logical_and(ew.eq(a, 0), ew.eq(b, b)), outside)


def logit(input: Tensor, eps: float | None = None, *, out: Tensor | None = None) -> Tensor:
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given (no gradient
    outside), as PyTorch computes it."""
    if out is not None:
        return written_out("logit", logit(input, eps), out, inputs=(input,))
    if ew.inference_alone(input):  # (PyTorch's autograd skips its kernel)
        with no_grad():
            return logit(input, eps)
    p = _float_input("logit", input)
    if eps is not None:
        p = ew.clamp(p, eps, 1 - eps)
    elif p.requires_grad and is_grad_enabled():
        return labelled(_Logit.apply(p), "LogitBackward0", p)
    return _logit_values(p)


def _logit_values(p: Tensor) -> Tensor:
    return ew.log(ew.div(p, ew.sub(1, p)))


class _Logit(Function):
    """logit without eps, with PyTorch's gradient g / (p * (1 - p)), NaN where p is outside
    [0, 1] (the composite's derivative is finite there); tensor ops, so it differentiates
    again."""

    @staticmethod
    def forward(ctx: Any, p: Tensor) -> Tensor:
        ctx.save_for_backward(p)
        return _logit_values(p)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (p,) = ctx.saved_tensors
        outside = ew.logical_or(ew.lt(p, 0), ew.gt(p, 1))
        return ew.where(outside, math.nan, ew.div(g, ew.mul(p, ew.sub(1, p))))


def sinc(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """sin(pi x) / (pi x), 1 at 0. The division sees 1 where x is 0, so the gradient there is
    0 (not NaN), as in PyTorch; at 0 the value is the series' 1 - (pi x)**2 / 6, so higher
    derivatives are right there too (the second is -pi**2 / 3, where PyTorch's is NaN).
    Complex tensors take the same formula."""
    if out is not None:
        return written_out("sinc", sinc(input), out, inputs=(input,))
    x = _need_tensor("sinc", "input", 1, input)
    if ew.inference_alone(x):  # (PyTorch's autograd skips its kernel)
        with no_grad():
            return sinc(x)
    if x.dtype.kind not in "fc":
        x = ew.cast(x, get_default_dtype())
    if x.dtype in ew._HALF:
        return ew.in_float32(sinc, x)
    zero = ew.eq(x, 0)
    px = ew.mul(ew.where(zero, 1.0, x), math.pi)
    series = ew.sub(1.0, ew.mul(ew.mul(x, x), math.pi**2 / 6))
    return ew.named(ew.where(zero, series, ew.div(ew.sin(px), px)), "SincBackward0")


def ndtr(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The standard normal CDF, erfc(-x / sqrt(2)) / 2: erfc keeps the lower tail's precision."""
    if out is not None:
        return written_out("ndtr", ndtr(input), out)
    x = _float_input("ndtr", input)
    return ew.mul(erfc(ew.mul(x, -1 / math.sqrt(2.0))), 0.5)


class _Entr(Function):
    """entr with PyTorch's derivative -(1 + log x) everywhere (inf at 0, NaN below): the
    composition's where() would give 0 outside x > 0."""

    @staticmethod
    def forward(ctx: Any, x: Tensor) -> Tensor:
        ctx.save_for_backward(x)
        positive = ew.gt(x, 0)
        safe = ew.where(positive, x, 1.0)
        inside = ew.neg(ew.mul(safe, ew.log(safe)))
        # the two constants would make a tensor of the default dtype: cast it back (float16)
        outside = ew.cast(ew.where(ew.eq(x, 0), 0.0, -math.inf), x.dtype)
        return ew.where(ew.isnan(x), x, ew.where(positive, inside, outside))

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:
        (x,) = ctx.saved_tensors
        return ew.mul(grad, ew.neg(ew.add(ew.log(x), 1)))


def entr(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """-x log(x) for x > 0, 0 at 0, -inf below (NaN stays NaN)."""
    if out is not None:
        return written_out("entr", entr(input), out, inputs=(input,))
    if ew.inference_alone(input):  # (PyTorch's autograd skips its kernel)
        with no_grad():
            return entr(input)
    x = _float_input("entr", input)
    return labelled(_Entr.apply(x), "SpecialEntrBackward0", x)


def multigammaln(input: Tensor, p: int, *, out: Tensor | None = None) -> Tensor:
    """The log of the multivariate gamma function of dimension p."""
    if out is not None:
        return written_out("multigammaln", multigammaln(input, p), out)
    x = _float_input("multigammaln", input)
    p = need_int("multigammaln", "p", 2, p)
    if p < 1:
        raise RuntimeError(f"multigammaln: p has to be greater than or equal to 1, got {p}")
    # PyTorch 2.13 computes at x <= (p-1)/2 too (lgamma's poles give inf): no domain check
    out = lgamma(x)
    for j in range(1, p):
        out = ew.add(out, lgamma(ew.sub(x, j / 2)))
    out = ew.add(out, p * (p - 1) / 4 * math.log(math.pi))
    return out


_TORCH_NAMES = {dtypes.float64: "Double", dtypes.complex128: "ComplexDouble"}


def _float_power_(self: Tensor, exponent: Operand) -> Tensor:
    """``x.float_power_(e)``: only a tensor of float_power's result dtype (float64, or
    complex128 for complex operands) can hold it."""
    dtype = _float_power_dtype(self, exponent)
    if self.dtype is not dtype:
        raise RuntimeError(
            f"float_power_(): the base has dtype {self.dtype.name}, but the operation's result "
            f"requires dtype {dtype.name} ({_TORCH_NAMES[dtype]}); convert with "
            f"x = x.to(tw.{dtype.name}) first"
        )
    _refuse_overlapping_operands(self, "float_power_", (exponent,), {})
    if isinstance(exponent, Tensor) and ew.inference_alone(self, exponent):
        # PyTorch's autograd skips it (no leaf check, no node): the kernel writes, then the
        # write is refused where self may not change (_assign)
        with no_grad():
            result = float_power(self._inplace_source(), exponent)
        return self._assign(result, "float_power_")
    # (the exponent given: its gradient reads the old base, a copy where it requires grad)
    return self._assign(float_power(self._inplace_source(exponent), exponent), "float_power_")


# NumPy's spellings, which PyTorch has too.
arccos, arcsin, arctan, arctan2 = acos, asin, atan, atan2
arcsinh, arccosh, arctanh = asinh, acosh, atanh

#: Functions that are Tensor methods under the same name (PyTorch's aliases included).
ALIASES = {
    "arccos": acos,
    "arcsin": asin,
    "arctan": atan,
    "arcsinh": asinh,
    "arccosh": acosh,
    "arctanh": atanh,
    "arctan2": atan2,
}
METHODS: dict[str, Any] = {
    **{
        f.__name__: f
        for f in (acos, asin, atan, sinh, cosh, asinh, acosh, atanh, atan2, lgamma, digamma)
    },
    **{f.__name__: f for f in (erfinv, erfc, i0, exp2, deg2rad, rad2deg, signbit, copysign)},
    **{f.__name__: f for f in (float_power, ldexp, xlogy, logit, sinc)},
    **ALIASES,
    "polygamma": lambda self, n: polygamma(n, self),
    "float_power_": lambda self, exponent: _float_power_(self, exponent),
}
#: Methods with an in-place form ``x.name_(...)``.
INPLACE = (
    "acos asin atan sinh cosh asinh acosh atanh atan2 arccos arcsin arctan arcsinh arccosh "
    "arctanh arctan2 lgamma digamma polygamma erfinv erfc i0 exp2 deg2rad rad2deg copysign "
    "ldexp xlogy logit sinc gcd lcm bitwise_left_shift bitwise_right_shift"
).split()
#: The in-place forms PyTorch also has as functions (``torch.acos_(x)`` is ``x.acos_()``).
FUNCTIONS_INPLACE = (
    "acos_ asin_ atan_ sinh_ cosh_ asinh_ acosh_ atanh_ arccos_ arcsin_ arctan_ arcsinh_ "
    "arccosh_ arctanh_ erfc_ i0_ exp2_ deg2rad_ rad2deg_ ldexp_ xlogy_ logit_ sinc_ gcd_ lcm_"
).split()
