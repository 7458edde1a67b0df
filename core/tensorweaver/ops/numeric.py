"""Numerics beyond the basic table, PyTorch's semantics: closeness tests, one-sided clamps,
log-sum-exp pairs, hypot, fmod, frac, NaN-ignoring and paired reductions, running
products/extrema/log-sum-exp, and scatter/index reductions.

All are compositions of existing tensor ops, so they run on every backend and autograd follows
them. The running ops are log-depth (Hillis-Steele) scans: step k combines every element with
the partial result 2**k places before it, so products stay exact (no exp of a log). Scatter
reductions use the backend's optional ``scatter_reduce`` kernel where no gradient has to flow
through it; otherwise they sort the sources by target and run the same scan within each
target's run. The custom gradients are amax/amin's, shared evenly among tied extrema as in
PyTorch, and the one node that ends scatter_reduce and index_reduce, which counts PyTorch's
formulas again from an index written through ``.data`` before backward (:class:`Recount`).
"""

from __future__ import annotations

import math
import sys
from typing import Any, Callable

import numpy as np

from tensorweaver import return_types
from tensorweaver.autograd.function import Function
from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import frees_nothing, saves_integer_output
from tensorweaver.contract import dtypes
from tensorweaver.dtype_info import finfo
from tensorweaver.ops import complex as cx
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as red
from tensorweaver.ops import sort as srt
from tensorweaver.ops import two_output_reductions
from tensorweaver.ops.apply import all_inference, apply, labelled, written_out
from tensorweaver.ops.bounds import check_index
from tensorweaver.ops.reduce import Dim
from tensorweaver.promotion import get_default_dtype, result_type
from tensorweaver.tensor import Tensor, _axis, index_argument

#: What ``aminmax`` returns (PyTorch's field names).

State = tuple  # the tensors a scan carries along, all of one shape


def _need_tensor(op: str, name: str, position: int, value: Any) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(
            f"{op}(): argument '{name}' (position {position}) must be Tensor, "
            f"not {type(value).__name__}"
        )
    return value


def _floating_pair(op: str, a: Any, b: Any, kinds: str = "f") -> tuple[Tensor, Tensor]:
    """Both operands as tensors of their promoted floating (or, with ``kinds="fc"``,
    complex) dtype (PyTorch has no integer kernel for these ops)."""
    a, b = _need_tensor(op, "input", 1, a), _need_tensor(op, "other", 2, b)
    dtype = result_type(a, b)
    if dtype.kind not in kinds:
        raise NotImplementedError(
            f'"{op}" not implemented for {dtype.name} tensors; convert them with .float()'
        )
    return ew.cast(a, dtype), ew.cast(b, dtype)


def _floating_input(op: str, x: Any, kinds: str = "f") -> Tensor:
    x = _need_tensor(op, "input", 1, x)
    if x.dtype.kind not in kinds:
        raise NotImplementedError(
            f'"{op}" not implemented for {x.dtype.name} tensors; convert with x.float()'
        )
    return x


# -- elementwise ------------------------------------------------------------------------------


def isclose(
    input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> Tensor:
    """|input - other| <= atol + rtol * |other| elementwise (infinities close when equal)."""
    _need_tensor("isclose", "input", 1, input)
    _need_tensor("isclose", "other", 2, other)
    if input.dtype is not other.dtype:
        raise RuntimeError(
            f"isclose(): {input.dtype.name} did not match {other.dtype.name}; convert one "
            "tensor to the other's dtype"
        )
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value < 0:
            raise RuntimeError(f"{name} must be greater than or equal to zero, but got {value}")
    close = ew.eq(input, other)
    if equal_nan and input.dtype.kind in "fc":  # (a complex number is NaN if either part is)
        close = ew.logical_or(close, ew.logical_and(ew.isnan(input), ew.isnan(other)))
    a, b = input, other
    if a.dtype is dtypes.bool_:  # bools have no subtraction: compare them as numbers
        a, b = ew.cast(a, get_default_dtype()), ew.cast(b, get_default_dtype())
    actual = ew.abs(ew.sub(a, b))
    allowed = ew.add(ew.abs(ew.mul(b, rtol)), atol)
    return ew.logical_or(close, ew.logical_and(ew.isfinite(actual), ew.le(actual, allowed)))


def allclose(
    input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False
) -> bool:
    """Whether every element of ``input`` is close to ``other`` (see ``isclose``)."""
    with no_grad():  # (a yes or no: PyTorch records nothing, so refuses no invalid history)
        close = isclose(input, other, rtol, atol, equal_nan)
    return bool(red.all(close).item())


def clamp_min(input: Tensor, min: Any, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_out(
            "clamp_min", clamp_min(input, min), out, same_dtype=True, inputs=(input, min)
        )
    label = "ClampMinBackward1" if isinstance(min, Tensor) else "ClampMinBackward0"
    return ew.named(ew.clamp(input, min=min), label)


def clamp_max(input: Tensor, max: Any, *, out: Tensor | None = None) -> Tensor:
    if out is not None:
        return written_out(
            "clamp_max", clamp_max(input, max), out, same_dtype=True, inputs=(input, max)
        )
    label = "ClampMaxBackward1" if isinstance(max, Tensor) else "ClampMaxBackward0"
    return ew.named(ew.clamp(input, max=max), label)


def _log_add(op: str, input: Tensor, other: Tensor, ln_base: float) -> Tensor:
    """log_b(b**input + b**other), one node named as PyTorch's with its gradient formula
    grad / (1 + b**(other - input)) (NaN at equal infinities, as PyTorch's)."""
    a, b = _floating_pair(op, input, other, "fc" if ln_base == 1.0 else "f")
    name = "LogaddexpBackward0" if ln_base == 1.0 else "Logaddexp2Backward0"
    if is_grad_enabled():  # (PyTorch's node saves both, as given)
        ew.refuse_saved_inference(op, (input, other), (input, other))
    if a.dtype.kind == "c":
        return labelled(_complex_log_add(a, b), name, a, b)
    if (a.requires_grad or b.requires_grad) and is_grad_enabled():
        return labelled(_LogAdd.apply(a, b, ln_base), name, a, b)
    return _log_add_values(a, b, ln_base)


class _LogAdd(Function):
    """Real logaddexp/logaddexp2 with PyTorch's gradient formula."""

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor, ln_base: float) -> Tensor:
        ctx.save_for_backward(a, b)
        ctx.ln_base = ln_base
        return _log_add_values(a, b, ln_base)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        a, b = ctx.saved_tensors

        def share(p: Tensor, q: Tensor) -> Tensor:  # 1 + b**(q - p)
            gap = ew.sub(q, p)
            grown = ew.exp(gap) if ctx.ln_base == 1.0 else ew.pow(2.0, gap)
            return ew.add(grown, 1)

        return ew.div(grad, share(a, b)), ew.div(grad, share(b, a)), None


def _log_add_values(a: Tensor, b: Tensor, ln_base: float) -> Tensor:
    """log_b(b**a + b**b) as max + log_b(1 + b**-|a - b|): nothing overflows."""
    if a.dtype in ew._HALF:  # in float32, rounded once, as PyTorch's CPU kernel
        wide = _log_add_values(ew.cast(a, dtypes.float32), ew.cast(b, dtypes.float32), ln_base)
        return ew.cast(wide, a.dtype)
    # Equal infinities would give inf - inf; their difference is taken as 0 instead.
    same_inf = ew.logical_and(ew.isinf(a), ew.eq(a, b))
    gap = ew.abs(ew.where(same_inf, 0.0, ew.sub(a, b)))
    if ln_base == 1.0:
        return ew.add(ew.maximum(a, b), ew.log1p(ew.exp(ew.neg(gap))))
    # PyTorch's rounding: log1p(2 ** -gap) times 1 / ln 2
    tail = ew.log1p(ew.pow(2.0, ew.neg(gap)))
    return ew.add(ew.maximum(a, b), ew.mul(tail, 1 / ln_base))


def _complex_log_add(a: Tensor, b: Tensor) -> Tensor:
    """PyTorch's complex log(exp(a) + exp(b)), with its gradient formula (NaN at some
    infinities, where the composition below would give other limits)."""
    return _ComplexLogAdd.apply(a, b)


class _ComplexLogAdd(Function):
    """Complex logaddexp whose gradients are PyTorch's grad / conj(1 + exp(other - self))."""

    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor) -> Tensor:
        ctx.save_for_backward(a, b)
        return _complex_log_add_values(a, b)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        a, b = ctx.saved_tensors
        share = [
            cx.conj_physical(ew.add(ew.exp(_complex_sub(q, p)), 1)) for p, q in ((a, b), (b, a))
        ]
        return ew.div(grad, share[0]), ew.div(grad, share[1])


def _complex_sub(a: Tensor, b: Tensor) -> Tensor:
    """``a - b`` as PyTorch's complex kernel computes it, ``a - (1 + 0j) * b``: an infinite
    part of ``b`` gives NaN parts (inf - (-inf + 0j) is inf + nanj there), where NumPy's
    part-by-part difference gives none. Built from real parts, the same on every backend."""
    re, im = cx.real(b), cx.imag(b)
    once_re, once_im = ew.sub(re, ew.mul(im, 0.0)), ew.add(im, ew.mul(re, 0.0))  # 0 * inf: NaN
    return cx.complex(ew.sub(cx.real(a), once_re), ew.sub(cx.imag(a), once_im))


def _complex_log_add_values(a: Tensor, b: Tensor) -> Tensor:
    """PyTorch's complex log(exp(a) + exp(b)): max + log1p(exp(min - max)), where max is the
    operand with the larger real part (``a`` on a tie); NaN (both parts) if either holds
    one; ``min`` when both real parts are -inf, the plain formula when both are +inf."""
    b_larger = ew.lt(cx.real(a), cx.real(b))
    high, low = ew.where(b_larger, b, a), ew.where(b_larger, a, b)
    # high first: torch's complex add is a + 1 * b, and 1 * (inf + 0j) is inf + nanj there.
    # low - high part by part, as PyTorch's kernel (C++'s complex difference) on every backend
    gap = cx.complex(ew.sub(cx.real(low), cx.real(high)), ew.sub(cx.imag(low), cx.imag(high)))
    out = ew.add(high, ew.log1p(ew.exp(gap)))
    low_real = cx.real(low)
    equal_inf = ew.logical_and(ew.isinf(low_real), ew.eq(low_real, cx.real(high)))
    # Summed part by part, for the same reason.
    e_low, e_high = ew.exp(low), ew.exp(high)
    parts = [ew.add(part(e_low), part(e_high)) for part in (cx.real, cx.imag)]
    plain = ew.log(cx.complex(*parts))
    out = ew.where(equal_inf, ew.where(ew.lt(low_real, 0), low, plain), out)
    nan = complex(math.nan, math.nan)
    return ew.where(ew.logical_or(ew.isnan(a), ew.isnan(b)), nan, out)


def _without_graph(op: Callable[..., Tensor], *operands: Any) -> Tensor:
    """``op(*operands)`` of inference tensors alone: no graph, as PyTorch's autograd skips
    such an op (a step of its composition here would record one)."""
    with no_grad():
        return op(*operands)


def logaddexp(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """log(exp(input) + exp(other)), stable for any magnitude."""
    if out is not None:
        return written_out("logaddexp", logaddexp(input, other), out, inputs=(input, other))
    if ew.inference_alone(input, other):
        return _without_graph(logaddexp, input, other)
    return _log_add("logaddexp", input, other, 1.0)


def logaddexp2(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """log2(2**input + 2**other), stable for any magnitude."""
    if out is not None:
        return written_out("logaddexp2", logaddexp2(input, other), out, inputs=(input, other))
    if ew.inference_alone(input, other):
        return _without_graph(logaddexp2, input, other)
    return _log_add("logaddexp2", input, other, math.log(2.0))


def hypot(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """sqrt(input**2 + other**2) without overflow (both scaled by the larger magnitude);
    the gradient is input / hypot, read from the result, as PyTorch's."""
    if out is not None:
        return written_out("hypot", hypot(input, other), out, inputs=(input, other))
    a, b = _floating_pair("hypot", input, other)
    if ew.inference_alone(input, other):
        return _without_graph(hypot, a, b)
    if is_grad_enabled():  # (PyTorch's node saves each operand for its own gradient)
        wanted = tuple(t for t in (input, other) if t.requires_grad)
        ew.refuse_saved_inference("hypot", wanted, wanted)
    if a.dtype in (dtypes.float16, dtypes.bfloat16):
        # PyTorch rounds a float32 hypot (correctly rounded, as C's) to the dtype: computed in
        # float64 where there is one, so that the float32 value is the same before rounding
        wide = dtypes.float64 if dtypes.float64 in a.backend.dtypes else dtypes.float32
        value = _scaled_hypot(ew.cast(a.detach(), wide), ew.cast(b.detach(), wide))
        value = ew.cast(ew.cast(value, dtypes.float32), a.dtype)
    else:
        value = _scaled_hypot(a.detach(), b.detach())
    # One node keeping its output, as PyTorch's HypotBackward0 saves its result: its rule
    # (autograd/gradients.py) reads it, and a write through ``.data`` reaches it
    return apply("hypot", value.native, value.dtype, (a, b), value.native)


def _scaled_hypot(a: Tensor, b: Tensor) -> Tensor:
    big = ew.maximum(ew.abs(a), ew.abs(b))
    scale = ew.where(ew.logical_or(ew.eq(big, 0), ew.isinf(big)), 1.0, big)
    scaled = ew.sqrt(ew.add(ew.square(ew.div(a, scale)), ew.square(ew.div(b, scale))))
    out = ew.mul(scaled, scale)
    return ew.where(ew.logical_or(ew.isinf(a), ew.isinf(b)), math.inf, out)  # even with NaN


def fmod(input: Tensor, other: Any, *, out: Tensor | None = None) -> Tensor:
    """C's fmod: the remainder of input / other truncated, with the sign of ``input``.
    Computed as ±(|input| mod |other|), which is exact (no rounded quotient)."""
    if out is not None:
        return written_out("fmod", fmod(input, other), out, inputs=(input, other))
    _need_tensor("fmod", "input", 1, input)
    ew.check_divisor("fmod", input, other)
    ew.refuse_complex("fmod", "not implemented for complex numbers", input, other)
    if isinstance(other, Tensor) and ew.inference_alone(input, other):
        # (a number is wrapped into a normal tensor by PyTorch: recorded)
        return _without_graph(fmod, input, other)
    if isinstance(other, Tensor) and other.requires_grad and is_grad_enabled():
        # (PyTorch's node saves both where other needs a gradient, which reads input / other)
        ew.refuse_saved_inference("fmod", (other,), (input, other))
    dtype = result_type(input, other)
    if dtype.kind in "iu":  # exact: input - trunc(input / other) * other
        quotient = ew.div(input, other, rounding_mode="trunc")
        return ew.sub(ew.cast(input, dtype), ew.mul(quotient, other))
    x = ew.cast(input, dtype)
    magnitude = ew.abs(ew.cast(other, dtype)) if isinstance(other, Tensor) else abs(float(other))
    # |x|, but with torch's input gradient at NaN (1: abs's is 0 there)
    negative = ew.lt(x, 0)
    rest = ew.remainder(ew.where(negative, ew.neg(x), x), magnitude)
    out = ew.where(negative, ew.neg(rest), rest)
    # A zero input is the result itself (-0.0 keeps its sign) unless the divisor is 0 or NaN.
    out = ew.where(ew.logical_and(ew.eq(x, 0), ew.eq(rest, 0)), x, out)
    if isinstance(other, Tensor):  # (PyTorch's overload for a tensor divisor is its second)
        out = labelled(out, "FmodBackward1", input, other)
        if other.requires_grad:
            return out
    else:  # (of an inference input PyTorch wraps the number: its tensor overload)
        out = labelled(out, "FmodBackward1" if input._inference else "FmodBackward0", input)
    return frees_nothing(out, x)  # (PyTorch's node for a number saves none: backward reruns)


def frac(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input - trunc(input): the fractional part, with the sign of ``input``."""
    if out is not None:
        return written_out("frac", frac(input), out, same_dtype=True, inputs=(input,))
    x = _floating_input("frac", input)
    return labelled(ew.sub(x, ew.trunc(x)), "FracBackward0", input)


# -- reductions -------------------------------------------------------------------------------


def _without_nan(x: Tensor) -> Tensor:
    return ew.where(ew.isnan(x), 0, x) if x.dtype.kind == "f" else x


def nansum(
    input: Tensor,
    dim: Dim = red.OMITTED,
    keepdim: bool = red.OMITTED,
    *,
    dtype: Any = None,
    **aliases: Any,
) -> Tensor:
    """The sum over ``dim`` (all when None) with NaN counted as zero (which also gets no
    gradient)."""
    if aliases:  # (NumPy's axis=/keepdims=, as PyTorch's parser takes them)
        dim, keepdim = red.numpy_names("nansum", aliases, dim, keepdim, red._BOTH_UNSET)
    dim = None if dim is red.OMITTED else dim
    keepdim = False if keepdim is red.OMITTED else keepdim
    if input.dtype.is_complex:
        raise RuntimeError("nansum does not support complex inputs (as PyTorch's)")
    return labelled(
        red.sum(_without_nan(input), dim, keepdim, dtype=dtype), "NansumBackward0", input
    )


def nanmean(
    input: Tensor,
    dim: Dim = red.OMITTED,
    keepdim: bool = red.OMITTED,
    *,
    dtype: Any = None,
    **aliases: Any,
) -> Tensor:
    """The mean over ``dim`` (all when None) of the elements that are not NaN (NaN where all
    are)."""
    if aliases:
        dim, keepdim = red.numpy_names("nanmean", aliases, dim, keepdim, red._BOTH_UNSET)
    dim = None if dim is red.OMITTED else dim
    keepdim = False if keepdim is red.OMITTED else keepdim
    if input.dtype.kind != "f":
        raise RuntimeError(
            "nanmean(): expected input to have floating point or complex dtype but got "
            f"{input.dtype.name}; use x.float().nanmean()"
        )
    count = red.sum(ew.logical_not(ew.isnan(input)), dim, keepdim)
    return ew.div(nansum(input, dim, keepdim, dtype=dtype), count)


def _var_and_mean(
    op: str, input: Tensor, dim: Any, unbiased: bool | None, keepdim: Any, correction: Any
) -> tuple[Tensor, Tensor]:
    dim = None if dim is red.OMITTED else dim
    keepdim = False if keepdim is red.OMITTED else keepdim
    if isinstance(dim, bool):  # the (input, unbiased) overload
        if unbiased is not None:
            raise TypeError(f"{op}(): unbiased given twice; call {op}(input, unbiased)")
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(
            f"{op}(): received both unbiased and correction; pass only correction "
            "(unbiased=False is correction=0)"
        )
    if unbiased is not None:
        correction = int(unbiased)
    return two_output_reductions.moments(
        op, input, dim, 1 if correction is None else correction, keepdim
    )


def var_mean(
    input: Tensor,
    dim: Dim = red.OMITTED,
    unbiased: bool | None = None,
    keepdim: bool = red.OMITTED,
    *,
    correction: float | None = None,
    **aliases: Any,
) -> tuple[Tensor, Tensor]:
    """``(var, mean)`` over ``dim`` (``correction`` 1 by default, as ``var``); PyTorch's
    overloads ``(input, unbiased)`` and ``(input, dim, unbiased, keepdim)`` too."""
    if aliases:
        dim, keepdim = red.numpy_names("var_mean", aliases, dim, keepdim, red._BOTH_UNSET)
    return _var_and_mean("var_mean", input, dim, unbiased, keepdim, correction)


def std_mean(
    input: Tensor,
    dim: Dim = red.OMITTED,
    unbiased: bool | None = None,
    keepdim: bool = red.OMITTED,
    *,
    correction: float | None = None,
    **aliases: Any,
) -> tuple[Tensor, Tensor]:
    """``(std, mean)`` over ``dim`` (``correction`` 1 by default, as ``std``), with
    ``var_mean``'s overloads."""
    if aliases:
        dim, keepdim = red.numpy_names("std_mean", aliases, dim, keepdim, red._BOTH_UNSET)
    return _var_and_mean("std_mean", input, dim, unbiased, keepdim, correction)


def aminmax(
    input: Tensor, *, dim: int | None = red.OMITTED, keepdim: bool = red.OMITTED, **aliases: Any
) -> tuple:
    """``(min, max)`` over ``dim`` (all elements when None)."""
    if aliases:
        dim, keepdim = red.numpy_names("aminmax", aliases, dim, keepdim, red._BOTH_UNSET)
    dim = None if dim is red.OMITTED else dim
    keepdim = False if keepdim is red.OMITTED else keepdim
    axes = () if dim is None else (dim,)
    if dim is not None:  # PyTorch's IndexError for an empty dim given
        red._check_nonempty("aminmax", input, red.axes_of("aminmax", axes, input.ndim))
    elif any(input.shape[a] == 0 for a in red.axes_of("aminmax", axes, input.ndim)):
        raise RuntimeError(
            "aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
            f"identity (input shape {list(input.shape)})"
        )
    return return_types.aminmax(*two_output_reductions.aminmax(input, axes, keepdim))


# -- scans ------------------------------------------------------------------------------------


def _scan(state: State, axis: int, combine: Callable[[State, State], State]) -> State:
    """Inclusive scan of ``state`` along ``axis``: ``combine(earlier, later)`` merges the
    partial result ending before a run with the run's own, in log2(n) steps."""
    n = state[0].shape[axis]
    shift = 1
    while shift < n:
        head = [mv.narrow(s, axis, 0, shift) for s in state]
        earlier = tuple(mv.narrow(s, axis, 0, n - shift) for s in state)
        later = tuple(mv.narrow(s, axis, shift, n - shift) for s in state)
        state = tuple(mv.cat([h, c], axis) for h, c in zip(head, combine(earlier, later)))
        shift *= 2
    return state


def _running_result(out: Tensor, x: Tensor) -> Tensor:
    """``out``, a running result over ``x``, as PyTorch's: a new tensor where the scan had
    nothing to do (a 0-d ``x``, a dim of size 0 or 1), C-ordered whatever ``x``'s layout."""
    if out is x:
        out = apply("identity", x._unshared_native(), x.dtype, (x,))
    return mv.contiguous(out)


def cumprod(input: Tensor, dim: int = red.OMITTED, *, dtype: Any = None, **aliases: Any) -> Tensor:
    """Running products along ``dim``; bool and integer tensors multiply in int64."""
    if aliases:
        dim = red.numpy_names("cumprod", aliases, dim, None, (red.OMITTED,))[0]
    red._missing_dim("cumprod", dim)
    accumulate = red._accumulate_dtype(input, dtype)
    axis = _axis(dim, input.ndim, "cumprod")  # checked on a 0-d tensor too, as PyTorch's
    red._refuse_bool_scan("cumprod", input, accumulate)
    if ew.inference_alone(input):
        with no_grad():  # (PyTorch's autograd skips an op of an inference tensor alone)
            return cumprod(input, dim, dtype=dtype)
    x = ew.cast(input, accumulate)
    if x.ndim == 0:
        return labelled(_running_result(x, x), "CumprodBackward0", x)
    if x.requires_grad and is_grad_enabled():
        return labelled(_Cumprod.apply(x, axis), "CumprodBackward0", x)
    return _cumprod_values(x, axis)


def _cumprod_values(x: Tensor, axis: int) -> Tensor:
    wide = _half_as_float32(x)
    if wide.dtype is dtypes.float32 and dtypes.float64 in x.backend.dtypes:
        # PyTorch's CPU cumprod multiplies float32 in double, each running product rounded
        # once: so does the scan in float64 (its order matters to the last double bit only)
        wide = ew.cast(wide, dtypes.float64)
    out = _scan((wide,), axis, lambda earlier, later: (ew.mul(earlier[0], later[0]),))[0]
    if wide.dtype.kind == "f" and out.shape[axis] > 1 and not _all_ordinary(out):
        out = _as_multiplied_in_order(wide, out, axis)
    return _running_result(out if wide is x else ew.cast(out, x.dtype), x)


def _all_ordinary(out: Tensor) -> bool:
    """Whether every running product is finite and nonzero: then no zero, infinity or NaN
    entered (nor an overflow or underflow), and the scan's order cannot matter to them.
    While ``tw.compile`` traces, False without reading the values (a read would break the
    graph: ``fullgraph=True`` refused the step): the cleanup pass runs in the graph."""
    if _compiling():
        return False
    # out / out is exactly 1 where out is finite and nonzero, NaN at 0, inf and NaN: their
    # sum is finite exactly when every product is ordinary (two ops: this is per call).
    return math.isfinite(red.sum(ew.div(out, out)).item())


def _compiling() -> bool:
    # Looked up, not imported (the compiler imports ops, and its import costs a first call
    # about a second): nothing traces before the compiler is loaded.
    compiled = sys.modules.get("tensorweaver.compiler.compiled")
    return compiled is not None and bool(compiled._tracing)


def _as_multiplied_in_order(x: Tensor, out: Tensor, axis: int) -> Tensor:
    """The scan's products ``out`` with the infinities, zeros and NaNs of PyTorch's
    sequential product (x0 * x1) * x2 ...: once the running product is inf (an inf element
    or an overflow) it stays inf, and a later zero makes it NaN; once it is 0 (a zero
    element or an underflow) it stays 0, and a later inf makes it NaN; NaN stays NaN. (The
    log-depth scan multiplies in another order: [1e308, 1e308, 0] gave 0 at the end,
    PyTorch NaN; [0, 1e308, 1e308] NaN, PyTorch 0.)"""
    zero = ew.eq(x, 0)
    zeros = red.cumsum(ew.logical_or(zero, ew.eq(out, 0)), axis)  # zero elements, underflows
    # inf before any zero: the product stays inf whatever the scan's order gave after it
    inf_seen = ew.gt(red.cumsum(ew.logical_and(ew.isinf(out), ew.eq(zeros, 0)), axis), 0)
    zero_seen = ew.logical_and(ew.gt(zeros, 0), ew.logical_not(inf_seen))
    bad = ew.logical_or(
        ew.isnan(x),
        ew.logical_or(ew.logical_and(zero, inf_seen), ew.logical_and(ew.isinf(x), zero_seen)),
    )
    negative = ew.lt(out, 0)
    settled = ew.where(
        inf_seen,
        ew.where(negative, -math.inf, math.inf),
        ew.where(zero_seen, ew.where(negative, -0.0, 0.0), out),
    )
    return ew.where(ew.gt(red.cumsum(bad, axis), 0), math.nan, settled)


def _reversed_cumsum(t: Tensor, axis: int) -> Tensor:
    return mv.flip(red.cumsum(mv.flip(t, axis), axis), axis)


class _Cumprod(Function):
    """Running products with PyTorch's cumprod_backward: without zeros
    reversed_cumsum(output * grad) / input (NaN at infinities, as PyTorch's); with zeros the
    O(n) form up to the first zero and at it (0 after it), and under create_graph the
    O(n**2) sum of the products that omit each element."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, axis: int) -> Tensor:
        out = _cumprod_values(x, axis)
        ctx.axis = axis
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        x, out = ctx.saved_tensors
        axis = ctx.axis
        n = x.shape[axis]
        if x.numel() <= 1 or n == 1:
            return grad, None
        if x.dtype.kind == "c":
            x, out = cx.conj_physical(x), cx.conj_physical(out)
        is_zero = ew.eq(x, 0)
        if is_grad_enabled():  # (create_graph)
            if red.any(is_zero).item():
                return _cumprod_grad_quadratic(x, grad, axis), None
            return ew.div(_reversed_cumsum(ew.mul(out, grad), axis), x), None
        # While tw.compile traces, the form with zeros without reading whether there are
        # any (it is the form without zeros where there are none).
        if not _compiling() and not red.any(is_zero).item():
            return ew.div(_reversed_cumsum(ew.mul(out, grad), axis), x), None
        w = ew.mul(out, grad)
        count = red.cumsum(is_zero, axis)
        before = ew.eq(count, 0)  # [0, z1)
        early = ew.div(_reversed_cumsum(ew.where(before, w, 0.0), axis), x)
        run = ew.eq(count, 1)  # [z1, z2)
        first = ew.logical_and(run, is_zero)
        between = ew.logical_and(run, ew.logical_not(first))
        # at z1: out[z1 - 1] * sum over k in [z1, z2) of grad[k] * prod x[z1 + 1 .. k]
        partial = cumprod(ew.where(between, x, 1.0), axis)
        total = red.sum(ew.mul(partial, ew.where(run, grad, 0.0)), axis, True)
        ones = cr.ones_like(mv.narrow(out, axis, 0, 1))
        previous = mv.cat([ones, mv.narrow(out, axis, 0, n - 1)], axis)
        at_zero = ew.mul(total, previous)
        return ew.where(before, early, ew.where(first, at_zero, 0.0)), None


def _cumprod_grad_quadratic(x: Tensor, grad: Tensor, axis: int) -> Tensor:
    """PyTorch's twice-differentiable cumprod gradient: for each k, the sum over i >= k of
    grad[i] times the product of x[0 .. i] without x[k]."""
    n = x.shape[axis]
    ones = cr.ones_like(mv.narrow(x, axis, 0, 1))
    parts = []
    for k in range(n):
        if k == 0:
            omitted = mv.cat([ones, cumprod(mv.narrow(x, axis, 1, n - 1), axis)], axis)
        elif k == n - 1:
            omitted = red.prod(mv.narrow(x, axis, 0, k), axis, True)
        else:
            until = red.prod(mv.narrow(x, axis, 0, k), axis, True)
            after = cumprod(mv.narrow(x, axis, k + 1, n - k - 1), axis)
            omitted = mv.cat([until, ew.mul(until, after)], axis)
        parts.append(red.sum(ew.mul(mv.narrow(grad, axis, k, n - k), omitted), axis, True))
    return mv.cat(parts, axis)


def _half_as_float32(x: Tensor) -> Tensor:
    """``x`` in float32 where it is a half type: running products and log-sum-exps of half
    tensors accumulate in float32, as PyTorch's do (in float16 a cumprod of 3,000 numbers was
    11 % off; PyTorch 0.05 %)."""
    return ew.cast(x, dtypes.float32) if x.dtype in (dtypes.float16, dtypes.bfloat16) else x


def _running_extreme(op: str, input: Tensor, dim: int) -> tuple:
    """Running maximum (``cummax``) or minimum with the index of the last extreme so far."""
    values, indices = _running_values(op, input, dim)
    values = labelled(values, f"{op.capitalize()}Backward0", input)
    saves_integer_output(values, indices)  # (PyTorch's node saves the indices)
    return getattr(return_types, op)(values, indices)


def _running_values(op: str, input: Tensor, dim: int) -> tuple:
    """:func:`_running_extreme`'s two outputs, unlabelled; NaN beats every number, so it
    propagates."""
    if input.numel() == 0:  # PyTorch returns before checking the dim (not its type)
        index_argument(dim, op, "dim")
        return input.clone(), cr.zeros(tuple(input.shape), dtype=dtypes.int64, device=input)
    axis = _axis(dim, input.ndim, op)
    if input.ndim == 0:
        return input.clone(), cr.full((), 0, dtype=dtypes.int64, device=input)
    better = ew.ge if op == "cummax" else ew.le
    floating = input.dtype.kind == "f"

    def combine(earlier: State, later: State) -> State:
        take = better(later[0], earlier[0])
        if floating:  # NaN later wins; a NaN so far is only replaced by a later one
            take = ew.logical_or(
                ew.isnan(later[0]), ew.logical_and(take, ew.logical_not(ew.isnan(earlier[0])))
            )
        return tuple(ew.where(take, b, a) for a, b in zip(earlier, later))

    shape = [1] * input.ndim
    shape[axis] = input.shape[axis]
    positions = mv.reshape(cr.arange(input.shape[axis], dtype=dtypes.int64, device=input), shape)
    _, indices = _scan((input.detach(), mv.expand(positions, input.shape)), axis, combine)
    return ix.gather_unchecked(input, axis, indices), indices  # gradient via gather


def cummax(input: Tensor, dim: int = red.OMITTED, **aliases: Any) -> tuple:
    """``(values, indices)``: the running maximum along ``dim`` and where it was (the last of
    tied maxima)."""
    if aliases:
        dim = red.numpy_names("cummax", aliases, dim, None, (red.OMITTED,))[0]
    red._missing_dim("cummax", dim)
    return _running_extreme("cummax", input, dim)


def cummin(input: Tensor, dim: int = red.OMITTED, **aliases: Any) -> tuple:
    """``(values, indices)``: the running minimum along ``dim`` and where it was (the last of
    tied minima)."""
    if aliases:
        dim = red.numpy_names("cummin", aliases, dim, None, (red.OMITTED,))[0]
    red._missing_dim("cummin", dim)
    return _running_extreme("cummin", input, dim)


def logcumsumexp(input: Tensor, dim: int = red.OMITTED, **aliases: Any) -> Tensor:
    """log(cumsum(exp(input))) along ``dim``, stable: a scan of ``logaddexp``."""
    if aliases:
        dim = red.numpy_names("logcumsumexp", aliases, dim, None, (red.OMITTED,))[0]
    red._missing_dim("logcumsumexp", dim)
    axis = _axis(dim, input.ndim, "logcumsumexp")  # the dim first, as PyTorch checks it
    x = _floating_input("logcumsumexp", input, "fc")
    if x.ndim == 0:  # (its gradient 1, at infinities too, as PyTorch's)
        return labelled(_running_result(x, x), "LogcumsumexpBackward0", x)
    if x.dtype.kind == "c":
        return _running_result(_complex_log_cumsum(x, axis), x)
    if x.requires_grad and is_grad_enabled() and not (x._inference and all_inference((x,))):
        # One node keeping its input and output, as PyTorch's LogcumsumexpBackward0 (a write
        # through ``.data`` reaches the output its backward reads); at infinities its
        # formula's NaN at +inf inputs and -inf outputs, 0 after a +inf.
        out = _LogCumSumExp.apply(x, axis)
    else:
        out = _log_cumsum_scan(x, axis)
    return labelled(_running_result(out, x), "LogcumsumexpBackward0", x)


def _log_cumsum_scan(x: Tensor, axis: int) -> Tensor:
    """The scan of ``logaddexp`` along ``axis``, a half type's in float32."""
    wide = _half_as_float32(x)
    out = _scan((wide,), axis, lambda earlier, later: (logaddexp(earlier[0], later[0]),))[0]
    return out if wide is x else ew.cast(out, x.dtype)


class _LogCumSumExp(Function):
    """The real logcumsumexp with PyTorch's gradient formula: for each input, the sum over
    later outputs of ``grad * exp(input - output)``, the positive and negative parts of
    ``grad`` summed apart in log space (reversed logcumsumexps), or where every value is
    finite as a running sum (:func:`_smooth_backward`)."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, axis: int) -> Tensor:
        out = _log_cumsum_scan(x, axis)
        ctx.axis = axis
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        x, out = ctx.saved_tensors
        axis = ctx.axis
        if _smooth_backward(x, out):
            return _later_sum(grad, x, out, axis), None
        lowest = finfo(x.dtype).min
        log_size = ew.log(ew.abs(grad))

        def part(sign: Tensor) -> Tensor:
            logs = ew.sub(ew.where(sign, log_size, lowest), out)
            later = mv.flip(logcumsumexp(mv.flip(logs, axis), axis), axis)
            return ew.exp(ew.add(later, x))

        return ew.sub(part(ew.gt(grad, 0)), part(ew.lt(grad, 0))), None


def _smooth_backward(x: Tensor, out: Tensor) -> bool:
    """Whether a logcumsumexp backward takes :func:`_later_sum`: PyTorch's values where every
    value is finite (but those its log space absorbs in float32: exact here), two
    exponentials an element where PyTorch's formula takes a scan of logaddexps, and
    differentiable again without its log(|grad|), whose third derivative is NaN. Else (and
    for half types, rounded as PyTorch's, and while tw.compile traces) that formula."""
    return (
        not _compiling()
        and x.numel() > 0
        and x.dtype not in (dtypes.float16, dtypes.bfloat16)
        and math.isfinite(red.sum(ew.add(x, out)).item())
    )


def _later_sum(grad: Tensor, x: Tensor, out: Tensor, axis: int) -> Tensor:
    """For each input i, the sum over j >= i of grad_j exp(x_i - out_j): exp(x_i - out_i)
    times the running sum from the end s_i = grad_i + exp(out_i - out_(i+1)) s_(i+1), a
    linear recurrence (scanned as compositions of affine maps) whose factors are at most 1."""
    n = x.shape[axis]
    late = mv.flip(out, axis)
    steps = ew.exp(ew.sub(mv.narrow(late, axis, 1, n - 1), mv.narrow(late, axis, 0, n - 1)))
    factors = mv.cat([cr.full_like(mv.narrow(late, axis, 0, 1), 0.0), steps], axis)
    sums = _scan(
        (factors, mv.flip(grad, axis)),
        axis,
        lambda earlier, later: (
            ew.mul(earlier[0], later[0]),
            ew.add(ew.mul(later[0], earlier[1]), later[1]),
        ),
    )[1]
    return ew.mul(ew.exp(ew.sub(x, out)), mv.flip(sums, axis))


def _complex_log_cumsum(x: Tensor, axis: int) -> Tensor:
    """PyTorch's complex logcumsumexp, which adds one element after another into a sum that
    starts at -inf. Its imaginary parts are angles not reduced mod 2 pi, so they depend on that
    order: the scan's sums are right up to multiples of 2 pi i, and those multiples are chosen
    as that order's would be (a loop over the elements costs a millisecond each)."""
    if not x.numel():
        return x.clone()
    if not bool(red.all(ew.isfinite(x))):  # infinities and NaN take the order's special cases
        return _complex_log_cumsum_in_order(x, axis)
    sums = _scan((x,), axis, lambda earlier, later: (_complex_log_add(later[0], earlier[0]),))[0]
    with no_grad():
        turns = _order_turns(x, sums.detach(), axis)
        shift = cx.complex(ew.mul(turns, 0.0), ew.mul(turns, 2 * math.pi))
    return ew.add(sums, shift)


def _order_turns(x: Tensor, sums: Tensor, axis: int) -> Tensor:
    """How many turns (2 pi) the one-by-one order's imaginary parts lie above ``sums``': each
    step's angle is taken within pi of its larger operand's (log1p's principal branch), that
    is of the element where its real part is not below the sum before it (a restart), and of
    the sum before it otherwise (a running unwrap of the angles)."""
    n = x.shape[axis]

    def before(t: Tensor, first: float) -> Tensor:  # t one place later along axis
        head = cr.full_like(mv.narrow(t, axis, 0, 1), first)
        return mv.cat([head, mv.narrow(t, axis, 0, n - 1)], axis)

    def wrap(angle: Tensor) -> Tensor:  # into [-pi, pi]
        return ew.sub(angle, ew.mul(ew.round(ew.div(angle, 2 * math.pi)), 2 * math.pi))

    re_x, im_x, re_s, im_s = cx.real(x), cx.imag(x), cx.real(sums), cx.imag(sums)
    restart = ew.ge(re_x, before(re_s, -math.inf))
    step = ew.where(
        restart, ew.add(im_x, wrap(ew.sub(im_s, im_x))), wrap(ew.sub(im_s, before(im_s, 0.0)))
    )
    # A cumulative sum of the steps that starts again at each restart.
    total = red.cumsum(step, axis)
    places = [1] * x.ndim
    places[axis] = n
    place = mv.reshape(cr.arange(n, dtype=dtypes.int64, device=x), places)
    last_restart = cummax(ew.where(restart, place, 0), axis)[0]
    offset = ix.gather_unchecked(ew.sub(step, total), axis, last_restart)
    return ew.round(ew.div(ew.sub(ew.add(total, offset), im_s), 2 * math.pi))


def _complex_log_cumsum_in_order(x: Tensor, axis: int) -> Tensor:
    """The complex logcumsumexp one element after another, as PyTorch's kernel."""
    shape = list(x.shape)
    shape[axis] = 1
    total = cr.full(shape, complex(-math.inf, 0.0), dtype=x.dtype, device=x)
    sums = []
    for k in range(x.shape[axis]):
        total = _complex_log_add(mv.narrow(x, axis, k, 1), total)
        sums.append(total)
    return mv.cat(sums, axis)


# -- scatter and index reductions -------------------------------------------------------------

_SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")
_INDEX_REDUCTIONS = ("prod", "mean", "amax", "amin")
#: Names PyTorch's scatter_reduce also takes, undocumented.
_SCATTER_ALIASES = {"max": "amax", "min": "amin"}


def _flat_targets(x: Tensor, axis: int, index: Tensor) -> Tensor:
    """The position in ``x.reshape(-1)`` each element of ``index`` sends its source to."""
    if not x.ndim:  # a 0-d x is its only place
        return mv.reshape(index, (-1,))
    strides = [math.prod(x.shape[a + 1 :]) for a in range(x.ndim)]
    flat = ew.mul(index, strides[axis])
    for a in range(x.ndim):
        if a != axis:
            shape = [1] * x.ndim
            shape[a] = index.shape[a]
            coords = cr.arange(index.shape[a], dtype=dtypes.int64, device=x)
            flat = ew.add(flat, ew.mul(mv.reshape(coords, shape), strides[a]))
    return mv.reshape(flat, (-1,))


#: The reductions a backend's optional ``scatter_reduce`` takes, by the op the scan uses.
_KERNEL_REDUCTIONS = {ew.maximum: "amax", ew.minimum: "amin", ew.mul: "prod"}


def _identity(reduce: str, dtype: Any) -> Any:
    """The value ``reduce`` leaves unchanged in ``dtype`` (what an untouched place holds)."""
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -math.inf if reduce == "amax" else math.inf
    if dtype is dtypes.bool_:
        return reduce == "amin"
    limits = np.iinfo(dtype.numpy_name)
    return limits.min if reduce == "amax" else limits.max


def _segment_reduce(x: Tensor, axis: int, index: Tensor, src: Tensor, op: Callable) -> Tensor:
    """Each target's sources of a scatter reduced by ``op``, in x's shape (the reduction's
    identity where nothing is scattered): the backend's ``scatter_reduce`` kernel where it
    has one and no gradient is wanted; otherwise the sources sorted by target, scanned within
    each target's run (differentiable), and each run's last partial scattered."""
    reduce = _KERNEL_REDUCTIONS[op]
    filler = cr.full_like(x, _identity(reduce, x.dtype))
    kernel = getattr(x.backend, "scatter_reduce", None)
    if kernel is not None and not (is_grad_enabled() and src.requires_grad):
        # No gradient flows through here (the extremes' comes from _SharedExtreme).
        native = kernel(filler.native, axis, index.native, src.native, reduce)
        return Tensor(native, x.backend, x.dtype)
    if src.numel() == 0:
        return filler
    targets = _flat_targets(x, axis, index)
    order = srt.argsort(targets, stable=True)
    runs = ix.gather_unchecked(targets, 0, order)
    values = ix.gather_unchecked(mv.reshape(src, (-1,)), 0, order)

    def combine(earlier: State, later: State) -> State:
        same = ew.eq(earlier[1], later[1])
        return ew.where(same, op(earlier[0], later[0]), later[0]), later[1]

    values, _ = _scan((values, runs), 0, combine)
    n = runs.shape[0]
    last = ew.ne(mv.narrow(runs, 0, 1, n - 1), mv.narrow(runs, 0, 0, n - 1))
    last = mv.cat([last, cr.full((1,), True, dtype=dtypes.bool_, device=x)])
    out = ix.scatter_unchecked(filler.reshape(-1), 0, runs[last], values[last])
    return out.reshape(x.shape)


class _SharedExtreme(Function):
    """The amax/amin result ``out``, whose gradient goes to the self and source elements equal
    to it in the proportions ``self_weight`` and ``src_weight``."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, src: Tensor, out: Tensor, weights: tuple, where: tuple):
        ctx.weights, ctx.where = weights, where
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        self_weight, src_weight = ctx.weights
        axis, index = ctx.where
        src_grad = ew.mul(ix.gather_unchecked(grad, axis, index), src_weight)
        return ew.mul(grad, self_weight), src_grad, None, None, None


def _scatter_extreme(
    x: Tensor, axis: int, index: Tensor, src: Tensor, reduce: str, include_self: bool
) -> Tensor:
    pick = ew.maximum if reduce == "amax" else ew.minimum  # both propagate NaN
    targeted = _targeted(x, axis, index)
    best = _segment_reduce(x, axis, index, src.detach(), pick)
    best = pick(x.detach(), best) if include_self else best
    out = ew.where(targeted, best, x.detach())
    if not (is_grad_enabled() and (x.requires_grad or src.requires_grad)):
        return out
    # PyTorch shares the gradient evenly among the elements equal to the result, counting
    # self even where include_self=False (and then giving self none).
    self_hit = ew.cast(ew.eq(x, out), x.dtype)
    src_hit = ew.cast(ew.eq(src, ix.gather_unchecked(out, axis, index)), x.dtype)
    count = ix.scatter_add_unchecked(self_hit, axis, index, src_hit)
    self_weight = ew.div(self_hit, count)
    if not include_self:
        self_weight = ew.where(targeted, 0.0, self_weight)
    weights = (self_weight, ew.div(src_hit, ix.gather_unchecked(count, axis, index)))
    return _SharedExtreme.apply(x, src, out, weights, (axis, index))


def _targeted(x: Tensor, axis: int, index: Tensor) -> Tensor:
    """Where in ``x`` a scatter along ``axis`` by ``index`` writes (bool)."""
    return _fill_at(cr.zeros_like(x, dtype=dtypes.bool_), axis, index, True)


def _fill_at(x: Tensor, axis: int, index: Tensor, value: Any) -> Tensor:
    """``x`` with ``value`` written at the (checked) ``index`` along ``axis``."""
    filler = mv.expand(cr.full((), value, dtype=x.dtype, device=x), index.shape)
    return ix.scatter_unchecked(x, axis, index, filler)


def _scatter_reduce(
    op: str, x: Tensor, axis: int, index: Tensor, src: Tensor, reduce: str, include_self: bool
) -> Tensor:
    if src.dtype is not x.dtype:
        raise RuntimeError(
            f"{op}(): expected self.dtype to be equal to src.dtype, got {x.dtype.name} and "
            f"{src.dtype.name}; convert src with .to(input.dtype)"
        )
    if not index.numel():  # nothing is reduced; PyTorch checks no size of an empty index
        return _reduced_nothing(x, src)
    if any(s < i for s, i in zip(src.shape, index.shape)):
        raise RuntimeError(
            f"{op}(): src of shape {list(src.shape)} is smaller than index of shape "
            f"{list(index.shape)}"
        )
    src = ix.cut_source(src, index.shape, "ScatterReduceBackward0")
    _check_reduce_dtype(op, x.dtype, reduce)
    if reduce in ("amax", "amin"):
        return _scatter_extreme(x, axis, index, src, reduce, include_self)
    identity = 1 if reduce == "prod" else 0
    base = x if include_self else _fill_at(x, axis, index, identity)
    if reduce == "prod":
        return ew.mul(base, _segment_reduce(x, axis, index, src, ew.mul))
    total = ix.scatter_add_unchecked(base, axis, index, src)
    if reduce == "sum":
        return total
    ones = cr.ones_like(index)
    count = ix.scatter_add_unchecked(
        cr.full_like(x, int(include_self), dtype=dtypes.int64), axis, index, ones
    )
    count = ew.where(ew.eq(count, 0), 1, count)
    if x.dtype.kind in "fc":
        return ew.div(total, ew.cast(count, x.dtype))
    return ew.cast(ew.floor_divide(total, count), x.dtype)


def _refuse_complex_grad(op: str, input: Tensor, src: Any) -> None:
    """PyTorch's refusal to record a complex scatter or index reduction (before any other
    check)."""
    wanted = input.requires_grad or (isinstance(src, Tensor) and src.requires_grad)
    if input.dtype.kind == "c" and wanted and is_grad_enabled():
        raise RuntimeError(
            f"{op} does not support automatic differentiation for outputs with complex "
            "dtype; reduce under no_grad() or the real and imaginary parts apart"
        )


def _check_reduce_dtype(op: str, dtype: Any, reduce: str) -> None:
    """PyTorch's kernels' refusals: complex numbers have no order (amax, amin), and
    index_reduce has no bool mean."""
    if dtype.kind == "c" and reduce in ("amax", "amin"):
        refused = "complex numbers are not ordered; reduce their .abs() or .real instead"
    elif op == "index_reduce" and dtype is dtypes.bool_ and reduce == "mean":
        refused = "a bool mean is not implemented; convert with .int() or .float() first"
    else:
        return
    raise NotImplementedError(f"{op}(): reduce={reduce!r} of {dtype.name}: {refused}")


class Recount:
    """What scatter_reduce's and index_reduce's node keeps: the composite that made its
    output gives the gradient, but where a write that bumped no version (through ``.data``)
    changed the index since, PyTorch's ScatterReduceBackward0 and IndexReduceBackward0
    formulas, counted again from the index as it is now (they read the index they saved)."""

    __slots__ = ("axis", "reduce", "include_self", "remade", "shape")

    def __init__(
        self, axis: int, reduce: str, include_self: bool, remade: ix.Remade, shape: tuple
    ) -> None:
        self.axis, self.reduce, self.include_self, self.remade = axis, reduce, include_self, remade
        self.shape = shape  # the index's

    def gradients(self, node: Any, g: Tensor) -> tuple:
        """The gradients of ``node``'s inputs (self, src, the composite's output)."""
        index = self.remade.index(None)
        if node.inputs[1].shape != self.shape:
            _refuse_larger_src(node, self.reduce, self.shape, index is not None)
        if index is None:  # (unchanged: the composite's own gradient)
            return None, None, g
        # (PyTorch's saved result has this node as its grad_fn: so has ``out`` here)
        x, src, out = node.inputs[0], node.inputs[1], node.output(node.inputs[2].native)
        cut = mv.slice_dims(src, [0] * src.ndim, list(index.shape), [1] * src.ndim)
        gx, gsrc = self._recounted(g, x, index, cut, out)
        if gsrc is not None and gsrc.shape != src.shape:  # (forward AD: src beyond it, zeros)
            gsrc = mv.pad_dims(gsrc, [(0, n - k) for n, k in zip(src.shape, gsrc.shape)])
        return (gx if node.parents[0] is not None else None), gsrc, None

    def _recounted(self, g: Tensor, x: Tensor, index: Tensor, src: Tensor, out: Tensor) -> tuple:
        axis, reduce = self.axis, self.reduce
        if reduce == "sum":
            gx, gsrc = g, ix.gather_unchecked(g, axis, index)
        elif reduce == "mean":
            count = cr.full_like(g, int(self.include_self))
            count = ix.scatter_add_unchecked(count, axis, index, cr.ones_like(src))
            gx = ew.div(g, ew.where(ew.eq(count, 0), 1.0, count))
            gsrc = ix.gather_unchecked(gx, axis, index)
        elif reduce == "prod":
            gx, gsrc = self._product_gradients(g, x, index, src, out)
        else:  # amax, amin: shared evenly among the elements equal to the result
            value = ix.gather_unchecked(out, axis, index)
            self_hit = ew.cast(ew.eq(x, out), x.dtype)
            src_hit = ew.cast(ew.eq(src, value), x.dtype)
            shared = ew.div(g, ix.scatter_add_unchecked(self_hit, axis, index, src_hit))
            gx = ew.mul(self_hit, shared)
            gsrc = ew.mul(src_hit, ix.gather_unchecked(shared, axis, index))
        if not self.include_self:
            gx = _fill_at(gx, axis, index, 0)
        return gx, gsrc

    def _product_gradients(
        self, g: Tensor, x: Tensor, index: Tensor, src: Tensor, out: Tensor
    ) -> tuple:
        axis, include_self = self.axis, self.include_self

        def product(base: Tensor, values: Tensor) -> Tensor:
            return _scatter_reduce(
                "scatter_reduce", base, axis, index, values, "prod", include_self
            )

        # (a zero's own gradient is the product of the others, not out / 0)
        x_one = ew.where(ew.eq(x, 0), 1.0, x)
        gx = ew.div(ew.mul(g, product(x_one, src)), x_one)
        src_zero = ew.eq(src, 0)
        zeros = ix.scatter_add_unchecked(cr.zeros_like(x), axis, index, ew.cast(src_zero, x.dtype))
        lone_zero = ew.logical_and(src_zero, ew.eq(ix.gather_unchecked(zeros, axis, index), 1))
        without = product(x, ew.where(lone_zero, 1.0, src))
        gsrc = ew.where(
            lone_zero,
            ix.gather_unchecked(ew.mul(g, without), axis, index),
            ew.div(ix.gather_unchecked(ew.mul(g, out), axis, index), ew.where(src_zero, 1.0, src)),
        )
        return gx, gsrc


def _refuse_larger_src(node: Any, reduce: str, index: tuple, recounted: bool) -> None:
    """PyTorch's error where scatter_reduce's ``node`` meets a src larger than the index: its
    prod, amax and amin formulas (and its amax and amin jvps) compare src with values of
    index's shape; its sum and mean formulas give src a gradient of index's shape, which its
    engine refuses (here where the index is ``recounted``: else the composite's
    ``cut_source`` node refuses it where the pass needs it). Their jvps give tangents: none
    refused within a forward-AD level, where prod's tangent is none either."""
    from tensorweaver.autograd import forward_ad  # (it builds on this module)
    from tensorweaver.autograd.gradients import invalid_gradient

    src = node.inputs[1].shape
    if forward_ad._current_level >= 0:
        if reduce in ("sum", "mean", "prod"):
            return
    elif reduce in ("sum", "mean"):
        if recounted and node.parents[1] is not None:
            raise invalid_gradient(node.name, index, src)
        return
    for d, (n, k) in enumerate(zip(src, index)):
        if n != k:
            raise RuntimeError(
                f"The size of tensor a ({n}) must match the size of tensor b ({k}) at "
                f"non-singleton dimension {d}: scatter_reduce's backward with a src of shape "
                f"{list(src)} larger than index of shape {list(index)}; pass src cut to "
                "index's shape"
            )


def _recounting(
    op: str,
    out: Tensor,
    x: Tensor,
    src: Tensor,
    axis: int,
    reduce: str,
    include_self: bool,
    index: Tensor,
) -> Tensor:
    """``out`` (the composite's) ending in one node of ``op`` (scatter_reduce or
    index_reduce) over ``x`` and ``src``, as PyTorch's node (its name, the inputs and output
    it saves), whose rule recounts from ``index`` (the call's) once written unseen."""
    if out._node is None:
        return out
    shape, like = src.shape, ix.like(x)

    def positions(index: Tensor) -> Tensor:  # the checked int64 index along ``axis``
        if op == "scatter_reduce":
            return ix.check_scatter_index(op, like(), axis, index)[1]
        flat = mv.reshape(ix.int64_index(op, index, like()), (-1,))
        check_index(f"{op}()", flat, like().shape[axis], axis, error=IndexError)
        along = [1] * len(shape)
        along[axis] = flat.shape[0]
        return mv.expand(mv.reshape(flat, along), shape)

    remade = ix.Remade(positions, [index])
    scattered = tuple(index.shape) if op == "scatter_reduce" else shape  # (the index's shape)
    return apply(
        op,
        out.native,
        out.dtype,
        (x, src, out),
        Recount(axis, reduce, include_self, remade, scattered),
    )


def scatter_reduce(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """A copy of ``input`` where each ``src`` element is reduced into the place ``index``
    names along ``dim`` (with the input's value too when ``include_self``)."""
    if reduce not in _SCATTER_REDUCTIONS and reduce not in _SCATTER_ALIASES:
        raise RuntimeError(
            f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
        )
    reduce = _SCATTER_ALIASES.get(reduce, reduce)
    _refuse_complex_grad("scatter_reduce", input, src)
    if reduce == "mean" and input.dtype is dtypes.bool_:
        raise NotImplementedError(
            "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'; convert "
            "with .int() or .float() first"
        )
    if ix.vectors_of_0d(input, index, src):
        x, vector, values = (ix.as_vector(t) for t in (input, index, src))
        out = scatter_reduce(x, dim, vector, values, reduce, include_self=include_self)
        return mv.reshape(out, input.shape)
    try:
        axis, positions = ix.check_scatter_index("scatter_reduce", input, dim, index)
    except RuntimeError as error:  # an empty index: PyTorch checks none of its sizes
        ix._unless_empty(error, input, index, src)
        return _reduced_nothing(input, src)
    out = _scatter_reduce("scatter_reduce", input, axis, positions, src, reduce, include_self)
    out = _recounting("scatter_reduce", out, input, src, axis, reduce, include_self, index)
    out = labelled(out, "ScatterReduceBackward0", input, src)
    # (PyTorch's node saves the index for every reduce: one made under inference_mode() is
    # refused, a later change in place makes backward refuse)
    if out._node is not None and not ew.inference_alone(input, index, src):
        ix.refuse_saved_indices("scatter_reduce", (index,))
    return ix._saving_index(out, index)


def _reduced_nothing(x: Tensor, src: Tensor) -> Tensor:
    """A copy of ``x`` (an empty index reduces nothing) with ``src`` in its graph, as in
    PyTorch's, where ``src`` gets a zero gradient (not none)."""
    out = x.clone()
    if not (src.requires_grad and is_grad_enabled()):
        return out
    nothing = ew.cast(red.sum(mv.narrow(mv.reshape(src, (-1,)), 0, 0, 0)), x.dtype)  # exactly 0
    return ew.where(cr.full((), True, dtype=dtypes.bool_, device=x), out, nothing)


def _check_index_source(input: Tensor, axis: int, index: Tensor, source: Tensor) -> None:
    """PyTorch's checks (and classes) of ``index_reduce``'s index and source sizes."""
    if index.ndim > 1:
        raise IndexError(
            f"index_reduce(): index must be a vector (0-d or 1-d), got shape {list(index.shape)}"
        )
    if axis >= source.ndim:
        raise RuntimeError(
            f"index_reduce(): dim {axis} is out of bounds of the source tensor of shape "
            f"{list(source.shape)}"
        )
    if source.shape[axis] != index.numel():
        raise RuntimeError(
            f"index_reduce(): the number of indices ({index.numel()}) should equal "
            f"source.size({axis}) ({source.shape[axis]})"
        )
    others = [n for d, n in enumerate(input.shape) if d != axis]
    if source.ndim != input.ndim or [n for d, n in enumerate(source.shape) if d != axis] != others:
        raise RuntimeError(
            f"index_reduce(): source tensor shape must match self tensor shape, excluding the "
            f"specified dimension; got source {list(source.shape)} and self {list(input.shape)} "
            f"along dim {axis}"
        )


def index_reduce(
    input: Tensor,
    dim: int,
    index: Tensor,
    source: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """A copy of ``input`` where slice i of ``source`` along ``dim`` is reduced into slice
    ``index[i]`` (with the input's own slice too when ``include_self``)."""
    if reduce not in _INDEX_REDUCTIONS:
        raise RuntimeError(
            f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
            f"{reduce}."
        )
    _refuse_complex_grad("index_reduce", input, source)
    axis = _axis(dim, input.ndim, "index_reduce")
    given, index = index, ix.int64_index("index_reduce", index, input)
    if input.ndim == 0 and source.ndim == 0:  # PyTorch takes 0-d tensors as 1-element vectors
        if index.numel() != 1:
            raise IndexError(f"index_reduce(): a 0-d input takes one index, got {index.numel()}")
        one = (1,)
        flat = index_reduce(
            input.reshape(one), 0, index, source.reshape(one), reduce, include_self=include_self
        )
        return flat.reshape(())
    _check_index_source(input, axis, index, source)
    check_index(
        "index_reduce()", mv.reshape(index, (-1,)), input.shape[axis], axis, error=IndexError
    )
    shape = [1] * input.ndim
    shape[axis] = index.numel()
    full_index = mv.expand(mv.reshape(index, shape), source.shape)
    if not include_self and input.dtype.kind in "bc":  # (even where the index is empty)
        raise NotImplementedError(
            f"index_reduce(): include_self=False is not implemented for {input.dtype.name}; "
            "convert with .int() or .float() first, or reduce with include_self=True"
        )
    out = _scatter_reduce("index_reduce", input, axis, full_index, source, reduce, include_self)
    out = _recounting("index_reduce", out, input, source, axis, reduce, include_self, given)
    # (PyTorch's node saves the index, as given, and the source; of inference tensors alone
    # it records only the copy of the input)
    if out._node is not None and not ew.inference_alone(input, given, source):
        ix.refuse_saved_indices("index_reduce", (given, source))
        ix._saving_index(out, given)
    # (PyTorch's result is contiguous whatever the input's layout)
    return ix.allocated_as(labelled(out, "IndexReduceBackward0", input, source))
