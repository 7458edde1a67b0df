"""Views that behave as PyTorch's: writes through them reach their base, and they follow
later changes of it.

PyTorch code writes through views all the time (``x[0].zero_()``, ``w.view(-1)[i] = v``,
``for row in x: row.mul_(2)``) and reads views after changing their base (``v = x[1:];
x.add_(1)``). The IR is functional, so a view here holds its own array; every public view
op (basic indexing, ``narrow``, ``split``/``chunk``/``unbind``, the reshape family,
``permute``/``transpose``/``t``, ``expand``) records on its result how to write a new value
back into its base, and registers the result with the base together with how to read it
again. An in-place method ends in ``Tensor._assign``, which updates the base the same way
``base[index] = value`` or ``base.copy_(...)`` would (differentiably, with the base's
version bumped, and on up a chain of views); the base then reads its other live views again
(``Tensor._refresh_views``). Advanced indexing copies, as in PyTorch, so writes to its result
stay there.

A ``reshape`` is a view where the backend's reshape shares its input's memory (NumPy and
torch decide it by PyTorch's stride rule), else a copy, as in PyTorch.

Differs from PyTorch: ``view`` of a tensor its strides cannot view copies instead of raising;
where a backend lays an op's result out otherwise than PyTorch would (NumPy's result of some
ops is not C-contiguous), a ``reshape`` of it may copy where PyTorch's views (its result then
does not follow later changes of its input); on a backend that cannot tell (cuPyNumeric), every
``reshape`` is a view; a write through ``expand()``'s repeated elements other than ``fill_``
(``masked_fill_`` included, deprecated in PyTorch) raises; ``unfold`` copies.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from numbers import Integral
from typing import Any

from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.tensor import Tensor, _axis, _write_overlapping

Write = Callable[[Tensor, Tensor], Any]
Read = Callable[[Tensor], Tensor]


def as_view(
    out: Tensor, base: Tensor, write: Write, read: Read, region: tuple | None = None
) -> Tensor:
    """``out``, marked as a view of ``base`` that ``write(base, value)`` writes back to and
    ``read(base)`` computes again after a change of ``base``; ``region``: the ``(axis,
    start, stop)`` run of ``base`` it holds, where it is one (``write`` is then its own)."""
    if out is not base:
        if region is not None:
            write.region = region  # type: ignore[attr-defined]
        out._view_of = (base, write)
        base._follow(out, read, region)
    return out


def _region(index: Any, shape: tuple) -> tuple | None:
    """The ``(axis, start, stop)`` run a basic index selects: every element of every axis but
    one, and a run of that one (``x[i]``, ``x[a:b]``, ``x[:, i]``); else None."""
    entries = index if type(index) is tuple else (index,)
    found = None
    for d, entry in enumerate(entries):
        if type(entry) is slice and entry == _ALL:
            continue
        if found is not None or d >= len(shape):
            return None
        if type(entry) is int:
            i = entry + shape[d] if entry < 0 else entry
            found = (d, i, i + 1)
        elif type(entry) is slice:
            start, stop, step = entry.indices(shape[d])
            if step != 1:
                return None
            found = (d, start, max(start, stop))
        else:  # None or Ellipsis
            return None
    return found


_ALL = slice(None)


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
    for e in entries:  # a loop, not all() of a generator: half the cost of x[i] here
        if not (e is None or e is Ellipsis or type(e) in (int, slice)):
            return False
    return True


def _as_int(entry: Any) -> Any:
    """A NumPy integer, another ``__index__`` integer or a 0-d int32/int64 tensor as the
    int PyTorch indexes with (so the result is a view); any other entry as it is."""
    if isinstance(entry, Tensor):
        return int(entry) if not entry.shape and entry.dtype in ix._POSITIONS else entry
    if isinstance(entry, Integral) and not isinstance(entry, bool):
        return operator.index(entry)
    return entry


def getitem(x: Tensor, index: Any) -> Tensor:
    if type(index) is list:
        index = ix.sequence_as_tuple(index)
    basic = _is_basic(index)
    if not basic:
        if type(index) is tuple:
            index = tuple([_as_int(e) for e in index])
        else:
            index = _as_int(index)
        basic = _is_basic(index)
    out = ix.getitem(x, index)
    if not basic:
        return out
    read = lambda base: ix.getitem(base, index)  # noqa: E731
    return as_view(out, x, _write_at(index), read, _region(index, x.shape))


def narrow(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    out = mv.narrow(x, dim, start, length)
    d = _axis(dim, x.ndim, "narrow")
    start = start + x.shape[d] if start < 0 else start
    return as_view(
        out,
        x,
        _write_along(d, slice(start, start + length)),
        lambda base: mv.narrow(base, d, start, length),
        (d, start, start + length),
    )


def _pieces(x: Tensor, pieces: tuple[Tensor, ...], d: int) -> tuple[Tensor, ...]:
    """``pieces`` cut in order along axis ``d`` of ``x``, each marked as a view of its part."""
    start = 0
    for piece in pieces:
        size = piece.shape[d]
        write = _write_along(d, slice(start, start + size))
        as_view(piece, x, write, _narrowing(d, start, size), (d, start, start + size))
        start += size
    return pieces


def _narrowing(d: int, start: int, size: int) -> Read:
    return lambda base: mv.narrow(base, d, start, size)


def split(x: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    return _pieces(x, mv.split(x, split_size_or_sections, dim), _axis(dim, x.ndim, "split"))


def chunk(x: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    return _pieces(x, mv.chunk(x, chunks, dim), _axis(dim, x.ndim, "chunk"))


def unbind(x: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    d = _axis(dim, x.ndim, "unbind")
    pieces = mv.unbind(x, dim)
    for i, piece in enumerate(pieces):
        key = (slice(None),) * d + (i,)
        as_view(piece, x, _write_at(key), _selecting(key), (d, i, i + 1))
    return pieces


def _selecting(index: tuple) -> Read:
    return lambda base: ix.getitem(base, index)


def _reshaping(op: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def view_op(x: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        out = op(x, *args, **kwargs)
        if out is x or not _same_memory(x, out):
            return out  # x itself, or a copy (PyTorch's reshape where strides cannot view)
        shape = out.shape
        return as_view(out, x, _write_reshaped, lambda base: mv.reshape(base, shape))

    view_op.__name__ = view_op.__qualname__ = op.__name__
    view_op.__doc__ = op.__doc__
    return view_op


def _same_memory(x: Tensor, out: Tensor) -> bool:
    """Whether the backend's ``out`` uses ``x``'s memory (its reshape viewed rather than
    copied, by the same stride rule as PyTorch's), or the backend cannot tell."""
    storage = getattr(x.backend, "storage", None)
    if storage is None:
        return True
    mine, its = storage(x.native), storage(out.native)
    return mine is None or its is None or mine is its


reshape = _reshaping(mv.reshape)
flatten = _reshaping(mv.flatten)
unflatten = _reshaping(mv.unflatten)
squeeze = _reshaping(mv.squeeze)
unsqueeze = _reshaping(mv.unsqueeze)


def view_as(x: Tensor, other: Tensor) -> Tensor:
    return reshape(x, other.shape)


def permute(x: Tensor, *dims: Any) -> Tensor:
    perm = mv.permutation(x, dims)
    return permuted(x, mv.permuted(x, perm), perm)


def permuted(x: Tensor, out: Tensor, perm: tuple[int, ...]) -> Tensor:
    """``out``, which is ``x`` with its axes in the order ``perm``, as a view of ``x``."""
    inverse = [0] * len(perm)
    for i, d in enumerate(perm):
        inverse[d] = i
    back = tuple(inverse)
    return as_view(
        out,
        x,
        lambda base, value: base.copy_(mv.permuted(value, back)),
        lambda base: mv.permuted(base, perm),
    )


def movedim(x: Tensor, source: Any, destination: Any) -> Tensor:
    return as_view(
        mv.movedim(x, source, destination),
        x,
        lambda base, value: base.copy_(mv.movedim(value, destination, source)),
        lambda base: mv.movedim(base, source, destination),
    )


def transpose(x: Tensor, dim0: int, dim1: int) -> Tensor:
    out = mv.transpose(x, dim0, dim1)
    return as_view(
        out,
        x,
        lambda base, value: base.copy_(mv.transpose(value, dim0, dim1)),
        lambda base: mv.transpose(base, dim0, dim1),
    )


def t(x: Tensor) -> Tensor:
    out = mv.t(x)
    return as_view(out, x, lambda base, value: base.copy_(mv.t(value)), mv.t)


def expand(x: Tensor, *sizes: Any) -> Tensor:
    out = mv.expand(x, *sizes)
    return _expanded(out, x)


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    return _expanded(mv.expand_as(x, other), x)


def broadcast_to(x: Tensor, shape: Any) -> Tensor:
    return _expanded(mv.broadcast_to(x, shape), x)


def _expanded(out: Tensor, x: Tensor) -> Tensor:
    """``out`` (``x`` expanded) as a view of ``x``; one that repeats an element of ``x``
    refuses in-place writes of its own, as PyTorch's does (``ix.setitem`` writes a selection
    of it that repeats none into ``x``)."""
    shape = out.shape
    if not out.numel():
        write: Write = _write_nothing
    else:
        write = _write_overlapping if out.numel() != x.numel() else _write_reshaped
    return as_view(out, x, write, lambda base: mv.expand(base, shape))


def _write_nothing(base: Tensor, value: Tensor) -> None:
    """An empty view holds none of its base's elements."""
