"""Element-wise functions: the standard's names over the core's functions.

Binary functions first promote their arrays by the standard's rules (a 0-d array counts as
much as any other; PyTorch's rules treat it as a scalar), then call the core. Each name is
present only where the core has its function (:mod:`.provided`).
"""

from __future__ import annotations

from typing import Callable, Optional, Union

import tensorweaver as tw
from tensorweaver.array_api.dtypes import result_type
from tensorweaver.array_api.provided import Provided
from tensorweaver.contract.dtypes import DType
from tensorweaver.tensor import Tensor

Operand = Union[Tensor, int, float, complex, bool]

#: The standard's unary functions and the core function each one is.
UNARY = {
    **{
        n: n
        for n in (
            "abs acos acosh asin asinh atan atanh ceil cos cosh exp expm1 floor isfinite isinf "
            "isnan log log1p log2 log10 logical_not reciprocal round signbit sin sinh "
            "sqrt square tan tanh trunc"
        ).split()
    },
    "bitwise_invert": "bitwise_not",
    "negative": "neg",
}
#: The standard's binary functions and the core function each one calls after promotion.
BINARY = {
    **{
        n: n
        for n in (
            "add atan2 bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift "
            "bitwise_xor copysign hypot logaddexp logical_and logical_or "
            "logical_xor maximum minimum nextafter pow remainder"
        ).split()
    },
    "divide": "div",
    "equal": "eq",
    "greater": "gt",
    "greater_equal": "ge",
    "less": "lt",
    "less_equal": "le",
    "multiply": "mul",
    "not_equal": "ne",
    "subtract": "sub",
}

CORE = Provided("tensorweaver")
CORE.rename(**UNARY)


def promoted(x1: Operand, x2: Operand) -> tuple[Operand, Operand]:
    """``x1`` and ``x2`` with the standard's common dtype where both are arrays; a Python
    scalar beside an array becomes a 0-d array of that dtype (the core's ``atan2``,
    ``hypot``, ... take tensors only, as PyTorch's do)."""
    if isinstance(x1, Tensor) and isinstance(x2, Tensor):
        if x1.dtype is x2.dtype:
            return x1, x2
        dtype = result_type(x1, x2)
        return x1.to(dtype), x2.to(dtype)
    if isinstance(x1, Tensor) or isinstance(x2, Tensor):
        array = x1 if isinstance(x1, Tensor) else x2
        dtype = result_type(x1, x2)
        x1, x2 = (_as_array(v, dtype, array) for v in (x1, x2))
    return x1, x2


def _as_array(value: Operand, dtype: DType, like: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        return value if value.dtype is dtype else value.to(dtype)
    return tw.tensor(value, dtype=dtype, device=like.device)


def _binary(name: str, core_name: str) -> Callable:
    def function(x1: Operand, x2: Operand, /) -> Tensor:
        a, b = promoted(x1, x2)
        return getattr(tw, core_name)(a, b)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"The standard's ``{name}``: ``tw.{core_name}`` after promotion."
    return function


for _name, _core_name in BINARY.items():
    CORE.add(_name, _core_name, _binary(_name, _core_name))


def clip(x: Tensor, /, min: Optional[Operand] = None, max: Optional[Operand] = None) -> Tensor:  # noqa: A002
    """``x`` limited to ``[min, max]``, in ``x``'s dtype."""
    if min is None and max is None:
        return x.clone()
    return tw.clamp(x, min, max).to(x.dtype)


def positive(x: Tensor, /) -> Tensor:
    """``+x``."""
    return x.clone()


def sign(x: Tensor, /) -> Tensor:
    """-1, 0 or 1 by the sign of each element; NaN stays NaN (PyTorch's ``sign`` gives 0).
    A complex element's sign is ``x / |x|`` (0 at 0), PyTorch's ``sgn``."""
    if x.dtype.is_complex:
        return tw.sgn(x)
    out = tw.sign(x)
    return tw.where(tw.isnan(x), x, out) if x.dtype.is_floating_point else out


def floor_divide(x1: Operand, x2: Operand, /) -> Tensor:
    """``floor(x1 / x2)``; for floats the standard's special cases hold (``inf // 2`` is
    inf, ``1 // -inf`` is -0), where PyTorch's ``floor_divide`` gives NaN and -1."""
    a, b = promoted(x1, x2)
    if any(isinstance(v, Tensor) and v.dtype.is_floating_point for v in (a, b)):
        return tw.floor(tw.div(a, b))
    return tw.floor_divide(a, b)


def conj(x: Tensor, /) -> Tensor:
    """The complex conjugate (a copy of a real ``x``)."""
    return tw.conj_physical(x) if x.dtype.is_complex else x.clone()


def real(x: Tensor, /) -> Tensor:
    """The real part (a copy of a real ``x``)."""
    return tw.real(x) if x.dtype.is_complex else x.clone()


def imag(x: Tensor, /) -> Tensor:
    """The imaginary part (zeros for a real ``x``)."""
    return tw.imag(x) if x.dtype.is_complex else tw.zeros_like(x)
