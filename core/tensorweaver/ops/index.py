"""Indexing: ``x[...]`` and ``x[...] = v`` (basic, advanced and boolean, NumPy's rules), and
the gather/scatter family. Everything lowers to slice, flip, reshape, permute, take, gather
and scatter primitives, so gradients come from their rules."""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.autograd.mode import no_grad
from tensorweaver.contract import dtypes
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import apply, broadcast_shapes, check_backends
from tensorweaver.tensor import Tensor, _axis


def _index_tensor(value: Any, like: Tensor) -> Tensor:
    """A list / array / tensor index as an int64 or bool tensor on ``like``'s device."""
    if isinstance(value, Tensor):
        t = value
    else:
        import numpy as np

        array = np.asarray(value)
        if array.dtype.kind not in "iub":
            raise IndexError(
                f"tensors used as indices must be long, int, byte or bool; got {array.dtype}"
            )
        if array.dtype.kind == "b":
            t = Tensor(like.backend.from_host(array, dtypes.bool_), like.backend, dtypes.bool_)
        else:
            t = Tensor(like.backend.from_host(array, dtypes.int64), like.backend, dtypes.int64)
    if t.dtype.kind == "f":
        raise IndexError(
            f"tensors used as indices must be long, int, byte or bool tensors, got {t.dtype.name}"
        )
    check_backends("indexing", (like, t))
    if t.dtype is not dtypes.bool_ and t.dtype is not dtypes.int64:
        t = ew.cast(t, dtypes.int64)
    return t


def _wrap_indices(idx: Tensor, size: int, dim: int) -> Tensor:
    """Negative indices counted from the end, and a clear error for out-of-range ones."""
    host = idx.backend.to_host(idx.native)
    if host.size:
        lo, hi = int(host.min()), int(host.max())
        if lo < -size or hi >= size:
            bad = lo if lo < -size else hi
            raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")
        if lo < 0:
            return ew.where(ew.lt(idx, 0), ew.add(idx, size), idx)
    return idx


def _expand_index(x: Tensor, index: Any) -> list:
    """The index as a list of per-dimension entries, Ellipsis expanded, masks as int tensors."""
    if not isinstance(index, tuple):
        index = (index,)
    entries: list = []
    for item in index:
        if item is None or item is Ellipsis or isinstance(item, slice):
            entries.append(item)
        elif isinstance(item, bool):
            raise IndexError("indexing with a Python bool is not supported; use a bool tensor")
        elif isinstance(item, int) or (
            isinstance(item, Tensor) and not item.shape and item.dtype.kind in "iu"
        ):
            entries.append(int(item))
        else:
            t = _index_tensor(item, x)
            if t.dtype is dtypes.bool_:
                if t.ndim == 0:
                    raise IndexError("indexing with a 0-d bool tensor is not supported")
                coords = Tensor(t.backend.nonzero(t.native), t.backend, dtypes.int64)
                entries.extend(coords[:, k] for k in range(t.ndim))
            else:
                entries.append(t)
    used = sum(1 for e in entries if e is not None and e is not Ellipsis)
    ellipses = [i for i, e in enumerate(entries) if e is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim} (got {used} indices)")
    fill = [slice(None)] * (x.ndim - used)
    if ellipses:
        at = ellipses[0]
        entries[at : at + 1] = fill
    else:
        entries.extend(fill)
    return entries


def getitem(x: Tensor, index: Any) -> Tensor:
    if isinstance(index, Tensor) and index.dtype is dtypes.bool_ and index.ndim == 0:
        # x[True] adds a leading axis of length 1; x[False] one of length 0.
        out = mv.unsqueeze(x, 0)
        return out if bool(index.item()) else mv.narrow(out, 0, 0, 0)
    entries = _expand_index(x, index)
    starts, stops, steps, flips = [], [], [], []
    shape: list[int] = []  # the shape after basic indexing, with None axes added
    advanced: list[tuple[int, Tensor]] = []  # (position in `shape`, index tensor)
    dim = 0
    for e in entries:
        if e is None:
            shape.append(1)
            continue
        n = x.shape[dim]
        if isinstance(e, slice):
            start, stop, step = e.indices(n)
            if step < 0:  # walk forward over the same elements, then flip
                count = len(range(start, stop, step))
                start, stop, step = start + (count - 1) * step if count else 0, start + 1, -step
                flips.append(dim)
                if not count:
                    start = stop = 0
            count = len(range(start, stop, step))
            starts.append(start)
            stops.append(start + (count - 1) * step + 1 if count else start)
            steps.append(step)
            shape.append(count)
        elif isinstance(e, int):
            if not -n <= e < n:
                raise IndexError(f"index {e} is out of bounds for dimension {dim} with size {n}")
            e = e + n if e < 0 else e
            starts.append(e)
            stops.append(e + 1)
            steps.append(1)
        else:
            starts.append(0)
            stops.append(n)
            steps.append(1)
            shape.append(n)
            advanced.append((len(shape) - 1, _wrap_indices(e, n, dim)))
        dim += 1
    out = mv.slice_dims(x, starts, stops, steps) if x.ndim else x
    if flips:
        out = mv.flip(out, flips)
    out = mv.reshape(out, tuple(shape))
    if advanced:
        out = _advanced(out, advanced)
    elif out is x:
        out = (
            apply("reshape", x.native, x.dtype, (x,))
            if x.requires_grad
            else Tensor(x.native, x.backend, x.dtype)
        )
    return out


def _advanced(x: Tensor, advanced: list[tuple[int, Tensor]]) -> Tensor:
    """NumPy's advanced indexing of ``x`` by index tensors at the given dimensions."""
    dims = [d for d, _ in advanced]
    indices = [t for _, t in advanced]
    bshape = broadcast_shapes("indexing", *(t.shape for t in indices))
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    if not adjacent:  # the indexed dimensions go first, as in NumPy
        rest = [d for d in range(x.ndim) if d not in dims]
        x = mv.permute(x, dims + rest)
        dims = list(range(len(dims)))
    first = dims[0]
    sizes = [x.shape[d] for d in dims]
    linear = None
    stride = 1
    for idx, size in zip(reversed(indices), reversed(sizes)):
        term = idx if stride == 1 else ew.mul(idx, stride)
        linear = term if linear is None else ew.add(linear, term)
        stride *= size
    merged = mv.reshape(x, x.shape[:first] + (math.prod(sizes),) + x.shape[first + len(dims) :])
    flat = mv.reshape(mv.expand(linear, bshape), (-1,)) if bshape else mv.reshape(linear, (1,))
    taken = take_along(merged, first, flat)
    return mv.reshape(taken, x.shape[:first] + bshape + x.shape[first + len(dims) :])


def take_along(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """``index_select`` without checks: ``index`` is 1-d int64, in range."""
    return apply("take", x.backend.take(x.native, dim, index.native), x.dtype, (x,), (dim, index))


def setitem(x: Tensor, index: Any, value: Any) -> None:
    """``x[index] = value``: rebinds ``x`` to a copy with the selected elements replaced."""
    source = x._inplace_source()
    with no_grad():
        positions = getitem(
            Tensor(
                x.backend.reshape(x.backend.arange(0, x.numel(), 1, dtypes.int64), x.shape),
                x.backend,
                dtypes.int64,
            ),
            index,
        )
    if not isinstance(value, Tensor):
        value = Tensor(x.backend.full((), value, x.dtype), x.backend, x.dtype)
    elif value.dtype is not x.dtype:
        value = ew.cast(value, x.dtype)
    check_backends("setitem", (x, value))
    try:
        value = mv.expand(value, positions.shape)
    except RuntimeError:
        raise RuntimeError(
            f"setitem: a value of shape {list(value.shape)} cannot be assigned to a selection "
            f"of shape {list(positions.shape)}"
        ) from None
    flat_index = mv.reshape(positions, (-1,))
    updated = scatter(mv.reshape(source, (-1,)), 0, flat_index, mv.reshape(value, (-1,)))
    x._assign(mv.reshape(updated, x.shape))


def _check_index(op: str, x: Tensor, dim: int, index: Tensor) -> int:
    if not isinstance(index, Tensor) or index.dtype is not dtypes.int64:
        raise RuntimeError(
            f"{op}(): expected index to be an int64 tensor, got "
            f"{getattr(index, 'dtype', type(index).__name__)}"
        )
    check_backends(op, (x, index))
    d = _axis(dim, x.ndim, op)
    if index.ndim != x.ndim and not (x.ndim == 0 and index.ndim <= 1):
        raise RuntimeError(
            f"{op}(): index tensor must have the same number of dimensions as the input "
            f"tensor ({x.ndim}), got shape {list(index.shape)}"
        )
    for i, (n, m) in enumerate(zip(index.shape, x.shape)):
        if i != d and n > m:
            raise RuntimeError(
                f"{op}(): size of index dimension {i} ({n}) is larger than the input's ({m})"
            )
    return d


def gather(x: Tensor, dim: int, index: Tensor) -> Tensor:
    d = _check_index("gather", x, dim, index)
    index = _wrap_indices(index, x.shape[d] if x.ndim else 1, d)
    native = x.backend.gather(x.native, d, index.native)
    return apply("gather", native, x.dtype, (x,), (d, index))


def scatter(
    x: Tensor,
    dim: int,
    index: Tensor,
    src: Any = None,
    *,
    value: Any = None,
    reduce: str | None = None,
) -> Tensor:
    """A copy of ``x`` with ``src`` (or ``value``) written at ``index`` along ``dim``."""
    if reduce is not None:
        if reduce != "add":
            raise NotImplementedError(f"scatter: reduce={reduce!r} is not supported; use 'add'")
        return scatter_add(x, dim, index, src)
    d = _check_index("scatter", x, dim, index)
    if src is None:
        src = value
    if not isinstance(src, Tensor):
        src = mv.expand(Tensor(x.backend.full((), src, x.dtype), x.backend, x.dtype), index.shape)
    src = _src_for(x, index, src, "scatter")
    native = x.backend.scatter(x.native, d, index.native, src.native)
    return apply("scatter", native, x.dtype, (x, src), (d, index))


def _src_for(x: Tensor, index: Tensor, src: Tensor, op: str) -> Tensor:
    """``src`` cut to ``index``'s shape (PyTorch reads only that part) in ``x``'s dtype."""
    if src.dtype is not x.dtype:
        src = ew.cast(src, x.dtype)
    if src.shape != index.shape:
        if src.ndim != index.ndim or any(s < i for s, i in zip(src.shape, index.shape)):
            raise RuntimeError(
                f"{op}(): src of shape {list(src.shape)} is smaller than index of shape "
                f"{list(index.shape)}"
            )
        src = mv.slice_dims(src, [0] * src.ndim, list(index.shape), [1] * src.ndim)
    return src


def scatter_add(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``x`` with ``src`` added at ``index`` along ``dim``; duplicates accumulate."""
    d = _check_index("scatter_add", x, dim, index)
    src = _src_for(x, index, src, "scatter_add")
    native = x.backend.scatter_add(x.native, d, index.native, src.native)
    return apply("scatter_add", native, x.dtype, (x, src), (d, index))


def index_select(x: Tensor, dim: int, index: Tensor) -> Tensor:
    d = _axis(dim, x.ndim, "index_select")
    index = _index_tensor(index, x)
    if index.ndim > 1:
        raise IndexError(f"index_select(): index must be 0-d or 1-d, got shape {index.shape}")
    index = _wrap_indices(mv.reshape(index, (-1,)), x.shape[d], d)
    return take_along(x, d, index)


def index_add(x: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of ``x`` with the slices of ``source`` added at ``index`` along ``dim``."""
    d = _axis(dim, x.ndim, "index_add")
    index = _wrap_indices(mv.reshape(_index_tensor(index, x), (-1,)), x.shape[d], d)
    if alpha != 1:
        source = ew.mul(source, alpha)
    if source.ndim != x.ndim or source.shape[d] != index.shape[0]:
        raise RuntimeError(
            f"index_add(): source of shape {list(source.shape)} does not fit input of shape "
            f"{list(x.shape)} with {index.shape[0]} indices along dim {d}"
        )
    shape = [1] * x.ndim
    shape[d] = index.shape[0]
    full_index = mv.expand(mv.reshape(index, tuple(shape)), source.shape)
    return scatter_add(x, d, full_index, source)


def take_along_dim(x: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    if dim is None:
        return gather(mv.reshape(x, (-1,)), 0, mv.reshape(indices, (-1,)))
    d = _axis(dim, x.ndim, "take_along_dim")
    if indices.ndim != x.ndim:
        raise RuntimeError(
            f"take_along_dim: input and indices should have the same number of dimensions, "
            f"got shapes {x.shape} and {indices.shape}"
        )
    # Every dimension but `dim` broadcasts.
    others = broadcast_shapes(
        "take_along_dim",
        x.shape[:d] + (1,) + x.shape[d + 1 :],
        indices.shape[:d] + (1,) + indices.shape[d + 1 :],
    )
    xs, ids = list(others), list(others)
    xs[d], ids[d] = x.shape[d], indices.shape[d]
    return gather(mv.expand(x, xs), d, mv.expand(indices, ids))


def masked_fill(x: Tensor, mask: Tensor, value: Any) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        raise RuntimeError("masked_fill: the mask must be a bool tensor")
    if isinstance(value, Tensor):
        value = ew.cast(value, x.dtype)
    else:
        value = Tensor(x.backend.full((), value, x.dtype), x.backend, x.dtype)
    try:
        out = ew.where(mask, value, x)
    except RuntimeError:
        out = None
    if out is None or out.shape != x.shape:
        raise RuntimeError(
            f"masked_fill: mask of shape {list(mask.shape)} does not broadcast to the input's "
            f"shape {list(x.shape)}"
        )
    return out


def masked_select(x: Tensor, mask: Tensor) -> Tensor:
    shape = broadcast_shapes("masked_select", x.shape, mask.shape)
    return getitem(mv.expand(x, shape), mv.expand(mask, shape))


def nonzero(x: Tensor, *, as_tuple: bool = False) -> Any:
    coords = Tensor(x.backend.nonzero(x.native), x.backend, dtypes.int64)
    if as_tuple:
        return tuple(coords[:, k] for k in range(x.ndim)) if x.ndim else (coords[:, 0],)
    return coords
