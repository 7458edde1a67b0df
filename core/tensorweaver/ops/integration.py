"""Numerical integration by the trapezoidal rule along one dimension: ``tw.trapezoid``
(``trapz``, its older spelling) and ``tw.cumulative_trapezoid``; differentiable.

Sample spacing is ``dx`` (a number, default 1) or given by the sample points ``x``: one per
sample (1-d) or a tensor broadcasting with ``y``. Integers give a float result, as in
PyTorch (the rule halves).
"""

from __future__ import annotations

from numbers import Number
from typing import Any

from tensorweaver.ops import creation as cr
from tensorweaver.ops import movement as mv
from tensorweaver.ops.reduce import numpy_names
from tensorweaver.ops.spellings import select
from tensorweaver.ops.structure import diff
from tensorweaver.tensor import Tensor, _axis


def _axis_of(y: Tensor, dim: int, fn: str) -> int:
    if y.ndim == 0:
        raise IndexError(
            f"{fn}: Dimension specified as {dim} but tensor has no dimensions (y is 0-d)"
        )
    return _axis(dim, y.ndim, fn)


def _spacing(y: Tensor, x: Any, dx: Any, d: int, fn: str) -> Any:
    """The step between samples along ``d``: a number, or a tensor broadcasting with the
    pairs of neighbours."""
    if x is not None and dx is not None:
        raise TypeError(f"{fn}(): pass the sample points x or the spacing dx, not both")
    if x is None:
        return 1 if dx is None else dx
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): x must be a tensor of sample points, got {type(x).__name__}")
    if x.ndim == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(
                f"{fn}: There must be one `x` value for each sample point (x has "
                f"{x.shape[0]}, y has {y.shape[d]} along dim {d})"
            )
        steps = diff(x)
        return mv.reshape(steps, tuple(steps.shape[0] if i == d else 1 for i in range(y.ndim)))
    return diff(x, dim=d - y.ndim if x.ndim < y.ndim else d)


def _neighbours(y: Tensor, d: int) -> Tensor:
    n = y.shape[d]
    return mv.narrow(y, d, 1, n - 1) + mv.narrow(y, d, 0, n - 1)


def trapezoid(
    y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: int = -1, **aliases: Any
) -> Tensor:
    """The integral of the samples ``y`` along ``dim``."""
    if aliases:  # (NumPy's axis=, as PyTorch's parser takes it)
        dim = numpy_names("trapezoid", aliases, dim, None, (-1,))[0]
    d = _axis_of(y, dim, "trapezoid")
    step = _spacing(y, x, dx, d, "trapezoid")
    if y.shape[d] == 0:
        shape = y.shape[:d] + y.shape[d + 1 :]
        return cr.zeros(shape, dtype=(y * 0.5).dtype, device=y.device)
    if isinstance(step, Tensor):
        return (step * _neighbours(y, d)).sum(d) / 2.0
    ends = select(y, d, 0) + select(y, d, -1)
    return (y.sum(d) - ends * 0.5) * step


def trapz(
    y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: int = -1, **aliases: Any
) -> Tensor:
    if aliases:
        dim = numpy_names("trapz", aliases, dim, None, (-1,))[0]
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(
    y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: int = -1, **aliases: Any
) -> Tensor:
    """The running integral of ``y`` along ``dim``: one value per pair of neighbours."""
    if aliases:
        dim = numpy_names("cumulative_trapezoid", aliases, dim, None, (-1,))[0]
    d = _axis_of(y, dim, "cumulative_trapezoid")
    step = _spacing(y, x, dx, d, "cumulative_trapezoid")
    if y.shape[d] == 0:
        return (y * 0.5).clone()
    if isinstance(step, Tensor):
        return ((step * _neighbours(y, d)) / 2.0).cumsum(d)
    return (step / 2.0 * _neighbours(y, d)).cumsum(d)
