"""The parts of floating-point numbers: ``tw.frexp`` (mantissa in [0.5, 1) and exponent) and
``tw.nextafter`` (the next number of the dtype towards another), as tensor ops.

Both work in float64, which holds every value of the narrower float dtypes exactly, and
build powers of two from ``exp2`` of whole numbers, which is exact. ``frexp``'s mantissa is
differentiable (its gradient is the output's scaled by 2**-exponent, as PyTorch's);
``nextafter``'s gradient is PyTorch's: the output's for ``input``, zeros for ``other``.
"""

from __future__ import annotations

from typing import Any

from tensorweaver import return_types
from tensorweaver.autograd.function import Function
from tensorweaver.autograd.node import saves_integer_output
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.dtype_info import finfo
from tensorweaver.ops import coordinates as co
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops.apply import labelled, written_out
from tensorweaver.ops.out_arguments import _refuse_overlapping_operands
from tensorweaver.ops.special import exp2
from tensorweaver.promotion import result_type
from tensorweaver.tensor import Tensor

# dtype -> (significand bits, frexp exponent of its smallest normal number)
_FORMAT: dict[DType, tuple[int, int]] = {
    dtypes.float64: (53, -1021),
    dtypes.float32: (24, -125),
    dtypes.float16: (11, -13),
    dtypes.bfloat16: (8, -125),
}


def _pow2(k: Tensor) -> Tensor:
    """2**k for whole-number float64 ``k`` in float64's exponent range."""
    return exp2(k)


def _exponent(x: Tensor) -> tuple[Tensor, Tensor]:
    """``(e, regular)`` for float64 ``x`` (no graph): ``|x| = m * 2**e`` with ``m`` in
    [0.5, 1) where ``x`` is finite and nonzero (``regular``), else ``e`` is 0."""
    a = ew.abs(x)
    regular = ew.isfinite(x) & (a > 0)
    e = ew.floor(ew.log2(co.where(regular, a, 1.0))) + 1
    # log2 rounds: put the exponent right where the mantissa left [0.5, 1)
    m = ew.mul(ew.mul(a, _pow2(-ew.floor(e / 2))), _pow2(ew.floor(e / 2) - e))
    e = e + co.where(m >= 1, 1.0, 0.0) - co.where(m < 0.5, 1.0, 0.0)
    return co.where(regular, e, 0.0), regular


def frexp(input: Tensor) -> Any:
    """``(mantissa, exponent)`` with ``input = mantissa * 2**exponent``, ``|mantissa|`` in
    [0.5, 1) (0, inf and NaN keep their value with exponent 0); exponent int32."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(
            f"torch.frexp() only supports floating-point dtypes, got {input.dtype.name}"
        )
    x = input.to(dtypes.float64)
    e, regular = _exponent(x.detach())
    half = ew.floor(e / 2)
    scaled = ew.mul(ew.mul(x, _pow2(-half)), _pow2(half - e))  # two steps: 2**1074 overflows
    mantissa = labelled(co.where(regular, scaled, x).to(input.dtype), "FrexpBackward0", input)
    exponent = e.to(dtypes.int32)
    saves_integer_output(mantissa, exponent)  # (PyTorch's node saves the exponent)
    return return_types.frexp(mantissa, exponent)


def nextafter(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The next number after ``input`` towards ``other`` in their promoted float dtype
    (``other`` itself where they are equal; NaN where either is)."""
    if out is not None:
        return written_out("nextafter", nextafter(input, other), out, inputs=(input, other))
    ew.require_tensors("nextafter", input, other)  # (a number on either side: TypeError)
    dtype = result_type(input, other)
    if dtype not in _FORMAT:
        raise NotImplementedError(
            f'"nextafter" not implemented for {dtype.name}: it takes float tensors'
        )
    digits, lowest = _FORMAT[dtype]
    # Each operand in the result dtype first, as PyTorch reads it: an int32 -2**31 is -inf
    # in float16, and the next float16 after it is -65504.
    x, y = (t.detach().to(dtype).to(dtypes.float64) for t in (input, other))
    e, _ = _exponent(x)
    up = y > x
    away = up == (x > 0)
    step_away = _pow2(ew.clamp(e, min=lowest) - digits)
    halved = (ew.abs(x) == _pow2(e - 1)) & (e > lowest)  # a power of two: finer below
    step = co.where(away | ~halved, step_away, ew.mul(step_away, 0.5))
    out = x + co.where(up, step, -step)
    # (a where() of two numbers is of the default dtype: these scale a float64 tensor)
    tiny = ew.mul(co.where(up, 1.0, -1.0).to(dtypes.float64), 2.0 ** (lowest - digits))
    out = co.where(x == 0, tiny, out)
    largest = ew.mul(co.where(x > 0, 1.0, -1.0).to(dtypes.float64), float(finfo(dtype).max))
    out = co.where(ew.isinf(x) & (x != y), largest, out)
    out = co.where(x == y, y, out)
    out = co.where(ew.isnan(x) | ew.isnan(y), float("nan"), out).to(dtype)
    if not (input.requires_grad or other.requires_grad) or ew.inference_alone(input, other):
        return out  # (PyTorch's autograd skips an op of inference tensors alone)
    return _NextAfter.apply(out, input, other)


class _NextAfter(Function):
    """nextafter's values with PyTorch's derivative: 1 for ``input``, 0 for ``other``."""

    @staticmethod
    def forward(ctx: Any, out: Tensor, input: Tensor, other: Tensor) -> Tensor:
        ctx.input, ctx.other = input.detach(), other.detach()
        return out

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        g = ew.cast(grad.sum_to_size(ctx.input.shape), ctx.input.dtype)
        return None, g, cr.zeros_like(ctx.other)


def nextafter_(self: Tensor, other: Tensor) -> Tensor:
    _refuse_overlapping_operands(self, "nextafter_", (other,), {})
    return self._assign(nextafter(self._inplace_source(), other), "nextafter_")
