"""``fractional_max_pool2d/3d``: max pooling over pseudo-randomly spaced windows.

Per (sample, channel) and axis a number ``u`` in [0, 1) (``_random_samples``, else drawn
with the backend's generator) places the windows as PyTorch does: with
``alpha = (size - k) / (out - 1)``, window ``i < out - 1`` starts at
``trunc((i + u) * alpha) - trunc(u * alpha)`` and the last at ``size - k``, computed in the
input's dtype. Samples are ordered (T,) H, W... as PyTorch's: for 2-D, sample 0 is W's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Optional, Union

import tensorweaver as tw
from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.nn.functional.conv import _batched, _ntuple
from tensorweaver.nn.functional.pooling import Size, window_table
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.index import gather_unchecked
from tensorweaver.tensor import Tensor

Ratio = Union[float, Sequence[float]]


def _starts(u: Tensor, size: int, out: int, k: int) -> Tensor:
    """``(N, C, out)`` window starts along one axis from the ``(N, C)`` samples ``u``."""
    last = tw.full((*u.shape, 1), size - k, dtype=tw.int64, device=u.device)
    if out == 1:
        return last
    alpha = tw.tensor(size - k, dtype=u.dtype, device=u.device) / (out - 1)
    i = tw.arange(out - 1, device=u.device).to(u.dtype)
    u = u.unsqueeze(-1)
    starts = ((i + u) * alpha).trunc().long() - (u * alpha).trunc().long()
    return tw.cat([starts, last], -1)


def _fractional_max_pool(
    input: Tensor,
    nd: int,
    kernel_size: Size,
    output_size: Optional[Size],
    output_ratio: Optional[Ratio],
    return_indices: bool,
    random_samples: Optional[Tensor],
    fn: str,
) -> Tensor | tuple[Tensor, Tensor]:
    if input.dim() < nd + 1:  # PyTorch's class: it indexes a dimension the input lacks
        raise IndexError(
            f"{fn}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input, got shape "
            f"{tuple(input.shape)}"
        )
    x, batched = _batched(input, nd + 2, fn)
    n, c, *sizes = x.shape
    kernel = _ntuple(kernel_size, nd, fn, "kernel_size")
    if output_size is None:
        if output_ratio is None:
            raise ValueError(f"{fn}: requires specifying either an output_size or an output_ratio")
        ratios = (
            (float(output_ratio),) * nd
            if isinstance(output_ratio, (int, float))
            else tuple(float(r) for r in output_ratio)
        )
        if len(ratios) != nd or not all(0 < r < 1 for r in ratios):
            # PyTorch's classes: a wrong count is a ValueError, a ratio giving a size that
            # does not fit a RuntimeError.
            error = ValueError if len(ratios) != nd else RuntimeError
            raise error(f"{fn}: output_ratio must be {nd} numbers in (0, 1), got {output_ratio!r}")
        outs = tuple(int(s * r) for s, r in zip(sizes, ratios))
    else:
        outs = _ntuple(output_size, nd, fn, "output_size")
    # PyTorch's 3-D kernel wants one more element than its 2-D one.
    room = 0 if nd == 2 else 1
    for size, o, k in zip(sizes, outs, kernel):
        if k < 1 or o < 1 or o + k - 1 + room > size:
            relation = "<=" if nd == 2 else "<"
            raise RuntimeError(
                f"{fn}: kernel_size {kernel} and output size {outs} do not fit the input of "
                f"spatial size {tuple(sizes)}: each needs output + kernel - 1 {relation} input "
                "size"
            )
    if random_samples is None:
        random_samples = tw.rand(n, c, nd, dtype=x.dtype, device=x.device)
    elif (
        random_samples.dim() != 3
        or tuple(random_samples.shape[1:]) != (c, nd)
        or random_samples.shape[0] < n
    ):
        raise RuntimeError(
            f"{fn}: _random_samples must have shape (N, {c}, {nd}) with N at least the batch "
            f"size {n} of the input of shape {tuple(input.shape)}, got "
            f"{tuple(random_samples.shape)}"
        )
    else:
        # PyTorch takes the first ``n`` rows of a longer table.
        random_samples = random_samples[:n]
    # PyTorch's sample order: (W, H) for 2-D, (T, H, W) for 3-D.
    axes = (1, 0) if nd == 2 else tuple(range(nd))
    samples = random_samples.to(x.dtype).reshape(n * c, nd)
    starts = [
        _starts(samples[:, axes[axis]], size, o, k).unsqueeze(-1) + tw.arange(k, device=x.device)
        for axis, (size, o, k) in enumerate(zip(sizes, outs, kernel))
    ]
    table = window_table(starts, sizes)
    b, cells, span = table.shape
    stacked = gather_unchecked(x.reshape(b, -1), 1, table.reshape(b, -1)).reshape(b, cells, span)
    first = stacked.argmax(-1, keepdim=True)
    out = gather_unchecked(stacked, 2, first).reshape(n, c, *outs)
    indices = gather_unchecked(table, 2, first).reshape(n, c, *outs)
    if not batched:
        out, indices = out.squeeze(0), indices.squeeze(0)
    out = labelled(out, f"FractionalMaxPool{nd}DBackward0", input)
    return (out, indices) if return_indices else out


_LAYOUTS = {
    2: "``(N, C, H, W)`` (or ``(C, H, W)``)",
    3: "``(N, C, D, H, W)`` (or ``(C, D, H, W)``)",
}


def _fractional_max_pool_of_rank(nd: int, always_indices: bool) -> Callable[..., Any]:
    """The public ``fractional_max_pool{nd}d``, or with ``always_indices`` its
    ``_with_indices`` twin that returns ``(output, indices)`` whatever ``return_indices``
    says."""
    name = f"fractional_max_pool{nd}d"

    def fractional_max_pool(
        input: Tensor,
        kernel_size: Size,
        output_size: Optional[Size] = None,
        output_ratio: Optional[Ratio] = None,
        return_indices: bool = False,
        _random_samples: Optional[Tensor] = None,
    ) -> Tensor | tuple[Tensor, Tensor]:
        if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
            (input,) = float32_operands(input)
        indices = True if always_indices else return_indices
        args = (kernel_size, output_size, output_ratio, indices, _random_samples)
        return _fractional_max_pool(input, nd, *args, name)

    if always_indices:
        fractional_max_pool.__name__ = f"{name}_with_indices"
        fractional_max_pool.__annotations__["return"] = "tuple[Tensor, Tensor]"
        fractional_max_pool.__doc__ = f"``{name}`` returning ``(output, indices)``."
    else:
        fractional_max_pool.__name__ = name
        fractional_max_pool.__doc__ = (
            f"Fractional max pooling of {_LAYOUTS[nd]} input to ``output_size`` (or "
            "``output_ratio`` of the input size)."
        )
    fractional_max_pool.__qualname__ = fractional_max_pool.__name__
    return fractional_max_pool


fractional_max_pool2d = _fractional_max_pool_of_rank(2, always_indices=False)
fractional_max_pool3d = _fractional_max_pool_of_rank(3, always_indices=False)
fractional_max_pool2d_with_indices = _fractional_max_pool_of_rank(2, always_indices=True)
fractional_max_pool3d_with_indices = _fractional_max_pool_of_rank(3, always_indices=True)
