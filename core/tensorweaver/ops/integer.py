"""Integer-only elementwise ops: the bit shifts, gcd and lcm, as compositions of IR primitives.

The IR has no shift primitive: on two's-complement integers ``a << s`` is ``a * 2**s`` and
``a >> s`` is ``floor(a / 2**s)``, both exact with wrap-around (2**(bits - 1) itself wraps to
the most negative value, which multiplies correctly). Shifts by a negative count or by the
width or more give what PyTorch's CPU kernels give: 0, or -1 for a negative value shifted
right. gcd is Euclid's algorithm, all elements in step until every remainder is 0.
"""

from __future__ import annotations

from typing import Any

from tensorweaver.contract import dtypes
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops.apply import written_out
from tensorweaver.tensor import Tensor

Operand = Any  # a Tensor or a Python scalar


def _integer_operands(op: str, input: Operand, other: Operand) -> tuple:
    """(backend, dtype, a, b): natives of one integer dtype, broadcast to one shape."""

    def check(dtype: Any) -> Any:
        if dtype.kind not in "iu":
            raise NotImplementedError(
                f'"{op}" not implemented for {dtype.name} tensors: it takes integer tensors; '
                "convert with .long()"
            )
        return dtype

    _, _, backend, dtype, a, b = ew._operands(op, input, other, check)
    return backend, dtype, a, b


def _shift(op: str, input: Operand, other: Operand, left: bool) -> Tensor:
    backend, dtype, a, s = _integer_operands(op, input, other)
    bits = 8 * dtype.itemsize

    def full(value: int) -> Any:
        return backend.full((), value, dtype)

    in_range = backend.logical_and(backend.ge(s, full(0)), backend.lt(s, full(bits)))
    count = backend.where(in_range, s, full(0))
    power = backend.pow(full(2), count)
    if left:
        native = backend.where(in_range, backend.mul(a, power), full(0))
    else:
        # The top bit's power wraps negative in signed types: that shift is a sign fill.
        signed = dtype.kind == "i"
        top = bits - 1 if signed else bits
        plain = backend.logical_and(in_range, backend.lt(count, full(top)))
        shifted = backend.floordiv(a, backend.where(plain, power, full(1)))
        fill = backend.where(backend.lt(a, full(0)), full(-1), full(0)) if signed else full(0)
        native = backend.where(plain, shifted, fill)
    return Tensor(native, backend, dtype)


def bitwise_left_shift(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
    """input << other (integers; wraps around)."""
    if out is not None:
        _number_first_has_no_out("bitwise_left_shift", input, other)
        return written_out(
            "bitwise_left_shift", bitwise_left_shift(input, other), out, inputs=(input, other)
        )
    return _shift("bitwise_left_shift", input, other, left=True)


def bitwise_right_shift(input: Operand, other: Operand, *, out: Tensor | None = None) -> Tensor:
    """input >> other (integers; arithmetic shift, the sign fills in)."""
    if out is not None:
        _number_first_has_no_out("bitwise_right_shift", input, other)
        return written_out(
            "bitwise_right_shift", bitwise_right_shift(input, other), out, inputs=(input, other)
        )
    return _shift("bitwise_right_shift", input, other, left=False)


def _number_first_has_no_out(op: str, input: Any, other: Any) -> None:
    """PyTorch's (Number self, Tensor other) overload of the shifts takes no out=."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"{op}() received an invalid combination of arguments - got "
            f"({type(input).__name__}, {type(other).__name__}, out=Tensor): with a number "
            "first it takes no out=; compute it without out= and copy_() the result"
        )


def _need_tensors(op: str, input: Any, other: Any) -> None:
    for position, (name, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(
                f"{op}(): argument '{name}' (position {position}) must be Tensor, "
                f"not {type(value).__name__}"
            )


def _gcd_native(backend: Any, dtype: Any, a: Any, b: Any) -> Any:
    """PyTorch's loop: a, b = |a|, |b|; while a != 0: a, b = b % a, a (C's %, the sign of
    the dividend). |INT_MIN| wraps to itself there, so gcd(1, -128) is 1 in int8."""
    zero, one = backend.full((), 0, dtype), backend.full((), 1, dtype)
    a, b = backend.abs(a), backend.abs(b)
    while True:
        busy = backend.ne(a, zero)
        if not _any(backend, busy):
            return b
        divisor = backend.where(busy, a, one)
        rest = backend.remainder(b, divisor)  # the divisor's sign: C's has the dividend's
        flip = backend.logical_and(
            backend.ne(rest, zero), backend.ne(backend.lt(rest, zero), backend.lt(b, zero))
        )
        rest = backend.where(flip, backend.sub(rest, divisor), rest)
        a, b = backend.where(busy, rest, zero), backend.where(busy, a, b)


def _any(backend: Any, mask: Any) -> bool:
    shape = tuple(mask.shape)
    if not shape:
        return bool(backend.to_host(mask))
    n = 1
    for size in shape:
        n *= size
    if not n:
        return False
    flat = backend.reshape(mask, (n,))
    return bool(backend.to_host(backend.any(flat, (0,), False)))


def gcd(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The greatest common divisor, non-negative; gcd(0, 0) = 0."""
    if out is not None:
        return written_out("gcd", gcd(input, other), out, inputs=(input, other))
    _need_tensors("gcd", input, other)
    backend, dtype, a, b = _integer_operands("gcd", input, other)
    return Tensor(_gcd_native(backend, dtype, a, b), backend, dtype)


def lcm(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The least common multiple, |a / gcd * b| (wrapped as PyTorch's); 0 when either is 0."""
    if out is not None:
        return written_out("lcm", lcm(input, other), out, inputs=(input, other))
    _need_tensors("lcm", input, other)
    backend, dtype, a, b = _integer_operands("lcm", input, other)
    g = _gcd_native(backend, dtype, a, b)
    zero = backend.full((), 0, dtype)
    nonzero = backend.ne(g, zero)
    # |a / g * b| as PyTorch's C++ computes it: in int for the types narrower than int (then
    # cast back, so lcm(32767, 2) is -2 in int16), else in the dtype (g divides a: the floor
    # quotient is exact).
    work = dtypes.int32 if dtype.itemsize < 4 else dtype
    a, b, g = (backend.cast(v, work) if work is not dtype else v for v in (a, b, g))
    quotient = backend.floordiv(a, backend.where(nonzero, g, backend.full((), 1, work)))
    product = backend.abs(backend.mul(quotient, b))
    if work is not dtype:
        product = backend.cast(product, dtype)
    native = backend.where(nonzero, product, zero)
    return Tensor(native, backend, dtype)


METHODS: dict[str, Any] = {
    "bitwise_left_shift": bitwise_left_shift,
    "bitwise_right_shift": bitwise_right_shift,
    "gcd": gcd,
    "lcm": lcm,
    "__lshift__": bitwise_left_shift,
    "__rshift__": bitwise_right_shift,
    "__rlshift__": lambda self, other: bitwise_left_shift(other, self),
    "__rrshift__": lambda self, other: bitwise_right_shift(other, self),
}
