"""Order statistics and counting, PyTorch's semantics: ``median``, ``nanmedian``, ``kthvalue``,
``quantile``, ``nanquantile``, ``mode``, ``unique``, ``bincount``, ``histc``, ``searchsorted``
and ``bucketize``.

All are compositions of ``sort`` (stable, NaN last), ``gather``, ``scatter_add``, ``cumsum`` and
comparisons, so they run on every backend and the selected values carry the gradient of the
gather they come from. As PyTorch defines no derivative for ``unique``,
``unique_consecutive`` and a weighted ``bincount``, their float results require grad and
backward through them raises (``no_derivative``). Only the output sizes of ``unique`` and
``bincount`` and the data range of ``histc`` are read on the host.

Where PyTorch's choice among equal elements depends on its selection algorithm (the index
``median`` and ``kthvalue`` return for repeated values, or ``nanmedian`` for an all-NaN slice),
this module takes the one the stable sort puts at the selected position; the values agree.
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any, Callable

import numpy as np

from tensorweaver import return_types
from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.autograd.function import Function
from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import saves_integer_output
from tensorweaver.contract import dtypes
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops import sort as st
from tensorweaver.ops import views
from tensorweaver.ops.apply import check_backends, labelled, out_needs_no_grad
from tensorweaver.ops.bounds import extrema
from tensorweaver.ops.reduce import _check_nonempty
from tensorweaver.promotion import result_type
from tensorweaver.tensor import Tensor, _axis, index_argument

#: PyTorch's words where an op has no derivative (unique's have their own).
NO_DERIVATIVE = "derivative for aten::{} is not implemented"


class _AllElements:
    """The default of ``median``'s ``dim`` and ``keepdim``: its overload over all elements."""

    def __repr__(self) -> str:
        return "<all elements>"


_ALL: Any = _AllElements()
INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")
#: Picks, from values sorted along ``axis``, one position per slice (int64, size 1 there).
Position = Callable[[Tensor, int], Tensor]


class _NoDerivative(Function):
    """Float outputs that require grad where an input does, and whose backward raises."""

    @staticmethod
    def forward(ctx: Any, error: BaseException, outputs: tuple, *inputs: Tensor) -> tuple:
        ctx.error = error
        return outputs

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple:
        raise ctx.error


def no_derivative(outputs: Any, inputs: tuple, error: BaseException) -> Any:
    """``outputs`` (a tensor or a tuple, computed without a graph) as PyTorch gives results it
    defines no derivative for: the float ones require grad where one of ``inputs`` does (None
    allowed), and backward through them raises ``error``."""
    given = tuple(t for t in inputs if isinstance(t, Tensor))
    if not is_grad_enabled() or not any(t.requires_grad for t in given):
        return outputs
    single = isinstance(outputs, Tensor)
    wrapped = _NoDerivative.apply(error, (outputs,) if single else tuple(outputs), *given)
    return wrapped[0] if single else wrapped


def _nan_count(values: Tensor, axis: int) -> Tensor:
    return rd.sum(ew.isnan(values), axis, True)


def _select(op: str, x: Tensor, dim: int, keepdim: bool, position: Position) -> tuple:
    """``(values, indices)`` at the sorted ``position`` of every slice of ``x`` along ``dim``."""
    if op != "mode" and x._inference and x.requires_grad and is_grad_enabled():
        # (PyTorch's autograd skips its kernel, an out= one, which refuses before any check)
        raise out_needs_no_grad(op)
    if type(keepdim) is not bool:
        st.check_flags(op, keepdim=keepdim)
    axis = _axis(dim, x.ndim, op)
    flat = x.reshape(1) if x.ndim == 0 else x
    _check_nonempty(op, flat, (axis,))
    # checked after the dim, as PyTorch, whose kthvalue of a 0-d tensor returns it, bool too
    if x.dtype is dtypes.bool_ and not (op == "kthvalue" and x.ndim == 0):
        raise NotImplementedError(f"{op}(): not implemented for bool tensors; cast with .long()")
    # (the unrecorded sort: PyTorch's order statistics do not copy an inference input first)
    ordered, order = st._sort(flat.detach(), axis, False)
    indices = ix.gather_unchecked(order, axis, position(ordered, axis))
    # The values gathered at the indices returned (a view of them without keepdim): the
    # node reads them, as PyTorch's reads its saved indices, so a write through their
    # .data reaches backward.
    values = ix.gather_unchecked(flat, axis, indices)
    if not (keepdim and x.ndim):
        values, indices = mv.squeeze(values, axis), views.squeeze(indices, axis)
    values = labelled(values, _NODE_NAMES[op], x)
    saves_integer_output(values, indices)  # (PyTorch's node saves the indices)
    return getattr(return_types, op)(values, indices)


#: PyTorch's node names of the values of the order statistics along a dim.
_NODE_NAMES = {
    "median": "MedianBackward1",
    "nanmedian": "NanmedianBackward1",
    "kthvalue": "KthvalueBackward0",
    "mode": "ModeBackward0",
}


def _median_position(ignore_nan: bool) -> Position:
    """The lower median; with NaN counted, a slice holding NaN picks its first NaN."""

    def position(values: Tensor, axis: int) -> Tensor:
        n, nans = values.shape[axis], _nan_count(values, axis)
        if ignore_nan:  # an all-NaN slice picks position 0, a NaN
            return ew.floor_divide(ew.clamp(n - 1 - nans, min=0), 2)
        return ew.where(nans > 0, n - nans, (n - 1) // 2)

    return position


def _median(op: str, x: Tensor, dim: Any, keepdim: Any, ignore_nan: bool) -> Any:
    if dim is not _ALL:  # PyTorch's overloads: (input) and (input, dim, keepdim=False)
        keepdim = False if keepdim is _ALL else keepdim
        return _select(op, x, index_argument(dim, op, "dim"), keepdim, _median_position(ignore_nan))
    if keepdim is not _ALL:
        raise TypeError(f'{op}() missing 1 required positional arguments: "dim"')
    if x.numel() == 0:  # NaN cast to x's dtype as PyTorch's (0 or the minimum for integers)
        nan = cr.full((), math.nan, dtype=dtypes.float64, device=x.device).to(x.dtype)
        return ew.add(rd.sum(x), nan) if x.dtype.is_floating_point else nan  # (a graph)
    if not (is_grad_enabled() and x.requires_grad):
        return _select(op, x.reshape(-1), 0, False, _median_position(ignore_nan)).values
    with no_grad():
        value = _select(op, x.reshape(-1), 0, False, _median_position(ignore_nan)).values
    if x._inference:  # (PyTorch's autograd skips an op of an inference tensor alone)
        return value
    out = _EvenlyDistributed.apply(x, value)
    return labelled(out, f"{op.capitalize()}Backward0", x)  # (PyTorch's node saves it)


class _EvenlyDistributed(Function):
    """``value``, one of ``x``'s elements (or NaN), whose gradient PyTorch shares evenly
    among every element equal to it (every NaN where it is NaN): ties all move it."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, value: Tensor) -> Tensor:
        ctx.save_for_backward(x, value)
        return value.clone()

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        x, value = ctx.saved_tensors
        mask = ew.logical_or(ew.eq(x, value), ew.logical_and(ew.isnan(x), ew.isnan(value)))
        return ew.mul(mask, ew.div(grad, rd.sum(mask))), None


def median(input: Tensor, dim: int = _ALL, keepdim: bool = _ALL, **aliases: Any) -> Any:
    """The lower median of all elements (0-d; NaN if any is NaN), or ``(values, indices)``
    along ``dim``."""
    if aliases:  # (NumPy's axis=/keepdims=, as PyTorch's parser takes them)
        dim, keepdim = rd.numpy_names("median", aliases, dim, keepdim, (_ALL, _ALL))
    return _median("median", input, dim, keepdim, ignore_nan=False)


def nanmedian(input: Tensor, dim: int = _ALL, keepdim: bool = _ALL, **aliases: Any) -> Any:
    """``median`` ignoring NaN: NaN only where every element is NaN."""
    if aliases:
        dim, keepdim = rd.numpy_names("nanmedian", aliases, dim, keepdim, (_ALL, _ALL))
    return _median("nanmedian", input, dim, keepdim, ignore_nan=True)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, **aliases: Any) -> tuple:
    """``(values, indices)`` of the ``k``-th smallest element (1-based; NaN is the largest)
    along ``dim``."""
    if aliases:
        dim, keepdim = rd.numpy_names("kthvalue", aliases, dim, keepdim, (-1, False))
    k = index_argument(k, "kthvalue", "k")

    def position(values: Tensor, axis: int) -> Tensor:
        n = values.shape[axis]
        if not 1 <= k <= n:
            raise RuntimeError(
                f"kthvalue(): selected number k={k} out of range for dimension {dim} of size "
                f"{n}; choose 1 <= k <= {n}"
            )
        shape = rd.kept_shape(tuple(values.shape), (axis,))
        return cr.full(shape, k - 1, dtype=dtypes.int64, device=values.device)

    return _select("kthvalue", input, dim, keepdim, position)


def _check_quantile(op: str, x: Tensor, q: Any, dim: int | None, interpolation: str) -> None:
    """PyTorch's checks, in its order (a float ``q`` is checked first, a tensor's values
    last)."""
    if not isinstance(q, Tensor) and not 0 <= q <= 1:
        raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
    if interpolation not in INTERPOLATIONS:
        raise RuntimeError(
            f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
            f"but got {interpolation!r}"
        )
    if x.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty (shape {tuple(x.shape)})")
    if isinstance(q, Tensor) and q.ndim > 1:
        raise RuntimeError(f"{op}() q must be a scalar or 1D tensor, got shape {tuple(q.shape)}")
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(
            f"{op}() input tensor must be either float or double dtype, got {x.dtype.name}; "
            "use input.double()"
        )
    if isinstance(q, Tensor) and q.dtype is not x.dtype:
        raise RuntimeError(
            f"{op}() q tensor must be same dtype as the input tensor ({q.dtype.name} vs "
            f"{x.dtype.name}); use q.to(input.dtype)"
        )
    _axis(0 if dim is None else dim, x.ndim, op)
    if isinstance(q, Tensor) and not rd.all(ew.logical_and(q >= 0, q <= 1)).item():
        raise RuntimeError(f"{op}() q values must be in the range [0, 1], got {q.tolist()}")


def _ranks(values: Tensor, axis: int, q: Tensor, ignore_nan: bool) -> Tensor:
    """Fractional sorted positions of the quantiles ``q`` (laid along ``axis``); a slice whose
    answer is NaN gets its last position, which holds a NaN."""
    n, nans = values.shape[axis], _nan_count(values, axis)
    last = n - 1 - nans if ignore_nan else n - 1
    nan_answer = ew.eq(nans, n) if ignore_nan else nans > 0
    return ew.where(nan_answer, float(n - 1), ew.mul(q, last))


def _interpolate(values: Tensor, axis: int, ranks: Tensor, interpolation: str) -> Tensor:
    if interpolation in ("lower", "higher", "nearest"):
        rounded = {"lower": ew.floor, "higher": ew.ceil, "nearest": ew.round}[interpolation]
        return ix.gather_unchecked(values, axis, rounded(ranks).long())
    below = ew.floor(ranks)
    weight = ew.sub(ranks, below) if interpolation == "linear" else cr.full_like(ranks, 0.5)
    lower = ix.gather_unchecked(values, axis, below.long())
    return ew.lerp(lower, ix.gather_unchecked(values, axis, ew.ceil(ranks).long()), weight)


def _quantile(
    op: str, x: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str, nan: bool
) -> Tensor:
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        x, q = float32_operands(x, q)
    if type(keepdim) is not bool:
        st.check_flags(op, keepdim=keepdim)
    _check_quantile(op, x, q, dim, interpolation)
    if dim is None:
        flat, axis, reduced = x.reshape(-1), 0, tuple(range(x.ndim))
    else:
        axis = _axis(dim, x.ndim, op)
        flat, reduced = (x.reshape(1) if x.ndim == 0 else x), (axis,) if x.ndim else ()
    if not isinstance(q, Tensor):
        q = cr.full((), q, dtype=x.dtype, device=x.device)
    qs = q.reshape(tuple(-1 if a == axis else 1 for a in range(flat.ndim)))
    values = st.sort(flat, axis).values
    ranks = _ranks(values, axis, qs, nan)
    out = mv.movedim(_interpolate(values, axis, ranks, interpolation), axis, 0)
    kept = rd.kept_shape(tuple(x.shape), reduced)
    shape = kept if keepdim else tuple(n for a, n in enumerate(x.shape) if a not in reduced)
    # (PyTorch's kernel ends every quantile by squeezing its work tensor in place)
    return labelled(out.reshape(tuple(q.shape) + shape), "SqueezeBackward4", out)  # 1-d q leads


def quantile(
    input: Tensor,
    q: Any,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
    **aliases: Any,
) -> Tensor:
    """The ``q``-th quantiles (float or 1-d tensor, in [0, 1]) of all elements or along ``dim``;
    a tensor ``q`` adds a leading dimension. NaN where a slice holds NaN."""
    if aliases:
        dim, keepdim = rd.numpy_names("quantile", aliases, dim, keepdim, (None, False))
    return _quantile("quantile", input, q, dim, keepdim, interpolation, nan=False)


def nanquantile(
    input: Tensor,
    q: Any,
    dim: int | None = None,
    keepdim: bool = False,
    *,
    interpolation: str = "linear",
    **aliases: Any,
) -> Tensor:
    """``quantile`` ignoring NaN: NaN only where every element of a slice is NaN."""
    if aliases:
        dim, keepdim = rd.numpy_names("nanquantile", aliases, dim, keepdim, (None, False))
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, nan=True)


def _runs(values: Tensor, axis: int, nan_equal: bool) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """For values sorted along ``axis`` (non-empty there): each element's run number, each
    run's length (at its run number; later slots zero), whether an element ends its run and
    whether it starts one."""
    n = values.shape[axis]
    head, tail = mv.narrow(values, axis, 0, n - 1), mv.narrow(values, axis, 1, n - 1)
    differs = head != tail
    if nan_equal and values.dtype.kind == "f":  # NaNs form one run, as PyTorch's mode counts
        differs = differs & ~(ew.isnan(head) & ew.isnan(tail))
    edge = cr.ones_like(mv.narrow(values, axis, 0, 1), dtype=dtypes.bool_)
    starts = mv.cat([edge, differs], axis)
    run_id = rd.cumsum(starts, axis) - 1
    lengths = ix.scatter_add_unchecked(cr.zeros_like(run_id), axis, run_id, cr.ones_like(run_id))
    return run_id, lengths, mv.cat([differs, edge], axis), starts


def mode(input: Tensor, dim: int = -1, keepdim: bool = False, **aliases: Any) -> tuple:
    """``(values, indices)``: the most frequent value along ``dim`` (the smallest among equally
    frequent ones; NaNs count as one value) and the index of its last occurrence."""
    if aliases:
        dim, keepdim = rd.numpy_names("mode", aliases, dim, keepdim, (-1, False))

    def position(values: Tensor, axis: int) -> Tensor:
        run_id, lengths, ends, _ = _runs(values, axis, nan_equal=True)
        score = ew.where(ends, ix.gather_unchecked(lengths, axis, run_id), 0)
        return rd.argmax(score, axis, keepdim=True)

    if input.dtype is dtypes.bool_:
        input = input.long()  # only for sorting: the values come back as bool below
        out = _select("mode", input, dim, keepdim, position)
        return return_types.mode(out.values.bool(), out.indices)
    return _select("mode", input, dim, keepdim, position)


def unique(
    input: Tensor,
    sorted: bool = True,
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
) -> Any:
    """The distinct elements of ``input``, ascending (also for ``sorted=False``, as PyTorch on
    CPU); with ``return_inverse`` each element's index among them (``input``'s shape), with
    ``return_counts`` how often each occurs. NaNs are distinct from each other. With
    ``dim``, the distinct slices along it in lexicographic order (the inverse then indexes
    that dimension)."""
    st.check_flags(
        "unique", sorted=sorted, return_inverse=return_inverse, return_counts=return_counts
    )
    name = "unique" if dim is None else "unique_dim"
    error = NotImplementedError(f"the derivative for '{name}' is not implemented.")
    out = _unique(input.detach(), return_inverse, return_counts, dim)
    return no_derivative(out, (input,), error)


def _unique(input: Tensor, return_inverse: bool, return_counts: bool, dim: int | None) -> Any:
    if dim is not None:
        if input.ndim == 0:
            raise IndexError(f"unique(): dimension specified as {dim} but tensor has no dimensions")
        return _unique_slices(
            input, _axis(dim, input.ndim, "unique"), return_inverse, return_counts
        )
    flat = input.reshape(-1)
    values, order = st.sort(flat)
    if flat.numel() == 0:
        run_id = lengths = order
        out = values
    else:
        run_id, lengths, _, starts = _runs(values, 0, nan_equal=False)
        # Each run's first element, as PyTorch's (the sort is stable: unique([0., -0.]) is [0.])
        out = ix.masked_select(values, starts)
    extras = []
    if return_inverse:
        inverse = ix.scatter_unchecked(cr.zeros_like(order), 0, order, run_id)
        extras.append(inverse.reshape(input.shape))
    if return_counts:
        extras.append(mv.narrow(lengths, 0, 0, out.numel()))
    return (out, *extras) if extras else out


def _slice_size(op: str, x: Tensor, axis: int) -> int:
    """The number of elements in a slice of ``x`` along ``axis``; PyTorch's error where the
    slices are empty but there are some."""
    width = math.prod(x.shape[:axis] + x.shape[axis + 1 :])
    if x.shape[axis] and not width:
        raise RuntimeError(
            f"{op}(): there are 0 sized dimensions, and they aren't selected (shape "
            f"{list(x.shape)}, dim {axis}), so unique cannot be applied"
        )
    return width


def _unique_slices(x: Tensor, axis: int, return_inverse: bool, return_counts: bool) -> Any:
    """``unique`` along ``axis``: the distinct slices in lexicographic order, each slice's
    index among them and how often each occurs (slices holding NaN are all distinct)."""
    n, width = x.shape[axis], _slice_size("unique", x, axis)
    rows = mv.movedim(x, axis, 0).reshape(n, width)
    keys = rows.to(dtypes.uint8) if rows.dtype is dtypes.bool_ else rows
    order = cr.arange(n, dtype=dtypes.int64, device=x)
    for column in reversed(range(width if n else 0)):  # stable sorts: the last key first
        key = ix.index_select(keys[:, column], 0, order)
        order = ix.index_select(order, 0, st.argsort(key, dim=0, stable=True))
    ordered = ix.index_select(rows, 0, order)
    starts = cr.ones(n, dtype=dtypes.bool_, device=x)
    if n > 1:
        differs = rd.any(ew.ne(mv.narrow(ordered, 0, 1, n - 1), mv.narrow(ordered, 0, 0, n - 1)), 1)
        starts = mv.cat([mv.narrow(starts, 0, 0, 1), differs], 0)
    picked = ix.masked_select(cr.arange(n, dtype=dtypes.int64, device=x), starts)
    kept = ix.index_select(ordered, 0, picked).reshape(
        (picked.numel(),) + tuple(x.shape[:axis]) + tuple(x.shape[axis + 1 :])
    )
    out = mv.movedim(kept, 0, axis)
    extras = []
    run_id = rd.cumsum(starts.long(), 0) - 1
    if return_inverse:
        extras.append(ix.scatter_unchecked(cr.zeros_like(order), 0, order, run_id))
    if return_counts:
        extras.append(bincount(run_id, minlength=picked.numel()) if n else picked)
    return (out, *extras) if extras else out


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value 0, 1, ... occurs in the 1-d non-negative integer ``input`` (the sum
    of its ``weights`` if given); at least ``minlength`` bins."""
    minlength = index_argument(minlength, "bincount", "minlength")
    if input.dtype.kind not in "iu":
        raise NotImplementedError(
            f"bincount: not implemented for {input.dtype.name} input; pass integers (.long())"
        )
    if input.ndim != 1:
        raise RuntimeError(
            f"bincount only supports 1-d non-negative integral inputs (got shape "
            f"{tuple(input.shape)})"
        )
    bounds = extrema(input)
    if bounds and bounds[0] < 0:
        raise RuntimeError(
            f"bincount only supports 1-d non-negative integral inputs (got the value {bounds[0]})"
        )
    if minlength < 0:
        raise RuntimeError(f"bincount: minlength should be >= 0, got {minlength}")
    if weights is not None:
        check_backends("bincount", (input, weights))
    if weights is not None and tuple(weights.shape) != tuple(input.shape):
        raise RuntimeError(
            f"bincount: weights should be 1-d and have the same length as input (weights "
            f"{tuple(weights.shape)}, input {tuple(input.shape)})"
        )
    size = max(minlength, bounds[1] + 1 if bounds else 0)
    if weights is None or not input.numel():  # PyTorch counts no weights of an empty input
        dtype, src = dtypes.int64, cr.ones_like(input, dtype=dtypes.int64)
    else:  # float and double weights keep their dtype; any other sums in double
        float_types = (dtypes.float32, dtypes.float64)
        dtype = weights.dtype if weights.dtype in float_types else dtypes.float64
        src = weights.to(dtype)
    zeros = cr.zeros(size, dtype=dtype, device=input.device)
    counts = ix.scatter_add_unchecked(zeros, 0, input.long(), src.detach())
    return no_derivative(counts, (weights,), RuntimeError(NO_DERIVATIVE.format("bincount")))


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0) -> Tensor:
    """Counts of ``input``'s elements in ``bins`` equal-width bins over [min, max] (the data's
    range when both are 0); elements outside the range and NaN are left out."""
    if input.dtype.kind != "f":
        raise NotImplementedError(
            f"histc: not implemented for {input.dtype.name} input; use input.float()"
        )
    if bins <= 0:
        raise RuntimeError(f"histc: bins must be > 0, but got {bins}")
    x = input.detach().reshape(-1)
    low, high = float(min), float(max)
    if low == high and x.numel():
        low, high = rd.amin(x).item(), rd.amax(x).item()
    if low == high:
        low, high = low - 1, high + 1
    if low > high:
        raise RuntimeError(f"torch.histc: max must be larger than min (min={low}, max={high})")
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histc: range of [{low}, {high}] is not finite")
    position = ew.floor(ew.div(ew.mul(ew.sub(x, low), bins), high - low)).long()
    inside = ew.logical_and(x >= low, x <= high)  # False for NaN
    slot = ew.where(inside, ew.clamp(position, max=bins - 1), bins)  # slot ``bins``: dropped
    counts = cr.zeros(bins + 1, dtype=input.dtype, device=input.device)
    return mv.narrow(ix.scatter_add_unchecked(counts, 0, slot, cr.ones_like(x)), 0, 0, bins)


def _sorted_by(seq: Tensor, sorter: Tensor) -> Tensor:
    """``seq`` put in order by ``sorter`` (indices along its last dimension, seq's shape)."""
    if tuple(sorter.shape) != tuple(seq.shape):
        raise RuntimeError(
            "torch.searchsorted(): boundary and sorter must have the same size, but got "
            f"boundary tensor {list(seq.shape)} and got sorter tensor {list(sorter.shape)}"
        )
    if sorter.dtype is not dtypes.int64:
        raise RuntimeError(
            "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
            f"{sorter.dtype.name}; use sorter.long()"
        )
    bounds = extrema(sorter)
    if bounds and (bounds[0] < 0 or bounds[1] >= seq.shape[-1]):
        raise RuntimeError(
            f"torch.searchsorted(): sorter index out of range (values {bounds[0]} to "
            f"{bounds[1]} for a last dimension of size {seq.shape[-1]})"
        )
    return ix.gather_unchecked(seq, seq.ndim - 1, sorter)


def searchsorted(
    sorted_sequence: Tensor,
    input: Any,
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Tensor | None = None,
) -> Tensor:
    """For each element of ``input``, the index in ``sorted_sequence`` (1-d, or sorted along
    its last dimension with leading dimensions matching ``input``) where inserting it keeps
    the order: before equal elements, or after them with ``right=True`` / ``side='right'``."""
    if type(out_int32) is not bool or type(right) is not bool:
        st.check_flags("searchsorted", out_int32=out_int32, right=right)
    if not isinstance(input, (Tensor, Number, np.bool_)):  # PyTorch's: a tensor or a scalar
        raise TypeError(
            f"searchsorted(): argument 'input' must be a Tensor or a number, not "
            f"{type(input).__name__}; convert it with torch.tensor()"
        )
    if side not in (None, "left", "right"):
        raise RuntimeError(
            f"torch.searchsorted(): side can only be 'left' or 'right' but got {side!r}"
        )
    if side == "left" and right:
        raise RuntimeError(
            "torch.searchsorted(): side and right can't be set to opposites, got side of left "
            "while right was True"
        )
    right = right or side == "right"
    # Detached: an index has no gradient, and PyTorch records nothing on the operands (so
    # refuses none whose history is invalid, as a node recorded on one would).
    seq = sorted_sequence.detach()
    if sorter is not None:
        seq = _sorted_by(seq, sorter)
    given = input  # (a number promotes as one, whatever dtype it is wrapped at)
    if isinstance(input, Tensor):
        input = input.detach()
    else:
        # PyTorch wraps a Python float at double precision (then casts it to the common dtype)
        wide = dtypes.float64 if isinstance(input, float) else None
        input = cr.as_tensor(input, dtype=wide, device=seq.device)
    if seq.dtype is dtypes.bool_ and input.dtype is dtypes.bool_ and input.numel():
        raise NotImplementedError(
            "searchsorted(): not implemented for bool boundaries and input; convert them "
            "with .long()"
        )
    if seq.ndim == 0 or (seq.ndim > 1 and tuple(seq.shape[:-1]) != tuple(input.shape[:-1])):
        raise RuntimeError(
            "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
            "dimensions of boundaries tensor and input value tensor must match, but we got "
            f"boundaries tensor {list(seq.shape)} and input value tensor {list(input.shape)}"
        )
    common = result_type(seq, given)  # a 0-d or scalar value promotes weakly, as PyTorch's
    # Only a float sequence given as one may hold NaN: that scan reads a value back (a sync
    # on a device), so it is skipped where the answer cannot depend on it.
    scan = seq.dtype.kind == "f" and seq.shape[-1] and input.numel()
    if seq.dtype is not common:
        seq = seq.to(common)
    if input.dtype is not common:
        input = input.to(common)
    keys = input.reshape(-1) if seq.ndim == 1 else input
    if scan and _holds_nan(seq):
        # Past a NaN no order holds: the index is where PyTorch's search steps to
        at = _binary_search(seq, keys, right)
    else:
        at = sorted_position(seq, keys, right)
    # C-ordered whatever the operands' layouts (sorted_position's join keeps a transposed one's)
    at = mv.contiguous(at.reshape(input.shape))
    return at.to(dtypes.int32 if out_int32 else dtypes.int64)


def sorted_position(seq: Tensor, keys: Tensor, right: bool = False) -> Tensor:
    """Where each key lands among ``seq``'s elements (along the last dimension, leading ones
    matching ``keys``') in their sort order, NaNs last: before equal elements, after them if
    ``right``; a NaN key after everything. ``searchsorted`` of a NaN-free ``seq``; with NaN
    in ``seq`` (isin's table), still the sorted place, where PyTorch's search steps past."""
    m, n = keys.shape[-1], seq.shape[-1]
    # In a stable sort of the input next to the sequence, a value placed first lands before
    # equal elements of the sequence; counting the sequence's elements before it gives the index.
    joined = mv.cat([seq, keys] if right else [keys, seq], -1)
    order = st.argsort(joined, -1)
    from_seq = ew.lt(order, n) if right else ew.ge(order, m)
    before = rd.cumsum(from_seq, -1)
    slots = ix.scatter_unchecked(cr.zeros_like(order), joined.ndim - 1, order, before)
    at = mv.narrow(slots, -1, n if right else 0, m)
    if keys.dtype.kind in "fc":  # PyTorch's binary search puts a NaN key after everything
        at = ew.where(ew.isnan(keys), n, at)
    return at


def _holds_nan(x: Tensor) -> bool:
    """Whether ``x`` holds a NaN, in backend primitives (~3 us; tensor ops cost ~8)."""
    b, native = x.backend, x.native
    return bool(b.to_host(b.any(b.ne(native, native), tuple(range(x.ndim)), False)))


def _binary_search(seq: Tensor, keys: Tensor, right: bool) -> Tensor:
    """PyTorch's binary search of each key in ``seq`` (along the last dimension), all keys at
    once: n.bit_length() steps of a gather and a compare, each halving every key's range
    [start, end) and keeping a finished one. It steps right where not mid >= key (not
    mid > key if ``right``), so a NaN key, or a NaN met in the sequence, sends it right."""
    n = seq.shape[-1]
    start = cr.zeros_like(keys, dtype=dtypes.int64)
    end = cr.full_like(keys, n, dtype=dtypes.int64)
    for _ in range(n.bit_length()):
        mid = start + (end - start) // 2
        value = ix.gather_unchecked(seq, seq.ndim - 1, mid.clamp(max=n - 1))
        stays = ew.gt(value, keys) if right else ew.ge(value, keys)
        searching = ew.lt(start, end)
        start = ew.where(ew.logical_and(searching, ew.logical_not(stays)), mid + 1, start)
        end = ew.where(ew.logical_and(searching, stays), mid, end)
    return start


def bucketize(
    input: Any, boundaries: Tensor, *, out_int32: bool = False, right: bool = False
) -> Tensor:
    """The bucket of each element of ``input`` among the 1-d sorted ``boundaries``: ``i`` with
    boundaries[i-1] < x <= boundaries[i] (boundaries[i-1] <= x < boundaries[i] if ``right``),
    which is ``searchsorted(boundaries, input, right=right)``."""
    if type(out_int32) is not bool or type(right) is not bool:
        st.check_flags("bucketize", out_int32=out_int32, right=right)
    if boundaries.ndim != 1:
        raise RuntimeError(
            f"bucketize: boundaries tensor must be 1 dimension, but got dim({boundaries.ndim}); "
            "use searchsorted for batched boundaries"
        )
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def unique_consecutive(
    input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> Any:
    """``input`` with each run of equal consecutive elements (slices along ``dim``) kept once;
    with ``return_inverse`` each element's run, with ``return_counts`` each run's length.
    NaNs are never equal, so each is a run of its own (as PyTorch)."""
    st.check_flags("unique_consecutive", return_inverse=return_inverse, return_counts=return_counts)
    error = NotImplementedError("the derivative for 'unique_consecutive' is not implemented.")
    out = _unique_consecutive(input.detach(), return_inverse, return_counts, dim)
    return no_derivative(out, (input,), error)


def _unique_consecutive(
    input: Tensor, return_inverse: bool, return_counts: bool, dim: int | None
) -> Any:
    if dim is None:
        rows = input.reshape(-1, 1)
    else:
        axis = _axis(dim, input.ndim, "unique_consecutive")
        width = _slice_size("unique_consecutive", input, axis)
        rows = mv.movedim(input, axis, 0).reshape(input.shape[axis], width)
    n = rows.shape[0]
    starts = cr.ones(n, dtype=dtypes.bool_, device=input)
    if n > 1:
        differs = rd.any(ew.ne(mv.narrow(rows, 0, 1, n - 1), mv.narrow(rows, 0, 0, n - 1)), 1)
        starts = mv.cat([mv.narrow(starts, 0, 0, 1), differs], 0)
    picked = ix.masked_select(cr.arange(n, dtype=dtypes.int64, device=input), starts)
    if dim is None:
        out = ix.index_select(input.reshape(-1), 0, picked)
    else:
        out = mv.movedim(ix.index_select(mv.movedim(input, axis, 0), 0, picked), 0, axis)
    extras = []
    run_id = rd.cumsum(starts.long(), 0) - 1
    if return_inverse:
        extras.append(run_id.reshape(input.shape) if dim is None else run_id)
    if return_counts:
        extras.append(bincount(run_id, minlength=picked.numel()) if n else picked)
    return (out, *extras) if extras else out
