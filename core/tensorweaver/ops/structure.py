"""Structured constructions with PyTorch's semantics: diagonals and traces, triangle indices,
grids, repeats and tiles, differences, Kronecker and tensor-dot products, cross products and
pairwise distances.

Everything is a composition of existing tensor ops (movedim, reshape, index_select, scatter,
expand, matmul, ...), so it runs on every backend and gradients need no rules of their own.
A diagonal is read by a stepped ``slice`` of the two dimensions flattened into one (so its
gradient is a ``pad``), and written (``diag_embed``, in-place writes through ``diagonal``'s
view) by ``scatter`` there.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from tensorweaver.amp import autocast_dtype, float32_operands, outside_autocast
from tensorweaver.autograd.mode import no_grad
from tensorweaver.autograd.node import SAVED_TENSORS_HOOKS, frees_nothing
from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import index as ix
from tensorweaver.ops import linalg as la
from tensorweaver.ops import movement as mv
from tensorweaver.ops import reduce as rd
from tensorweaver.ops import views
from tensorweaver.ops.apply import apply, broadcast_shapes, check_backends, labelled
from tensorweaver.ops.rank import check_ndim, max_ndim
from tensorweaver.tensor import Tensor, _axis

_EUCLID_MODES = (
    "use_mm_for_euclid_dist_if_necessary",
    "use_mm_for_euclid_dist",
    "donot_use_mm_for_euclid_dist",
)


# Diagonals


def diagonal_dims(op: str, ndim: int, dim1: int, dim2: int) -> tuple[int, int]:
    d1, d2 = _axis(dim1, ndim, op), _axis(dim2, ndim, op)
    if d1 == d2:
        raise RuntimeError(f"{op}: diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def _flat_diagonal(x: Tensor, offset: int, d1: int, d2: int) -> tuple[Tensor, Tensor]:
    """``x`` with dimensions ``d1, d2`` moved last and flattened into one, and the positions
    of the ``offset`` diagonal in that flattened dimension (int64)."""
    rows, cols = x.shape[d1], x.shape[d2]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    start = max(-offset, 0) * cols + max(offset, 0)
    flat = mv.flatten(mv.movedim(x, (d1, d2), (-2, -1)), -2, -1)
    positions = cr.arange(start, start + length * (cols + 1), cols + 1, device=x)
    return flat, positions


def with_diagonal(x: Tensor, value: Tensor, offset: int, d1: int, d2: int) -> Tensor:
    """A copy of ``x`` whose ``offset`` diagonal over ``d1, d2`` is ``value`` (diagonal last)."""
    flat, positions = _flat_diagonal(x, offset, d1, d2)
    index = mv.expand(positions, (*flat.shape[:-1], positions.shape[0]))
    src = mv.expand(ew.cast(value, flat.dtype), index.shape)
    filled = ix.scatter_unchecked(flat, flat.ndim - 1, index, src)
    shape = tuple(x.shape[d] for d in range(x.ndim) if d not in (d1, d2))
    moved = mv.reshape(filled, (*shape, x.shape[d1], x.shape[d2]))
    return mv.movedim(moved, (-2, -1), (d1, d2))


def _take_diagonal(x: Tensor, offset: int, d1: int, d2: int) -> Tensor:
    """The diagonal by movement ops alone (views on most backends, and a cheap backward):
    the square block it crosses, its two dimensions last and flattened, then every
    (length + 1)-th element of that."""
    rows, cols = x.shape[d1], x.shape[d2]
    length = max(0, min(rows + min(offset, 0), cols - max(offset, 0)))
    starts, stops = [0] * x.ndim, list(x.shape)
    if length:  # (an offset past the matrix would start the block outside it)
        starts[d1], starts[d2] = max(-offset, 0), max(offset, 0)
    stops[d1], stops[d2] = starts[d1] + length, starts[d2] + length
    block = mv.slice_dims(x, starts, stops, [1] * x.ndim)
    if (d1, d2) != (x.ndim - 2, x.ndim - 1):
        block = mv.movedim(block, (d1, d2), (-2, -1))
    flat = mv.reshape(block, (*block.shape[:-2], length * length))
    steps = [1] * (flat.ndim - 1) + [length + 1]
    return mv.slice_dims(flat, [0] * flat.ndim, list(flat.shape), steps)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The ``offset`` diagonal over ``dim1, dim2``, as the last dimension; a view: in-place
    writes to it reach ``input``."""
    d1, d2 = diagonal_dims("diagonal", input.ndim, dim1, dim2)
    out = _take_diagonal(input, offset, d1, d2)

    def write(base: Tensor, value: Tensor) -> Any:
        return base.copy_(with_diagonal(base, value, offset, d1, d2))

    if not out.numel():  # no element to place it by: torch's strides (a non-empty one's are
        # its elements' positions), from input's storage offset, for an array of its own
        memory = views.Memory(input)
        strides = memory.x_strides
        if strides is not None:
            kept = [s for d, s in enumerate(strides) if d not in (d1, d2)]
            laid = (*kept, strides[d1] + strides[d2])
            write.memory_layout = (memory, laid, memory.start)  # type: ignore[attr-defined]
            # (an empty array of its own: its layout is then read through the write's)
            empty = input.backend.full(tuple(out.shape), 0, out.dtype)
            out = apply("identity", empty, out.dtype, (out,))
    out = views.as_view(out, input, write, lambda base: _take_diagonal(base, offset, d1, d2))
    return labelled(out, "DiagonalBackward0", input)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices over ``dim1, dim2`` of the output with the last dimension of ``input`` on
    their ``offset`` diagonal, zeros elsewhere."""
    ndim = input.ndim + 1
    d1, d2 = diagonal_dims("diag_embed", ndim, dim1, dim2)
    n = input.shape[-1] + abs(offset)
    check_ndim("diag_embed", (*input.shape[:-1], n, n), input.backend)
    zeros = cr.zeros_like_shape(input, (*input.shape[:-1], n, n))
    out = with_diagonal(zeros, input, offset, ndim - 2, ndim - 1)
    # PyTorch's node saves only numbers: a second backward runs
    out = frees_nothing(mv.movedim(out, (-2, -1), (d1, d2)), input)
    # (an inference input that requires grad: PyTorch's autograd skips diag_embed, whose
    # kernel then copies it into a diagonal view of new zeros, recorded as CopySlices)
    return labelled(out, "CopySlices" if input._inference else "DiagEmbedBackward0", input)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d ``input`` put on the ``diagonal`` of a square matrix, or a copy of a 2-d
    ``input``'s ``diagonal`` (not a view, as in PyTorch)."""
    if input.ndim == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.ndim == 2:  # (PyTorch's node saves only numbers: a second backward runs)
        out = frees_nothing(_take_diagonal(input, diagonal, 0, 1), input)
        return labelled(out, "DiagonalBackward0_copy", input)  # (PyTorch's copying variant)
    raise RuntimeError(
        f"diag: expects a 1-d or 2-d tensor, got shape {list(input.shape)}; use diagonal or "
        "diag_embed for more dimensions"
    )


def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's main diagonal (integers sum in int64)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (input,) = float32_operands(input)
    if input.ndim != 2:
        raise RuntimeError(
            f"trace: expected a matrix, but got tensor with dim {input.ndim} "
            f"(shape {list(input.shape)})"
        )
    if input.dtype is dtypes.bool_:
        raise NotImplementedError("trace: not implemented for bool; convert with .int() first")
    return labelled(rd.sum(_take_diagonal(input, 0, 0, 1)), "TraceBackward0", input)


# Index constructions


def _triangle_indices(
    op: str, row: int, col: int, offset: int, dtype: DType, device: Any, lower: bool
) -> Tensor:
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row and col must be non-negative, got {row} and {col}")
    if dtype not in (dtypes.int64, dtypes.int32):  # PyTorch's kernel has these two only
        raise NotImplementedError(
            f"\"{op}\" not implemented for '{dtypes.SCALAR_TYPE_NAMES[dtype.name]}': "
            "pass dtype=torch.int64 (the default) or torch.int32"
        )
    ones = cr.ones(row, col, dtype=dtypes.bool_, device=device)
    mask = mv.tril(ones, offset) if lower else mv.triu(ones, offset)
    return ew.cast(mv.t(ix.nonzero(mask)), dtype)


def tril_indices(
    row: int,
    col: int,
    offset: int = 0,
    *,
    dtype: DType = dtypes.int64,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The (2, N) row and column indices of a ``row`` x ``col`` matrix's lower triangle (up to
    the ``offset`` diagonal), row by row."""
    out = _triangle_indices("tril_indices", row, col, offset, dtype, device, lower=True)
    return out.requires_grad_() if requires_grad else out  # (as PyTorch's: refused for ints)


def triu_indices(
    row: int,
    col: int,
    offset: int = 0,
    *,
    dtype: DType = dtypes.int64,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The (2, N) row and column indices of a ``row`` x ``col`` matrix's upper triangle (from
    the ``offset`` diagonal on), row by row."""
    out = _triangle_indices("triu_indices", row, col, offset, dtype, device, lower=False)
    return out.requires_grad_() if requires_grad else out  # (as PyTorch's: refused for ints)


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids: output ``i`` holds ``tensors[i]`` along dimension ``i`` (``'ij'``) or
    with the first two dimensions swapped (``'xy'``)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        warnings.warn(
            "meshgrid: pass indexing='ij' or indexing='xy'; without it 'ij' is used",
            UserWarning,
            stacklevel=2,
        )
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    _check_grid_inputs("meshgrid", tensors)
    swap = indexing == "xy" and len(tensors) > 1
    order = [1, 0, *range(2, len(tensors))] if swap else list(range(len(tensors)))
    shape = tuple(tensors[i].numel() for i in order)
    if tensors:
        check_ndim("meshgrid", shape, tensors[0].backend)
    grids = [
        mv.expand(mv.reshape(tensors[i], [-1 if j == k else 1 for j in range(len(order))]), shape)
        for k, i in enumerate(order)
    ]
    return tuple(grids[order.index(i)] for i in range(len(tensors)))


def _check_grid_inputs(op: str, tensors: Sequence[Tensor]) -> None:
    for t in tensors:
        if t.ndim > 1 or t.dtype is not tensors[0].dtype:
            raise RuntimeError(
                f"{op}: expects 0-d or 1-d tensors of one dtype, got "
                f"{', '.join(f'{list(u.shape)} {u.dtype.name}' for u in tensors)}"
            )


def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Every combination of one element from each 1-d tensor, as rows (N, len(tensors))."""
    if len(tensors) == 1:
        return tensors[0]
    _check_grid_inputs("cartesian_prod", tensors)
    # meshgrid's flattened grids, each built in three dimensions however many tensors.
    sizes = [t.numel() for t in tensors]
    columns = []
    for i, t in enumerate(tensors):
        before, after = math.prod(sizes[:i]), math.prod(sizes[i + 1 :])
        grid = mv.expand(mv.reshape(t, (1, sizes[i], 1)), (before, sizes[i], after))
        columns.append(mv.reshape(grid, (before * sizes[i] * after,)))
    return mv.stack(columns, 1)


# Repeats, tiles, differences


def _repeat_indices(repeats: Tensor, output_size: int | None) -> Tensor:
    """``i`` repeated ``repeats[i]`` times, for a 1-d integer ``repeats`` (computed on the host:
    the output's size depends on the values)."""
    if repeats.ndim != 1 or repeats.dtype.kind not in "iu":
        raise RuntimeError(
            "repeat_interleave: repeats must be a 1-d integer tensor, got shape "
            f"{list(repeats.shape)} {repeats.dtype.name}"
        )
    counts = repeats.backend.to_host(repeats.native)
    if (counts < 0).any():
        raise RuntimeError(f"repeat_interleave: repeats can not be negative, got {counts}")
    if output_size is not None and output_size != counts.sum():
        raise RuntimeError(
            f"repeat_interleave: output_size {output_size} != sum of repeats {counts.sum()}"
        )
    host = np.repeat(np.arange(counts.size), counts)
    return cr.tensor(host, dtype=repeats.dtype, device=repeats)


def repeat_interleave(
    input: Tensor,
    repeats: Any = None,
    dim: int | None = None,
    *,
    output_size: int | None = None,
    **aliases: Any,
) -> Tensor:
    """Each element (slice along ``dim``; ``dim=None`` flattens) repeated ``repeats`` times;
    ``repeat_interleave(repeats)`` alone gives the indices ``i`` repeated ``repeats[i]``."""
    if aliases:
        dim = mv.dim_alias("repeat_interleave", aliases, dim, None)
    if repeats is None:
        return _repeat_indices(input, output_size)
    if dim is None:
        input, dim = mv.flatten(input), 0
    d = _axis(dim, input.ndim, "repeat_interleave")
    if isinstance(repeats, Tensor) and repeats.numel() == 1:
        repeats = repeats.item()
    if isinstance(repeats, Tensor):
        check_backends("repeat_interleave", (input, repeats))
        if repeats.shape != (input.shape[d],):
            raise RuntimeError(
                f"repeat_interleave: repeats of shape {list(repeats.shape)} must have the size "
                f"({input.shape[d]}) of dimension {dim} of the input of shape {list(input.shape)}"
            )
        index = ew.cast(_repeat_indices(repeats, output_size), dtypes.int64)
        return ix.take_along(input, d, index)
    if repeats < 0:
        raise RuntimeError(f"repeat_interleave: repeats can not be negative, got {repeats}")
    shape = input.shape or (1,)
    if output_size is not None and output_size != shape[d] * repeats:
        raise RuntimeError(
            f"repeat_interleave: Invalid output_size, expected {shape[d] * repeats} but got "
            f"{output_size} (the size {shape[d]} of dimension {dim} times repeats={repeats})"
        )
    # Three dimensions whatever the rank: (before and along d, the copies, after d).
    lead, rest = math.prod(shape[: d + 1]), math.prod(shape[d + 1 :])
    copies = mv.expand(mv.reshape(input, (lead, 1, rest)), (lead, repeats, rest))
    return mv.reshape(copies, (*shape[:d], shape[d] * repeats, *shape[d + 1 :]))


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``input`` repeated ``dims[i]`` times along each dimension; ``dims`` shorter than the
    input counts from the last dimension (missing ones are 1)."""
    dims = tuple(dims)
    return mv.repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def diff(
    input: Tensor,
    n: int = 1,
    dim: int = -1,
    prepend: Tensor | None = None,
    append: Tensor | None = None,
    **aliases: Any,
) -> Tensor:
    """The ``n``-th forward difference along ``dim`` (``!=`` for bool), after joining
    ``prepend`` and ``append`` to ``input`` there."""
    if aliases:
        dim = mv.dim_alias("diff", aliases, dim, -1)
    if input.ndim == 0:
        raise RuntimeError("diff: expects input to be at least one-dimensional, got a 0-d tensor")
    if n < 0:
        raise RuntimeError(f"diff: order must be non-negative, got {n}")
    d = _axis(dim, input.ndim, "diff")
    x = mv.cat([t for t in (prepend, input, append) if t is not None], d)
    for _ in range(min(n, x.shape[d])):
        ahead, behind = mv.narrow(x, d, 1, x.shape[d] - 1), mv.narrow(x, d, 0, x.shape[d] - 1)
        x = ew.ne(ahead, behind) if x.dtype is dtypes.bool_ else ew.sub(ahead, behind)
    return x


# Products


def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: block ``(i, ...)`` of the result is ``input[i, ...] * other``."""
    ndim = max(input.ndim, other.ndim)
    a_shape = (1,) * (ndim - input.ndim) + input.shape
    b_shape = (1,) * (ndim - other.ndim) + other.shape
    shape = tuple(m * n for m, n in zip(a_shape, b_shape))
    # The product input[i0, i1, ...] * other[j0, j1, ...] laid out (i0, j0, i1, j1, ...) is the
    # result; there size-1 dimensions are dropped and neighbours from one operand merged.
    runs: list[list[int]] = []  # [operand (0: input, 1: other), size]
    for sizes in zip(a_shape, b_shape):
        for owner, n in enumerate(sizes):
            if n == 1:
                continue
            if runs and runs[-1][0] == owner:
                runs[-1][1] *= n
            else:
                runs.append([owner, n])
    limit = max_ndim(input.backend)
    if limit is not None and len(runs) > limit:
        # Each element of input spread over a block of other's shape, times other tiled.
        spread = mv.reshape(input, a_shape)
        for d, n in enumerate(b_shape):
            spread = repeat_interleave(spread, n, d) if n != 1 else spread
        out = ew.mul(spread, mv.repeat(other, a_shape))
    else:
        a = mv.reshape(input, tuple(n if owner == 0 else 1 for owner, n in runs))
        b = mv.reshape(other, tuple(n if owner == 1 else 1 for owner, n in runs))
        out = mv.reshape(ew.mul(a, b), shape)
    return labelled(out, "UnsafeViewBackward0", input, other)  # (PyTorch's product, viewed)


def _contracted_dims(a: Tensor, b: Tensor, dims: Any) -> tuple[list[int], list[int]]:
    """``tensordot``'s ``dims`` as two lists of dimensions, in the forms PyTorch takes: an int
    (or a tensor of one element), a pair of int lists as a tuple or list, a 2 x k tensor."""
    if isinstance(dims, Tensor):
        if dims.numel() > 1:
            if dims.shape[0] != 2:
                raise AssertionError(
                    f"tensordot: a dims tensor must have size 2 in its first dimension, got "
                    f"{dims.shape[0]}"
                )
            dims = (dims[0].tolist(), dims[1].tolist())
        else:
            dims = int(dims.item())
            if dims < 0:
                raise RuntimeError(f"tensordot: expects dims >= 0, got {dims}")
            return _pair(a, b, list(range(-dims, 0)), list(range(dims)))
    elif isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot: expects dims >= 0, got {dims}")
        if dims > min(a.ndim, b.ndim):
            raise RuntimeError(
                f"tensordot: expects dims <= the dimensions of both operands ({a.ndim} and "
                f"{b.ndim}), got dims={dims}"
            )
        return list(range(a.ndim - dims, a.ndim)), list(range(dims))
    elif not isinstance(dims, (tuple, list)):
        raise RuntimeError(
            "tensordot: expects dims to be an int, a tensor, or two lists of dimensions "
            f"(a tuple or list of two lists), but got dims={dims!r}"
        )
    dims_a, dims_b = dims
    return _pair(a, b, _int_list(dims_a, "dims_self", 3), _int_list(dims_b, "dims_other", 4))


def _int_list(dims: Any, name: str, position: int) -> list[int]:
    """One of the two lists of dimensions: a tuple or list of ints (NumPy ints and integer
    tensors of one element too, not bools), as PyTorch's int-list arguments take."""
    if not isinstance(dims, (tuple, list)):
        raise TypeError(
            f"tensordot(): argument '{name}' (position {position}) must be tuple of ints, not "
            f"{type(dims).__name__}"
        )
    for i, d in enumerate(dims):
        if isinstance(d, Tensor):
            ok = d.numel() == 1 and d.dtype.kind in "iu"
        else:
            ok = not isinstance(d, bool) and hasattr(type(d), "__index__")
        if not ok:
            raise TypeError(
                f"tensordot(): argument '{name}' (position {position}) must be tuple of ints, "
                f"but found element of type {type(d).__name__} at pos {i}"
            )
    return [int(d) for d in dims]


def _pair(a: Tensor, b: Tensor, dims_a: list, dims_b: list) -> tuple[list[int], list[int]]:
    if len(dims_a) != len(dims_b):
        raise RuntimeError(
            f"tensordot: both dimension lists should have same length, got {dims_a} and {dims_b}"
        )
    return (
        [_axis(d, a.ndim, "tensordot") for d in dims_a],
        [_axis(d, b.ndim, "tensordot") for d in dims_b],
    )


def tensordot(a: Tensor, b: Tensor, dims: Any = 2) -> Tensor:
    """The sum of products over dimensions ``dims`` (the last ``dims`` of ``a`` and first of
    ``b``, or a pair of lists); the result has ``a``'s free dimensions, then ``b``'s."""
    la.check_same_dtype("tensordot", a, b)
    dims_a, dims_b = _contracted_dims(a, b, dims)
    for i, j in zip(dims_a, dims_b):
        # A dimension of size 1 broadcasts against the other's: that one is summed first.
        if b.shape[j] == 1 and a.shape[i] != 1:
            a = rd.sum(a, i, keepdim=True, dtype=a.dtype)
        elif a.shape[i] == 1 and b.shape[j] != 1:
            b = rd.sum(b, j, keepdim=True, dtype=b.dtype)
        elif a.shape[i] != b.shape[j]:
            raise RuntimeError(
                f"tensordot: contracted dimensions need to match, but first has size "
                f"{a.shape[i]} in dim {i} and second has size {b.shape[j]} in dim {j}"
            )
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    k = math.prod(a.shape[d] for d in dims_a)
    left = mv.reshape(mv.permute(a, free_a + dims_a), (_size(a, free_a), k))
    right = mv.reshape(mv.permute(b, dims_b + free_b), (k, _size(b, free_b)))
    shape = tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b)
    # PyTorch's last step is a view of the product, also where the shape does not change
    return labelled(mv.reshape(la.matmul(left, right), shape), "ViewBackward0", a, b)


def _size(x: Tensor, dims: list[int]) -> int:
    return math.prod(x.shape[d] for d in dims)


def check_cross_dtypes(fn: str, input: Tensor, other: Tensor) -> None:  # noqa: A002
    """Refuse operands of two dtypes, as PyTorch's cross kernel does (it never promotes)."""
    if input.dtype != other.dtype:
        raise RuntimeError(
            f"{fn}: expected both inputs of one dtype, got {input.dtype} and "
            f"{other.dtype}; convert one of them (e.g. other.to(input.dtype))"
        )


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (default, deprecated in PyTorch: the first
    dimension of size 3), operands broadcast together."""
    if input.ndim != other.ndim:
        raise RuntimeError(
            f"cross: inputs must have the same number of dimensions, got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    check_cross_dtypes("cross", input, other)
    shape = broadcast_shapes("cross", input.shape, other.shape)
    a, b = mv.expand(input, shape), mv.expand(other, shape)
    if dim is None:
        warnings.warn(
            "cross: pass dim; without it the first dimension of size 3 is used",
            UserWarning,
            stacklevel=2,
        )
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError(f"cross: no dimension of size 3 in input of shape {list(shape)}")
    d = _axis(dim, len(shape), "cross")
    if shape[d] != 3:
        raise RuntimeError(
            f"cross: inputs dimension {dim} must have length 3, got shapes "
            f"{list(input.shape)} and {list(other.shape)}"
        )
    a1, a2 = mv.roll(a, -1, d), mv.roll(a, -2, d)
    b1, b2 = mv.roll(b, -1, d), mv.roll(b, -2, d)
    return labelled(ew.sub(ew.mul(a1, b2), ew.mul(a2, b1)), "LinalgCrossBackward0", input, other)


# Pairwise distances


def _root(total: Tensor, p: float) -> Tensor:
    """``total ** (1 / p)`` with a zero gradient where ``total`` is 0, as PyTorch's cdist has
    (the plain power's infinite slope times a zero difference would give NaN)."""
    zero = ew.eq(total, 0)
    return ew.where(zero, 0.0, ew.pow(ew.where(zero, 1.0, total), 1.0 / p))


def _check_cdist(x1: Tensor, x2: Tensor, p: float, compute_mode: str) -> None:
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dtype.kind != "f":
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got {x.dtype}")
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got {x.ndim}D")
    if x1.dtype is not x2.dtype:  # PyTorch's kernel takes one dtype
        raise RuntimeError(
            f"cdist: X1 and X2 must have one dtype, got {x1.dtype.name} and {x2.dtype.name}; "
            "convert one with .to(...)"
        )
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"cdist: X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} "
            f"X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if compute_mode not in _EUCLID_MODES:
        raise ValueError(f"cdist: {compute_mode} is not a valid value for compute_mode")


def _squared_euclidean_by_mm(x1: Tensor, x2: Tensor) -> Tensor:
    """``|x|^2 + |y|^2 - 2 x.y`` for every pair: one matmul, PyTorch's fast path."""
    sq1 = mv.unsqueeze(rd.sum(ew.mul(x1, x1), -1), -1)
    sq2 = mv.unsqueeze(rd.sum(ew.mul(x2, x2), -1), -2)
    return ew.sub(ew.add(sq1, sq2), ew.mul(la.matmul(x1, mv.transpose(x2, -1, -2)), 2))


def cdist(
    x1: Tensor,
    x2: Tensor,
    p: float = 2.0,
    compute_mode: str = "use_mm_for_euclid_dist_if_necessary",
) -> Tensor:
    """The ``p``-norm distance between each row of ``x1`` (..., P, M) and each row of ``x2``
    (..., R, M), batch dimensions broadcast: (..., P, R)."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32): in
        # float32 throughout, its matmul path too (PyTorch's kernel runs below autocast)
        return outside_autocast(cdist, *float32_operands(x1, x2), p, compute_mode)
    _check_cdist(x1, x2, p, compute_mode)
    batch = broadcast_shapes("cdist", x1.shape[:-2], x2.shape[:-2])
    x1 = mv.expand(x1, (*batch, *x1.shape[-2:]))
    x2 = mv.expand(x2, (*batch, *x2.shape[-2:]))
    rows, cols = x1.shape[-2], x2.shape[-2]
    by_mm = compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == _EUCLID_MODES[0] and (rows > 25 or cols > 25)
    )
    if p == 2 and by_mm and x1.shape[-1]:  # (no columns: 0 below as PyTorch's, not 1e-15)
        # PyTorch clamps at 1e-30 before the root: equal points get 1e-15 and a 0 gradient.
        out = ew.sqrt(ew.clamp(_squared_euclidean_by_mm(x1, x2), min=1e-30))
        return labelled(out, "CdistBackward0", x1, x2)
    half = x1.dtype in (dtypes.float16, dtypes.bfloat16)
    if half and x1.backend.device.kind == "cpu" and x1.numel() and x2.numel():
        # PyTorch's CPU kernel off the matmul path has no half types (empty operands skip it).
        name = dtypes.SCALAR_TYPE_NAMES[x1.dtype.name]
        raise NotImplementedError(f"\"cdist\" not implemented for '{name}'")
    # The gaps have one dimension more than the result: a batch of several dimensions is
    # merged into one, so that they have at most four.
    if len(batch) > 1:
        x1 = mv.reshape(x1, (math.prod(batch), rows, x1.shape[-1]))
        x2 = mv.reshape(x2, (math.prod(batch), cols, x2.shape[-1]))
    with no_grad():
        value = _gap_norm(ew.abs(ew.sub(mv.unsqueeze(x1, -2), mv.unsqueeze(x2, -3))), p)
    # One node keeping its output, as PyTorch's CdistBackward0 saves its result: its rule
    # (autograd/linalg_rules.py) reads it, and a write through ``.data`` reaches it (kept as
    # linalg/primitives.py keeps a one-output node's, beside ``p``)
    native = value.native
    out = apply("cdist", native, value.dtype, (x1, x2), (p, None, native, value.dtype))
    if SAVED_TENSORS_HOOKS and out._node is not None and out._node.op == "cdist":
        # (PyTorch's CdistBackward0 packs its result too: the rule reads what unpack gives)
        from tensorweaver.autograd.graph import pack_saved

        node = out._node
        node.saved = (p, None, out, value.dtype)
        pack_saved(node, 2, out)
    out = mv.reshape(out, (*batch, rows, cols)) if len(batch) > 1 else out
    return labelled(out, "CdistBackward0", x1, x2)


def _gap_norm(gaps: Tensor, p: float) -> Tensor:
    """The ``p``-norm over the last dimension of the absolute differences ``gaps``."""
    if gaps.shape[-1] == 0 or p == 0:
        # The count of nonzero gaps, built from ``gaps`` so that (as in PyTorch) it takes
        # part in autograd, with a zero gradient.
        return rd.sum(ew.where(ew.ne(gaps, 0), 1.0, ew.mul(gaps, 0)), -1)
    if p == 1:
        return rd.sum(gaps, -1)
    if p == math.inf:
        return rd.amax(gaps, -1)
    if p < 1:  # a zero gap's power has an infinite slope: PyTorch gives it a zero gradient
        zero = ew.eq(gaps, 0)
        return _root(rd.sum(ew.where(zero, 0.0, ew.pow(ew.where(zero, 1.0, gaps), p)), -1), p)
    return _root(rd.sum(ew.pow(gaps, p), -1), p)
