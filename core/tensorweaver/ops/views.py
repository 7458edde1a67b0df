"""Views that write back: an in-place change made through a view reaches the tensor it views.

PyTorch code writes through views all the time (``x[0].zero_()``, ``w.view(-1)[i] = v``,
``for row in x: row.mul_(2)``). The IR is functional, so a view here holds its own array;
what makes such code work is that every public view op (basic indexing, ``narrow``,
``split``/``chunk``/``unbind``, the reshape family, ``permute``/``transpose``/``t``) records
on its result how to write a new value back into its base. An in-place method ends in
``Tensor._assign``, which then updates the base the same way ``base[index] = value`` or
``base.copy_(...)`` would: differentiably, with the base's version bumped, and on up a
chain of views. Advanced indexing copies, as in PyTorch, so writes to its result stay there.

Differs from PyTorch: a view sees the base as it was when the view was taken, so an
in-place change made to the base (or through another view) afterwards is not visible in
an older view, where PyTorch's shared memory would show it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from numbers import Integral
from typing import Any

from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.tensor import Tensor, _axis

Write = Callable[[Tensor, Tensor], Any]


def _viewing(out: Tensor, base: Tensor, write: Write) -> Tensor:
    """``out``, marked as a view of ``base`` that ``write(base, value)`` writes back to."""
    if out is not base:
        out._view_of = (base, write)
    return out


def _write_at(index: Any) -> Write:
    return lambda base, value: ix.setitem(base, index, value)


def _write_along(d: int, key: int | slice) -> Write:
    """Writes back into ``base[..., key]`` with ``key`` on axis ``d``."""
    return _write_at((slice(None),) * d + (key,))


def _write_reshaped(base: Tensor, value: Tensor) -> Any:
    return base.copy_(mv.reshape(value, base.shape))


def _is_basic(index: Any) -> bool:
    """Ints, slices, None and Ellipsis only: the selections PyTorch returns as views."""
    entries = index if type(index) is tuple else (index,)
    return all(e is None or e is Ellipsis or type(e) in (int, slice) for e in entries)


def _as_int(entry: Any) -> Any:
    """A NumPy integer, another ``__index__`` integer or a 0-d int32/int64 tensor as the
    int PyTorch indexes with (so the result is a view); any other entry as it is."""
    if isinstance(entry, Tensor):
        return int(entry) if not entry.shape and entry.dtype in ix._POSITIONS else entry
    if isinstance(entry, Integral) and not isinstance(entry, bool):
        return operator.index(entry)
    return entry


def getitem(x: Tensor, index: Any) -> Tensor:
    if not _is_basic(index):
        if type(index) is tuple:
            index = tuple([_as_int(e) for e in index])
        else:
            index = _as_int(index)
    out = ix.getitem(x, index)
    return _viewing(out, x, _write_at(index)) if _is_basic(index) else out


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    out = mv.narrow(x, dim, start, length)
    d = _axis(dim, x.ndim, "narrow")
    start = start + x.shape[d] if start < 0 else start
    return _viewing(out, x, _write_along(d, slice(start, start + length)))


def _pieces(x: Tensor, pieces: tuple[Tensor, ...], d: int) -> tuple[Tensor, ...]:
    """``pieces`` cut in order along axis ``d`` of ``x``, each marked as a view of its part."""
    start = 0
    for piece in pieces:
        size = piece.shape[d]
        _viewing(piece, x, _write_along(d, slice(start, start + size)))
        start += size
    return pieces


def split(x: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    return _pieces(x, mv.split(x, split_size_or_sections, dim), _axis(dim, x.ndim, "split"))


def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    return _pieces(x, mv.chunk(x, chunks, dim), _axis(dim, x.ndim, "chunk"))


def unbind(x: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    d = _axis(dim, x.ndim, "unbind")
    pieces = mv.unbind(x, dim)
    for i, piece in enumerate(pieces):
        _viewing(piece, x, _write_along(d, i))
    return pieces


def _reshaping(op: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def view_op(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return _viewing(op(x, *args, **kwargs), x, _write_reshaped)

    view_op.__name__ = view_op.__qualname__ = op.__name__
    view_op.__doc__ = op.__doc__
    return view_op


reshape = _reshaping(mv.reshape)
flatten = _reshaping(mv.flatten)
unflatten = _reshaping(mv.unflatten)
squeeze = _reshaping(mv.squeeze)
unsqueeze = _reshaping(mv.unsqueeze)


def view_as(x: Tensor, other: Tensor) -> Tensor:
    return reshape(x, other.shape)


def permute(x: Tensor, *dims: Any) -> Tensor:
    perm = mv.permutation(x, dims)
    out = mv.permuted(x, perm)
    inverse = [0] * len(perm)
    for i, d in enumerate(perm):
        inverse[d] = i
    back = tuple(inverse)
    return _viewing(out, x, lambda base, value: base.copy_(mv.permuted(value, back)))


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    out = mv.transpose(x, dim0, dim1)
    return _viewing(out, x, lambda base, value: base.copy_(mv.transpose(value, dim0, dim1)))


def t(x: Tensor) -> Tensor:
    out = mv.t(x)
    return _viewing(out, x, lambda base, value: base.copy_(mv.t(value)))
