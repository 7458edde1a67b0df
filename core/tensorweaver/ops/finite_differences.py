"""``tw.gradient``: the derivative of sampled values along each requested dimension by
finite differences (central inside, one-sided of first or second order at the edges, as
NumPy's ``gradient``), with uniform spacing or sample coordinates; differentiable."""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Number
from typing import Any

from tensorweaver.ops import creation as cr
from tensorweaver.ops import movement as mv
from tensorweaver.tensor import Tensor, _axis


def _along(f: Tensor, d: int, start: int, stop: int | None) -> Tensor:
    """``f[..., start:stop]`` along dimension ``d`` (Python's slice rules)."""
    run = range(f.shape[d])[start:stop]
    return mv.narrow(f, d, run.start, len(run))


def _at(f: Tensor, d: int, i: int) -> Tensor:
    """Entry ``i`` (negative from the end) along ``d``, keeping the dimension."""
    return _along(f, d, i, i + 1 if i != -1 else None)


def _uniform(f: Tensor, d: int, h: float, edge_order: int) -> Tensor:
    def at(i: int) -> Tensor:
        return _at(f, d, i)

    inside = (_along(f, d, 2, None) - _along(f, d, 0, -2)) / (2 * h)
    if edge_order == 1:
        first, last = (at(1) - at(0)) / h, (at(-1) - at(-2)) / h
    else:
        first = (at(0) * -3 + at(1) * 4 - at(2)) / (2 * h)
        last = (at(-1) * 3 - at(-2) * 4 + at(-3)) / (2 * h)
    return mv.cat([first, inside, last], dim=d)


def _coordinates(f: Tensor, d: int, x: Tensor, edge_order: int) -> Tensor:
    shape = tuple(-1 if i == d else 1 for i in range(f.ndim))
    x = mv.reshape(x.to(f.dtype), shape)

    def at(t: Tensor, i: int) -> Tensor:
        return _at(t, d, i)

    left = _along(x, d, 1, -1) - _along(x, d, 0, -2)
    right = _along(x, d, 2, None) - _along(x, d, 1, -1)
    inside = (
        left * left * _along(f, d, 2, None)
        - right * right * _along(f, d, 0, -2)
        + (right * right - left * left) * _along(f, d, 1, -1)
    ) / (left * right * (left + right))
    if edge_order == 1:
        first = (at(f, 1) - at(f, 0)) / (at(x, 1) - at(x, 0))
        last = (at(f, -1) - at(f, -2)) / (at(x, -1) - at(x, -2))
    else:
        h1, h2 = at(x, 1) - at(x, 0), at(x, 2) - at(x, 1)
        first = (
            at(f, 0) * (-(2 * h1 + h2) / (h1 * (h1 + h2)))
            + at(f, 1) * ((h1 + h2) / (h1 * h2))
            - at(f, 2) * (h1 / (h2 * (h1 + h2)))
        )
        g1, g2 = at(x, -2) - at(x, -3), at(x, -1) - at(x, -2)
        last = (
            at(f, -3) * (g2 / (g1 * (g1 + g2)))
            - at(f, -2) * ((g1 + g2) / (g1 * g2))
            + at(f, -1) * ((2 * g2 + g1) / (g2 * (g1 + g2)))
        )
    return mv.cat([first, inside, last], dim=d)


def gradient(
    input: Tensor,
    *,
    spacing: Any = None,
    dim: int | Sequence[int] | None = None,
    edge_order: int = 1,
) -> tuple[Tensor, ...]:
    """One tensor per dimension in ``dim`` (default: all): the derivative of ``input``
    along it. ``spacing``: one number for all, one number per dimension, or one 1-d tensor
    of sample coordinates per dimension."""
    fn = "torch.gradient"
    if edge_order not in (1, 2):
        raise RuntimeError(f"{fn} only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, int) else dim
    dims = [_axis(d, input.ndim, "gradient") for d in dims]
    for d in dims:
        if dims.count(d) > 1:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    if spacing is None:  # (as PyTorch: the default step 1)
        spacing = 1
    if isinstance(spacing, Tensor) and spacing.ndim == 0:
        spacing = spacing.item()
    if isinstance(spacing, Number):
        steps: list[Any] = [spacing] * len(dims)
    else:
        steps = list(spacing)
        if len(steps) != len(dims):
            given = "dim argument was not given" if dim is None else "dim was given"
            raise RuntimeError(
                f"{fn} expected spacing to be unspecified, a scalar, or a list of length "
                f"equal to 'self.dim() = {len(dims)}', since {given}, but got a list of length "
                f"{len(steps)}"
            )
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError(
                f"{fn} expected each dimension size to be at least edge_order+1 (dimension {d} "
                f"of shape {tuple(input.shape)} has {input.shape[d]}, edge_order={edge_order})"
            )
    f = (
        input
        if input.dtype.is_floating_point or input.dtype.is_complex
        else input.to(cr.get_default_dtype())
    )
    out = []
    for d, step in zip(dims, steps):
        if isinstance(step, Tensor) and step.ndim == 1:
            if step.shape[0] != input.shape[d]:
                raise RuntimeError(
                    f"{fn} expected the coordinates along dimension {d} to have "
                    f"{input.shape[d]} entries, got {step.shape[0]}"
                )
            out.append(_coordinates(f, d, step, edge_order))
        else:
            h = step.item() if isinstance(step, Tensor) else step
            out.append(_uniform(f, d, h, edge_order))
    return tuple(out)
