"""PyTorch's less common creation functions: ``tw.empty_strided``, ``tw.scalar_tensor``,
``tw.fill`` (out of place: a tensor like ``input`` holding ``value``) and the deprecated,
end-inclusive ``tw.range`` and ``tw.frombuffer``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from numbers import Number
from typing import Any

import numpy as np

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import overflow
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.memory_facts import empty_strided_as
from tensorweaver.ops.out_arguments import call_with_out
from tensorweaver.tensor import Tensor


def empty_strided(
    size: Sequence[int],
    stride: Sequence[int],
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> Tensor:
    """A tensor of shape ``size`` (zeros: there is no uninitialised memory) laid out with
    ``stride`` where that is dense in some axis order (see ``empty_strided_as``)."""

    def make(shape: tuple[int, ...]) -> Tensor:
        return cr.empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)

    return empty_strided_as(make, size, stride, "empty_strided")


def scalar_tensor(
    s: Number | bool,
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool | None = None,
) -> Tensor:
    """A 0-dim tensor holding ``s``, of the default float dtype unless ``dtype`` is given
    (ints and bools too, unlike ``tw.tensor``)."""
    if isinstance(s, Tensor):  # PyTorch reads a one-element tensor as its number
        s = s.item()
    if dtype is None:
        dtype = cr.get_default_dtype()
    return cr.full((), s, dtype=dtype, device=device, requires_grad=requires_grad)


def fill(input: Tensor, value: Any) -> Tensor:
    """A new tensor of ``input``'s shape and dtype holding ``value`` (a number or a 0-dim
    tensor, which then gets the gradient: the sum of the output's)."""
    if not isinstance(value, Tensor):
        return labelled(ew.with_zero_gradient(cr.full_like(input, value), input), "FillBackward0")
    if value.ndim:
        raise RuntimeError(
            "fill only supports 0-dimension value tensor but got tensor with "
            f"{value.ndim} dimensions (shape {tuple(value.shape)}); pass value.squeeze() or a "
            "number"
        )
    out = ew.with_zero_gradient(value.to(input.dtype).expand(input.shape).clone(), input)
    return labelled(out, "FillBackward1", input, value)


def range(  # noqa: A001 - PyTorch's name
    start: Number,
    end: Number | None = None,
    step: Number = 1,
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool | None = None,
    out: Tensor | None = None,
) -> Tensor:
    """``start`` to ``end`` *inclusive* by ``step``, as the deprecated ``torch.range``: of
    the default float dtype unless ``dtype`` is given, ``int((end - start) / step) + 1``
    values (an integer ``dtype`` truncates the bounds and step first)."""
    warnings.warn(
        "tw.range is deprecated, as torch.range is: it includes its end, unlike Python's "
        "range; use tw.arange(start, end + step, step) instead",
        UserWarning,
        stacklevel=2,
    )
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    options = {"dtype": dtype, "device": device, "requires_grad": requires_grad}
    if out is not None:
        return call_with_out("range", _inclusive_range, (start, end, step), options, out)
    return _inclusive_range(start, end, step, **options)


def _inclusive_range(
    start: Number, end: Number, step: Number, dtype: DType | None, device: Any, requires_grad: bool
) -> Tensor:
    """``range``'s values (its warning given)."""
    start, end, step = (cr._as_number(v) for v in (start, end, step))
    dtype = dtype or cr.get_default_dtype()
    if dtype.is_complex or dtype is dtypes.bool_:
        raise NotImplementedError(
            f'"range" not implemented for {dtype.name}; make a float range and convert it'
        )
    if step == 0 or dtype.kind in "iu" and int(step) == 0:
        raise RuntimeError(f"range: step must be nonzero, got {step} for {dtype.name}")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"range: unsupported range: {start} -> {end} (bounds must be finite)")
    if (end - start) * step < 0:
        raise RuntimeError(
            f"range: upper bound and lower bound inconsistent with step sign: from {start} to "
            f"{end} by {step}; use a step of the other sign"
        )
    if dtype.kind in "iu":  # the bounds truncated; C++'s integer division truncates too
        start, end, step = int(start), int(end), int(step)
        n = abs(end - start) // abs(step) + 1 if (end - start) * step >= 0 else 0
        host = start + step * np.arange(n, dtype=np.int64)
    else:  # computed as PyTorch does, in float32 for the half-precision dtypes
        kind = np.float32 if dtype.itemsize == 2 else np.float64
        first, last, by = kind(start), kind(end), kind(step)
        n = int((last - first) / by + kind(1))
        host = first + by * np.arange(n, dtype=kind)
    return cr.tensor(host, dtype=dtype, device=device, requires_grad=requires_grad)


def logspace(
    start: Any,
    end: Any,
    steps: int,
    base: float = 10.0,
    *,
    out: Tensor | None = None,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool | None = None,
) -> Tensor:
    """``steps`` values ``base ** e``, ``e`` evenly spaced from ``start`` to ``end``
    inclusive, as ``torch.logspace`` (see :func:`_logspace`); ``out=`` as PyTorch's: the
    result computed in ``out``'s dtype (a ``dtype`` naming another is a RuntimeError)."""
    options = dict(layout=layout, device=device, requires_grad=requires_grad)
    if out is None:  # the usual call
        return _logspace(start, end, steps, base, dtype=dtype, pin_memory=pin_memory, **options)
    return _logspace_out(start, end, steps, base, out=out, dtype=dtype, **options)


def _logspace(
    start: Any,
    end: Any,
    steps: int,
    base: float = 10.0,
    *,
    dtype: DType | None = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool | None = None,
) -> Tensor:
    """``steps`` values ``base ** e``, ``e`` evenly spaced from ``start`` to ``end``
    inclusive (complex when either end is a complex number), computed as PyTorch's CPU
    kernel: the exponents as ``tw.linspace``'s in ``dtype`` (in float64 from the ends
    converted to ``dtype`` for integer dtypes, whose powers are then truncated); one step
    gives ``base ** start`` computed in double precision."""
    base = cr._as_number(base)
    if isinstance(base, complex) or not isinstance(base, Number):
        raise TypeError(
            f"logspace(): argument 'base' must be a real number, not {type(base).__name__}"
        )
    start, end = (cr._range_end("logspace", v) for v in (start, end))
    if cr._integer_tensor(steps) and steps.ndim == 0:
        steps = int(steps.item())
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"logspace(): argument 'steps' must be int, not {type(steps).__name__}")
    if steps < 0:
        raise RuntimeError(f"logspace: number of steps must be non-negative, got {steps}")
    ends_complex = isinstance(start, complex) or isinstance(end, complex)
    inferred = cr.default_complex_dtype() if ends_complex else cr.get_default_dtype()
    dtype = dtype or inferred
    if ends_complex and not dtype.is_complex:
        raise RuntimeError(
            f"logspace: inferred dtype {inferred.name} can't be safely cast to passed dtype "
            f"{dtype.name}; pass a complex dtype or real ends"
        )
    if steps < 2:  # PyTorch fills in the one double (or complex double) power
        one = [_power(complex(base) if dtype.is_complex else float(base), start)] * steps
        return cr.tensor(one, dtype=dtype, device=device, requires_grad=requires_grad)
    if dtype is dtypes.bool_:
        raise NotImplementedError(
            "logspace: not implemented for bool; make a float range and compare it"
        )
    if dtype.is_complex:
        exponents = cr._spaced(start, end, steps, dtype)
        host = _power(exponents.dtype.type(base), exponents)
        return cr.tensor(host, dtype=dtype, device=device, requires_grad=requires_grad)
    # PyTorch's real kernel: the ends converted to ``dtype``, then the step, the exponents
    # (the first half up from start, the second down from end) and C's pow all in double,
    # rounded to ``dtype`` once at the end
    if dtype.kind in "iu":
        first, last = (float(overflow.fill_value(v, dtype, "logspace")) for v in (start, end))
    else:
        first, last = (float(_in_dtype(float(v), dtype)) for v in (start, end))
    step = (last - first) / (steps - 1)
    index = np.arange(steps)
    with np.errstate(all="ignore"):  # infinite ends give NaN, as in PyTorch
        exponents = np.where(
            index < steps // 2, first + step * index, last - step * (steps - 1 - index)
        )
    powers = _c_pow(float(base), exponents)
    with np.errstate(all="ignore"):  # cast as C casts: truncated, whatever the machine
        # makes of an out-of-range value; half precision through float, as c10's Half
        if dtype.kind in "iu":
            host = powers.astype(dtype.numpy_name)
        elif dtype is dtypes.bfloat16:
            host = cr._round_bfloat16(powers.astype(np.float32))
        elif dtype is dtypes.float16:
            host = powers.astype(np.float32).astype(np.float16)
        else:
            host = powers.astype(dtype.numpy_name)
    return cr.tensor(host, dtype=dtype, device=device, requires_grad=requires_grad)


_logspace_out = cr.with_out("logspace")(_logspace)


def _in_dtype(value: float, dtype: DType) -> Any:
    """``value`` rounded to the floating ``dtype`` (through float32, as c10 converts)."""
    if dtype is dtypes.float64:
        return value
    with np.errstate(all="ignore"):
        single = np.float32(value)
    if dtype is dtypes.bfloat16:
        return cr._round_bfloat16(single)
    return single.astype(dtype.numpy_name)


def _c_pow(base: float, exponents: np.ndarray) -> np.ndarray:
    """``base ** e`` for each double ``e`` as the C library's ``pow`` (PyTorch's) gives it:
    NumPy's own ``power`` differs in the last bit in about one case in twenty; NaN where
    undefined."""
    with np.errstate(all="ignore"):
        powers = np.power(base, exponents)
    finite = np.isfinite(powers)
    exact = []
    for e in exponents[finite].tolist():
        try:
            exact.append(math.pow(base, e))
        except (OverflowError, ValueError):  # at the edge of the range: NumPy's answer
            exact.append(np.power(base, e))
    powers[finite] = exact
    return powers


def _power(base: Any, exponent: Any) -> Any:
    """``base ** exponent`` as C's ``pow`` (``cpow``, ``exp(exponent * log(base))``, for a
    complex base: NaN for 0 ** 0), NaN where it is undefined, with no warning."""
    with np.errstate(all="ignore"):
        if isinstance(base, (complex, np.complexfloating)):
            return np.exp(exponent * np.log(base))
        return np.power(base, exponent)


def frombuffer(
    buffer: Any,
    *,
    dtype: DType,
    count: int = -1,
    offset: int = 0,
    requires_grad: bool = False,
) -> Tensor:
    """A 1-d tensor over ``count`` elements of ``dtype`` in an object with Python's buffer
    protocol (bytes, bytearray, array.array, mmap...), from byte ``offset``; all that follow
    where ``count`` is negative. It shares the buffer's memory as ``from_numpy`` shares an
    array's (a read-only buffer gives the same UserWarning)."""
    dtype = cr.dtype_argument("frombuffer", dtype)
    try:
        length = memoryview(buffer).nbytes
    except TypeError:
        raise ValueError(
            f"frombuffer: a {type(buffer).__name__} does not implement Python's buffer protocol;"
            " pass bytes, a bytearray, an array.array or a NumPy array"
        ) from None
    if length == 0 or count == 0:
        raise ValueError(
            f"frombuffer: both buffer length ({length}) and count ({count}) must not be 0"
        )
    if not 0 <= offset < length:
        raise ValueError(
            f"frombuffer: offset ({offset} bytes) must be non-negative and no greater than "
            f"buffer length ({length} bytes) minus 1"
        )
    if count < 0:
        if (length - offset) % dtype.itemsize:
            raise ValueError(
                f"frombuffer: buffer length ({length} bytes) after offset ({offset} bytes) must "
                f"be a multiple of element size ({dtype.itemsize}); pass count="
            )
        count = (length - offset) // dtype.itemsize
    elif offset + count * dtype.itemsize > length:
        raise ValueError(
            f"frombuffer: requested buffer length ({count} * {dtype.itemsize} bytes) after "
            f"offset ({offset} bytes) must not be greater than actual buffer length ({length} "
            "bytes)"
        )
    if dtype is dtypes.bfloat16:  # NumPy has no bfloat16 to read the bytes as
        raise TypeError("frombuffer: bfloat16 is not supported; read float16 or float32")
    array = np.frombuffer(buffer, np.dtype(dtype.numpy_name), count, offset)
    if dtype is dtypes.bool_:  # any nonzero byte is True, as PyTorch reads it
        array = array.view(np.uint8) != 0
    out = cr.from_numpy(array)
    return out.requires_grad_() if requires_grad else out
