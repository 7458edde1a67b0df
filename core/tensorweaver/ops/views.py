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
torch decide it by PyTorch's stride rule), else a copy, as in PyTorch. After a write through
a view, the view holds its base's view of the new values again (and a base written by a
``copy_`` keeps its memory layout), so strides stay PyTorch's.

``as_strided`` and ``unfold`` (here, as :func:`unfold`) view the memory itself (the base's
elements at the positions its strides give, :class:`Memory`); ``real``/``imag``,
``view_as_real``/``view_as_complex`` and ``view(dtype)`` are views of their input too, and
so is ``conj()`` (PyTorch's conjugate bit: :func:`conj`; ``mH``/``adjoint()`` are conj views
of a transpose).
Where a view holds an array of its own (those, and a ``diagonal``), its strides, storage
offset and address are PyTorch's in its base's memory (:func:`view_layout`), and so are those
of views of it (:func:`part_layout`); a ``reshape`` of it views or copies by those strides,
and an ``as_strided``/``unfold`` of it views its base's memory (:class:`Memory`).

Differs from PyTorch: where a backend lays an op's result out otherwise than PyTorch would
(NumPy's result of some ops is not C-contiguous), a ``reshape`` of it may copy where
PyTorch's views, or view where PyTorch's copies, and its ``view`` (or a view of it) that the
backend must copy is a view writing back into it, also where PyTorch raises (``view`` of a
view of a contiguous tensor raises as PyTorch's); ``numpy()`` of a view that holds a memory
position twice (overlapping ``unfold`` windows) is an array of its own, not its base's
memory (any other view's is its base's, ops/host_strided_views.py); a new axis's stride
(``unsqueeze``, None indexing) is PyTorch's on a view, the backend's after ``unsqueeze_`` of
a tensor that is no view; on a backend that cannot tell (cuPyNumeric), every ``reshape`` is
a view; ``x[mask] = v`` through ``expand()``'s repeated elements raises (``masked_fill_``,
``index_fill_`` and ``index_put_`` write, as PyTorch's, with its deprecation warning), and
an ``index_put_(..., accumulate=True)`` there adds every value aimed at a location, as
PyTorch's (ops/index_write.py ``index_put_``); a
``conj()`` view holds the conjugated values in an array of its own (its strides are its
base's, and its ``numpy()`` and DLPack export raise, as PyTorch's), so reading it does not
see writes into its base's memory made through NumPy since it was read last (an in-place
change through it reads that memory again first: ``Tensor._catch_up_with_host``).
"""

from __future__ import annotations

import functools
import operator
import weakref
from collections.abc import Callable
from numbers import Integral
from typing import Any

from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.contract import dtypes
from tensorweaver.ops import complex as cx
from tensorweaver.ops import index as ix
from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import apply, labelled
from tensorweaver.tensor import (
    _HOST_SHARED,
    Tensor,
    _axis,
    _refusals_of_a_view_made_now,
    _root_requires_grad,
    _storage_of,
    _write_overlapping,
    _writes_through,
    index_argument,
)

Write = Callable[[Tensor, Tensor], Any]
Read = Callable[[Tensor], Tensor]


def as_view(
    out: Tensor,
    base: Tensor,
    write: Write,
    read: Read,
    region: tuple | None = None,
    piece: tuple[str, str] | None = None,
    origin: Tensor | None = None,
) -> Tensor:
    """``out``, marked as a view of ``base`` that ``write(base, value)`` writes back to and
    ``read(base)`` computes again after a change of ``base``; ``region``: the ``(axis,
    start, stop)`` run of ``base`` it holds, where it is one (``write`` is then its own, or
    one made for that run alone); ``piece``: PyTorch's errors for one of several views an op
    returns (:func:`_piece_errors`); ``origin``: the tensor the view was taken of, where
    ``base`` is the one whose memory that is."""
    if out is not base:
        if region is not None:
            write.region = region  # type: ignore[attr-defined]
        # A third item: PyTorch's errors for an in-place change of it with grad enabled, and
        # for its use in autograd after its base changed (a view made under no_grad, or one
        # of several views an op returned with grad; views of those inherit them).
        above = (base if origin is None else origin)._view_of
        refused = above[3] if above is not None and len(above) > 3 else None
        # (of a base without grad too: _assign refuses a write that would give it a history)
        if not is_grad_enabled():
            # (not a view(dtype), nor one of an inference tensor: PyTorch makes no view for
            # autograd there)
            if getattr(write, "part", None) != "bits" and not base._inference:
                refused = _refusals_of_a_view_made_now()
                # (PyTorch's view is one of the root base: of a leaf that is itself a view of
                # a tensor not requiring grad, a plain view that does not require grad)
                if out.dtype.kind in "fc" and _root_requires_grad(base):
                    # PyTorch's view made under no_grad still requires grad (a leaf
                    # without a history); other dtypes cannot
                    out._requires_grad = True
        elif piece is not None and not base._inference and out.dtype.kind in "fc":
            # (PyTorch makes the pieces of a base without grad as under no_grad; those of a
            # dtype that cannot require grad are no views for autograd: nothing refused)
            # (the slot first: the property, a view's root's flag, only for a view)
            grad = base._requires_grad or (base._view_of is not None and base.requires_grad)
            refused = piece if grad else _NO_GRAD_PIECE
        out._view_of = (base, write, read) if refused is None else (base, write, read, refused)
        if base._inference:  # (a view of an inference tensor is one, wherever it is made)
            out._inference = True
        # (PyTorch's view shares its base's version counter: it starts where the base is, and
        # each change of either moves both, through the write-back and the refresh; the own
        # parts, read off the slot: the writes into host-shared memory are added on reading,
        # the same for both but for a view that copied)
        out._own_version = base._own_version
        base._follow(out, read, region, None if refused is None else refused[1])
        if _HOST_SHARED and (id(base) in _HOST_SHARED or base._view_of is not None):
            _share_own_array(out, base)  # (not a conjugate's: holds_memory_values)
    return out


def _share_own_array(view: Tensor, base: Tensor) -> None:
    """Where ``view`` holds an array of its own (a diagonal, ``as_strided``, a complex part)
    of ``base``'s memory, which host code shares (``from_numpy``, ``numpy()``): that
    memory instead, so it sees the host's later writes as PyTorch's view does (also below
    a view with an array of its own, a ``conj()``'s: ``z.conj().conj()`` is ``z``'s memory)."""
    if _writes_through(base) or base._is_shared_view() or _host_shared_above(base):
        if _storage_of(view.backend, view.native) is not _storage_of(base.backend, base.native):
            from tensorweaver.ops.host_strided_views import share_with_host

            share_with_host(view)


def _host_shared_above(t: Tensor) -> bool:
    """Whether a tensor up ``t``'s chain of views writes into host-shared memory."""
    while t._view_of is not None:
        t = t._view_of[0]
        if _writes_through(t):
            return True
    return False


_MULTIPLE_VIEWS = (
    " This view is the output of a function that returns multiple views. Such functions do "
    "not allow the output views to be modified inplace. You should replace the inplace "
    "operation by an out-of-place one."
)
_PIECE_WRITTEN = "is a view and is being modified inplace." + _MULTIPLE_VIEWS
_PIECE_CHANGED = (
    "is a view and its base or another view of its base has been modified inplace."
    + _MULTIPLE_VIEWS
)
# (a piece of a base without grad: PyTorch's errors for a view made under no_grad, worded so)
_NO_GRAD_PIECE = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled."
    + _MULTIPLE_VIEWS,
    "A view was created in no_grad mode and its base or another view of its base has been "
    "modified inplace with grad mode enabled." + _MULTIPLE_VIEWS,
)


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
    """A NumPy integer, another ``__index__`` integer or a 0-d int8/16/32/64 tensor as the
    int PyTorch indexes with (so the result is a view); any other entry as it is."""
    if isinstance(entry, Tensor):
        return int(entry) if not entry.shape and entry.dtype in ix.SELECTING else entry
    if isinstance(entry, Integral) and not isinstance(entry, bool):
        return operator.index(entry)
    return entry


def getitem(x: Tensor, index: Any) -> Tensor:
    kind = type(index)
    if kind is int:  # x[i]: the commonest (a loop over a sequence's steps)
        out = ix.getitem(x, index)
        return as_view(out, x, *_picked(0, index, x._shape[0]))
    if kind is tuple and index and type(index[-1]) is int and _all_before_last(index):
        # x[:, i], x.select(d, i): one select too (an attention head, a gate, a time step)
        out = ix.getitem(x, index)
        d = len(index) - 1
        return as_view(out, x, *_picked(d, index[-1], x._shape[d]))
    if kind is list:
        index = ix.sequence_as_tuple(index)
    ix.check_steps(x, index)
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
    node = out._node
    if (
        node is not None
        and (node.op != "slice" or len(node.saved) != 2)
        and node.label is None
        and node not in SLICE_ARGUMENTS
    ):
        # (a select's node, x[:, i]'s, is PyTorch's own already: names.py; so are the last
        # node of a chain, ix._in_turn's, and a None's unsqueeze)
        labelled(out, _basic_index_name(index), x)
        if node.label == "SliceBackward0":
            SLICE_ARGUMENTS[node] = (index, x._shape)  # (read when asked: slice_arguments)
    read = lambda base: ix.getitem(base, index)  # noqa: E731
    write, region = _write_at(index), _region(index, x.shape)
    new_axis = index is None or (type(index) is tuple and None in index)
    # (an empty array holds no element to place it by: its storage offset from the index,
    # empty_view_layout, where no region tells it)
    empty = region is None and 0 in out._shape
    if new_axis or empty:
        read.torch_strides = lambda base: _indexed_strides(base, index)  # type: ignore[attr-defined]
        if empty:
            write.index = index  # type: ignore[attr-defined]
    return as_view(out, x, write, read, region)


def _indexed_strides(base: Tensor, index: Any) -> tuple:
    """PyTorch's strides of ``base[index]`` (a basic index with None in it, or an empty
    result): :func:`_indexed_layout`'s."""
    return _indexed_layout(tuple(base.shape), base.stride(), index)[0]


def _indexed_layout(shape: tuple, strides: tuple, index: Any) -> tuple[tuple, int]:
    """PyTorch's strides of ``base[index]`` (a basic index), of shape ``shape`` and strides
    ``strides``, and how far its first element lies past ``base``'s in memory: PyTorch
    applies the entries one by one, and a None is an ``unsqueeze`` there
    (:func:`_unsqueezed`); the backend's array gives a new axis a stride of its own rule,
    and an empty one (NumPy's) the address of the array it was taken of."""
    entries = index if type(index) is tuple else (index,)
    sizes, found = list(shape), list(strides)
    used = sum(1 for e in entries if e is not None and e is not Ellipsis)
    d = start = 0
    for e in entries:
        if e is None:
            _unsqueezed(sizes, found, d)
            d += 1
        elif e is Ellipsis:
            d += len(shape) - used
        elif type(e) is int:
            start += (e + sizes[d] if e < 0 else e) * found[d]
            del sizes[d], found[d]
        else:
            first, stop, step = e.indices(sizes[d])
            start += first * found[d]
            sizes[d], found[d] = len(range(first, stop, step)), found[d] * step
            d += 1
    return tuple(found), start


def _unsqueezed(sizes: list, strides: list, d: int) -> None:
    """A new axis of size 1 at ``d``, with PyTorch's stride for it: that of a step over the
    whole axis it goes before (1 at the end)."""
    strides.insert(d, sizes[d] * strides[d] if d < len(sizes) else 1)
    sizes.insert(d, 1)


#: The index and the indexed shape of each slice node made by indexing, from which
#: :func:`slice_arguments` reads the arguments PyTorch's SliceBackward0 saves (as given,
#: not as the node keeps them, clipped to the shape) for autograd/grad_fn.py.
SLICE_ARGUMENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

_INT64_MAX = (1 << 63) - 1  # (PyTorch's end of a slice with none given)
_UINT64 = 1 << 64  # (a negative bound shows as unsigned 64 bits in PyTorch)


def slice_arguments(index: Any, shape: tuple) -> tuple | None:
    """``(dim, start, end, step)`` that PyTorch's outermost SliceBackward0 of ``x[index]``
    saves (a basic index whose last entry that selects is a slice): its last slice that cuts
    its axis (one alone, whatever it cuts), at its axis of the result, as given; None if
    none."""
    if type(index) is not tuple:
        index = (index,)
        alone = True
    else:
        alone = False
    found = None
    dim = at = 0  # (the axis of the result, that of x)
    for e in index:
        if e is None:
            dim += 1
        elif e is Ellipsis:
            skipped = len(shape) - sum(1 for f in index if f is not None and f is not Ellipsis)
            dim += skipped
            at += skipped
        elif type(e) is int:  # (a select: PyTorch's slices after it see one axis fewer)
            at += 1
        else:
            if alone or not ix.skips_slice(e, shape[at]):
                start = 0 if e.start is None else e.start % _UINT64
                end = _INT64_MAX if e.stop is None else e.stop % _UINT64
                found = (dim, start, end, 1 if e.step is None else e.step)
            dim += 1
            at += 1
    return found


def _basic_index_name(index: Any) -> str:
    """PyTorch's grad_fn name for ``x[index]``: that of the view its last entry that selects
    something makes (PyTorch indexes entry by entry), an alias where none does."""
    if type(index) is not tuple:
        index = (index,)
        if index[0] == _ALL:
            return "SliceBackward0"  # x[:] alone is a slice in PyTorch
    for entry in reversed(index):
        if entry is None:
            return "UnsqueezeBackward0"
        if type(entry) is int:
            return "SelectBackward0"
        if type(entry) is slice and entry != _ALL:
            return "SliceBackward0"
    return "AliasBackward0"


def narrow(
    input: Tensor,
    dim: int = mv.REQUIRED,
    start: Any = mv.REQUIRED,
    length: int = mv.REQUIRED,
    **aliases: Any,
) -> Tensor:
    if aliases or dim is mv.REQUIRED or start is mv.REQUIRED or length is mv.REQUIRED:
        dim = mv.dim_alias("narrow", aliases, dim, start=start, length=length)
    start = mv.narrow_start(input, start)
    if type(length) is not int:  # (PyTorch's parser takes no bool; a NumPy integer, yes)
        length = index_argument(length, "narrow", "length")
    out = mv.narrow(input, dim, start, length)
    if out is input:  # (all of it: still a new view, SliceBackward0, as PyTorch's)
        out = apply("identity", input.native, input.dtype, (input,))
        out = labelled(out, "SliceBackward0", input)
    d = _axis(dim, input.ndim, "narrow")
    start = start + input.shape[d] if start < 0 else start
    # (as ints: a NumPy integer or 0-d tensor the op took would be a key of its own)
    write, read, region = _run(d, operator.index(start), length)
    return as_view(out, input, write, read, region)


# The write-backs and reads of views that are runs along one axis (narrow, split, chunk,
# unbind) depend on the run alone: made once per run, not per call, as these ops run on
# every step of a model (an LSTM's gates, attention's q, k and v). Nothing sets an
# attribute of them but their region, the run's own. (Fewer cuts than runs are kept: a cut
# holds a mark per piece; and only cuts of few pieces, mv.FEW_PIECES: larger ones are made
# per call, as a program that cuts sequences of varying length would keep them all.)
_RUNS, _CUTS = 4096, 128


@functools.lru_cache(maxsize=_RUNS)
def _run(d: int, start: int, size: int) -> tuple[Write, Read, tuple]:
    """The write-back, read and region of the view of ``size`` elements from ``start`` along
    axis ``d`` of its base."""
    region = (d, start, start + size)
    write = _write_along(d, slice(start, start + size))
    write.region = region  # type: ignore[attr-defined]
    return write, lambda base: mv.narrow(base, d, start, size), region


@functools.lru_cache(maxsize=_RUNS)
def _picked(d: int, index: int, n: int) -> tuple[Write, Read, tuple]:
    """The write-back, read and region of ``x[..., index]`` with ``index`` (in range) on
    axis ``d`` of ``x``, ``n`` long there (``x[index]`` for axis 0)."""
    i = index + n if index < 0 else index
    region = (d, i, i + 1)
    key = (slice(None),) * d + (index,) if d else index
    write = _write_at(key)
    write.region = region  # type: ignore[attr-defined]
    return write, lambda base: ix.getitem(base, key), region


def _all_before_last(index: tuple) -> bool:
    """Whether every entry of ``index`` but its last is a plain ``:``."""
    for e in index[:-1]:
        if type(e) is not slice or e.start is not None or e.stop is not None or e.step is not None:
            return False
    return True


@functools.lru_cache(maxsize=_RUNS)
def _piece_errors(op: str, i: int) -> tuple[str, str]:
    """PyTorch's errors for an in-place change of output ``i`` of ``op`` (``"Split"``), one of
    several views it returns, and for its use after a change of its base (:func:`as_view`)."""
    piece = f"Output {i} of {op}"
    return f"{piece} {_PIECE_WRITTEN}", f"{piece} {_PIECE_CHANGED}"


def _split_marks(
    d: int, sizes: tuple, op: str, run: Callable = _run, errors: Callable = _piece_errors
) -> tuple:
    """Per piece of sizes ``sizes`` cut in order along axis ``d`` by ``op`` (PyTorch's name:
    ``"Split"``, ``"SplitWithSizes"``): its write-back, read, region and errors
    (:func:`as_view`), made by ``run`` and ``errors``."""
    marks, start = [], 0
    for i, size in enumerate(sizes):
        marks.append((*run(d, start, size), errors(op, i)))
        start += size
    return tuple(marks)


_kept_split_marks = functools.lru_cache(maxsize=_CUTS)(_split_marks)


def _pieces(x: Tensor, pieces: tuple[Tensor, ...], d: int, op: str) -> tuple[Tensor, ...]:
    """``pieces`` cut in order along axis ``d`` of ``x`` by ``op`` (:func:`_split_marks`),
    each marked as a view of its part."""
    # (a piece that is all of x is still a view, as PyTorch's)
    pieces = tuple([apply("identity", x.native, x.dtype, (x,)) if p is x else p for p in pieces])
    sizes = tuple([p._shape[d] for p in pieces])
    if len(sizes) <= mv.FEW_PIECES:
        marks = _kept_split_marks(d, sizes, op)
    else:
        marks = _split_marks(d, sizes, op, _run.__wrapped__, _piece_errors.__wrapped__)
    for piece, (write, read, region, errors) in zip(pieces, marks):
        as_view(piece, x, write, read, region, errors)
    return pieces


def split(x: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    pieces = mv.split(x, split_size_or_sections, dim)
    # (PyTorch's pieces name their op: split_with_sizes where split got the sizes)
    op = "SplitWithSizes" if isinstance(split_size_or_sections, (list, tuple)) else "Split"
    return _pieces(x, pieces, _axis(dim, x.ndim, "split"), op)


def chunk(input: Tensor, chunks: int, dim: int = 0, **aliases: Any) -> tuple[Tensor, ...]:
    if aliases:
        dim = mv.dim_alias("chunk", aliases, dim, 0)
    pieces = mv.chunk(input, chunks, dim)
    d = _axis(dim, input.ndim, "chunk")
    # (PyTorch's chunk cuts an empty dimension with split_with_sizes, named so)
    return _pieces(input, pieces, d, "Split" if input._shape[d] else "SplitWithSizes")


def unbind(input: Tensor, dim: int = 0, **aliases: Any) -> tuple[Tensor, ...]:
    if aliases:
        dim = mv.dim_alias("unbind", aliases, dim, 0)
    pieces = mv.unbind(input, dim)
    d, n = _axis(dim, input.ndim, "unbind"), len(pieces)
    if n <= mv.FEW_PIECES:
        marks = _kept_unbind_marks(d, n)
    else:
        marks = _unbind_marks(d, n, _piece_errors.__wrapped__)
    for piece, (write, read, region, errors) in zip(pieces, marks):
        as_view(piece, input, write, read, region, errors)
    if len(pieces) == 1:  # (several share one node, named already: ops/several_outputs.py)
        labelled(pieces[0], "UnbindBackward0", input)
    return pieces


def _unbind_marks(d: int, n: int, errors: Callable = _piece_errors) -> tuple:
    """Per piece ``i`` of ``n`` that unbind cuts along axis ``d``: its write-back, read,
    region and errors (:func:`as_view`, made by ``errors``)."""
    marks = []
    for i in range(n):
        key = (slice(None),) * d + (i,)
        write = _write_at(key)
        write.region = (d, i, i + 1)  # type: ignore[attr-defined]
        read = lambda base, key=key: ix.getitem(base, key)  # noqa: E731
        marks.append((write, read, write.region, errors("Unbind", i)))
    return tuple(marks)


_kept_unbind_marks = functools.lru_cache(maxsize=_CUTS)(_unbind_marks)


def _reshaping(
    op: Callable[..., Tensor],
    keeps_self: bool = False,
    name: Callable[..., str] | None = None,
) -> Callable[..., Tensor]:
    """The view form of a shape change. One that keeps the shape is still a new tensor, a
    view with its own node, as PyTorch's (a gradient taken with respect to
    ``x.view_as(x)`` counted x's other uses too), but for ``keeps_self`` (flatten, which
    PyTorch returns as the input itself); ``name(*args, **kwargs)``: PyTorch's name for that
    node, where not ViewBackward0."""

    def view_op(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        out = op(input, *args, **kwargs)
        if out is input:
            if keeps_self:
                return input
            return _unchanged(input, "reshape", None, name and name(*args, **kwargs))
        elif not _same_memory(input, out):
            # a copy (PyTorch's reshape where strides cannot view: a clone, then a view)
            return labelled(out, "UnsafeViewBackward0", input)
        elif input._view_of is not None and not _views_as_torch(input, out.shape):
            out = op(input.clone(), *args, **kwargs)  # (its strides are PyTorch's, not its array's)
            return labelled(out, "UnsafeViewBackward0", input)
        shape = out._shape
        return as_view(out, input, _write_reshaped, lambda base: mv.reshape(base, shape))

    view_op.__name__ = view_op.__qualname__ = op.__name__
    view_op.__doc__ = op.__doc__
    return view_op


def _views_as_torch(x: Tensor, shape: tuple) -> bool:
    """Whether PyTorch's reshape of ``x`` to ``shape`` is a view, where ``x`` is a view whose
    array is its own (``as_strided``, a diagonal: its strides are not its array's); True for
    any other ``x`` (the backend's reshape decided by its array, by the same rule)."""
    if x._own_array_view() is None or not x.numel():
        return True
    old, strides = tuple(x.shape), x.stride()
    if not old:
        return True
    # PyTorch's rule: each run of x's axes that lie one after another in memory is viewed as
    # a run of the new axes of the same size
    d = len(shape) - 1
    base, held, seen = strides[-1], 1, 1
    for k in range(len(old) - 1, -1, -1):
        held *= old[k]
        if k == 0 or (old[k - 1] != 1 and strides[k - 1] != held * base):
            while d >= 0 and (seen < held or shape[d] == 1):
                seen *= shape[d]
                d -= 1
            if seen != held:
                return False
            if k > 0:
                base, held, seen = strides[k - 1], 1, 1
    return d == -1


def _same_memory(x: Tensor, out: Tensor) -> bool:
    """Whether the backend's ``out`` uses ``x``'s memory (its reshape viewed rather than
    copied, by the same stride rule as PyTorch's), or the backend cannot tell."""
    storage = getattr(x.backend, "storage", None)
    if storage is None:
        return True
    mine, its = storage(x.native), storage(out.native)
    return mine is None or its is None or mine is its


def _unchanged(x: Tensor, op: str, saved: Any = None, name: str | None = None) -> Tensor:
    """A view of ``x`` over its array with a node of its own (``op``; ``name``: PyTorch's,
    where not ``op``'s), for a view op that leaves ``x`` as it is: PyTorch's view is a new
    tensor all the same (its own ``.data``, ``requires_grad_()``, ``grad_fn``)."""
    out = apply(op, x.native, x.dtype, (x,), saved)
    if name is not None:
        labelled(out, name, x)
    return as_view(out, x, _write_unchanged, _read_unchanged)


def _write_unchanged(base: Tensor, value: Tensor) -> Any:
    # (the value as a tensor of its own: as a view of base, copy_ would refuse it where base
    # is a view holding an array of its own, unfold's, whose memory the view shares)
    return base.copy_(apply("reshape", value.native, value.dtype, (value,)))


def _read_unchanged(base: Tensor) -> Tensor:
    return base


def _squeeze_name(dim: Any = None, **aliases: Any) -> str:
    """PyTorch's node name for ``squeeze(input, dim, **aliases)``."""
    return mv.squeeze_name(mv.dim_alias("squeeze", aliases, dim, None) if aliases else dim)


reshape = _reshaping(mv.reshape)
flatten = _reshaping(mv.flatten, keeps_self=True)
unflatten = _reshaping(mv.unflatten)
squeeze = _reshaping(mv.squeeze, name=_squeeze_name)
_unsqueeze = _reshaping(mv.unsqueeze)


def unsqueeze(input: Tensor, dim: int = mv.REQUIRED, **aliases: Any) -> Tensor:
    if aliases or dim is mv.REQUIRED:
        dim = mv.dim_alias("unsqueeze", aliases, dim)
    out = _unsqueeze(input, dim)
    above = out._view_of
    if above is not None and above[0] is input:
        d = dim + input.ndim + 1 if dim < 0 else dim  # (valid: the op checked it)

        def strides(base: Tensor) -> tuple:
            sizes, found = list(base.shape), list(base.stride())
            _unsqueezed(sizes, found, d)
            return tuple(found)

        above[2].torch_strides = strides  # (PyTorch's stride for the new axis: _unsqueezed)
    return out


def view_as(x: Tensor, other: Tensor) -> Tensor:
    return reshape(x, other.shape)


def permute(input: Tensor, *sizes: Any, dims: Any = None) -> Tensor:
    """``input`` with its axes in the order ``dims``: f(1, 0), f((1, 0)) or f(dims=(1, 0))."""
    if dims is None:
        dims = sizes
    elif sizes:
        raise TypeError("permute() got multiple values for argument 'dims'")
    else:
        dims = (dims,)
    perm = mv.permutation(input, dims)
    return permuted(input, mv.permuted(input, perm), perm)


def permuted(x: Tensor, out: Tensor, perm: tuple[int, ...]) -> Tensor:
    """``out``, which is ``x`` with its axes in the order ``perm``, as a view of ``x``."""
    if out is x:  # (an identity permutation)
        return _unchanged(x, "permute", perm)
    return as_view(out, x, *_permuting(perm))


@functools.lru_cache(maxsize=1024)
def _permuting(perm: tuple[int, ...]) -> tuple[Write, Read]:
    """The write-back and read of a view that is its base with its axes in the order
    ``perm``: made once per permutation (nothing sets an attribute of them)."""
    inverse = [0] * len(perm)
    for i, d in enumerate(perm):
        inverse[d] = i
    back = tuple(inverse)
    return (
        lambda base, value: base.copy_(mv.permuted(value, back)),
        lambda base: mv.permuted(base, perm),
    )


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    out = mv.movedim(input, source, destination)
    if out is input:  # (each moved to where it is)
        return _unchanged(input, "permute", tuple(range(input.ndim)))
    return as_view(
        out,
        input,
        lambda base, value: base.copy_(mv.movedim(value, destination, source)),
        lambda base: mv.movedim(base, source, destination),
    )


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    out = mv.transpose(input, dim0, dim1)
    if out is input:  # (one axis, or a 0-d tensor)
        return _unchanged(input, "permute", tuple(range(input.ndim)), "TransposeBackward0")
    if dim0.__class__ is int and dim1.__class__ is int:
        return as_view(out, input, *_transposing(dim0, dim1))
    return as_view(out, input, *_transposing.__wrapped__(dim0, dim1))


@functools.lru_cache(maxsize=256)
def _transposing(dim0: int, dim1: int) -> tuple[Write, Read]:
    """The write-back and read of ``transpose(base, dim0, dim1)`` as a view of ``base``: made
    once per pair of int dims (nothing sets an attribute of them)."""
    return (
        lambda base, value: base.copy_(mv.transpose(value, dim0, dim1)),
        lambda base: mv.transpose(base, dim0, dim1),
    )


def t(input: Tensor) -> Tensor:
    out = mv.t(input)
    if out is input:  # (a 0-d or 1-d tensor)
        return _unchanged(input, "permute", tuple(range(input.ndim)), "TBackward0")
    return as_view(out, input, lambda base, value: base.copy_(mv.t(value)), mv.t)


def expand(x: Tensor, *sizes: Any) -> Tensor:
    out = mv.expand(x, *sizes)
    return _expanded(out, x)


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    return _expanded(mv.expand_as(x, other), x)


def broadcast_to(input: Tensor, size: Any) -> Tensor:
    return _expanded(mv.broadcast_to(input, size), input)


def _expanded(out: Tensor, x: Tensor) -> Tensor:
    """``out`` (``x`` expanded) as a view of ``x``; one that repeats an element of ``x``
    refuses in-place writes of its own, as PyTorch's does (``ix.setitem`` writes a selection
    of it that repeats none into ``x``)."""
    if out is x:  # (to its own shape)
        return _unchanged(x, "expand")
    shape = out._shape
    numel = out.numel()
    if not numel:
        write: Write = _write_nothing
    else:
        write = _write_overlapping if numel != x.numel() else _write_reshaped
    return as_view(out, x, write, lambda base: mv.expand(base, shape))


def _write_nothing(base: Tensor, value: Tensor) -> None:
    """An empty view holds none of its base's elements."""


# -- as_strided: a view of the memory itself -------------------------------------------------


def as_strided(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """The elements of ``input``'s memory at ``storage_offset + sum(i[k] * stride[k])`` for
    each index ``i`` of ``size`` (by default from ``input``'s own storage offset), as a view
    of that memory: writes through it reach ``input``, and it follows later changes.

    The memory is that of the tensor ``input`` is a view of (as PyTorch's storage), with the
    strides the backend lays it out with; on a backend that cannot tell (cuPyNumeric) it is
    ``input``'s elements in C order. Overlapping elements share their gradient (it adds up),
    as PyTorch's ``AsStridedBackward``."""
    size, stride = _sizes("as_strided", size, "size"), _sizes("as_strided", stride, "stride")
    memory = Memory(input)
    offset = memory.start if storage_offset is None else operator.index(storage_offset)
    index = memory.index(input, size, stride, offset)
    repeats = any(s == 0 and n > 1 for n, s in zip(size, stride))
    shared = _overlapping(size, stride)
    out = _read_through(input, memory, index)
    view = _memory_view(input, memory, lambda: index, repeats, shared, out, (stride, offset))
    if out is not None and view._view_of is not None:
        # An in-place change of it computes from its base's elements, as PyTorch rebases a
        # changed view's history onto its base: the read-through's graph reaches only
        # input's own elements (read by Tensor._inplace_source)
        view._view_of[1].rebases = True  # type: ignore[attr-defined]
    # (the read's own nodes, an index read or the read-through's, are PyTorch's one node)
    return labelled(view, "AsStridedBackward0", input)


def _read_through(x: Tensor, memory: Memory, index: Tensor) -> Tensor | None:
    """The elements of ``memory`` at ``index`` with the gradient PyTorch's
    ``AsStridedBackward`` gives them: into ``x``'s own elements only, where ``x`` is a view
    that holds part of its base's memory (``base[:, ::2]``, ``base.mT``) and requires grad.
    A position ``x`` does not hold gets none, even where the base requires grad; read from the
    base (None: the caller's plain read), it would get some, and a view that is a leaf itself
    would get none at all. Where ``x`` holds a position more than once (expanded), each copy
    gets that position's gradient divided by the copies, as PyTorch's (its base then gets the
    position's whole gradient once)."""
    if memory.base is x or not (x.requires_grad and is_grad_enabled()):
        return None
    if memory.x_strides is None:
        return None
    own, flat = memory.own(x), mv.reshape(x, (-1,))
    with no_grad():
        held = image(memory.base, memory.positions, memory.extent)
        shared = _overlapping(x.shape, memory.x_strides) is not False
        copies = _copies(held, own) if shared else None
    if copies is not None:
        from tensorweaver.ops import elementwise as ew

        flat = ew.mul(flat, 1)  # (a tensor of its own for the hook, x's values exactly)
        flat.register_hook(lambda grad: ew.div(grad, copies))
    # (the copies of a position are equal: the scatter writes its value exactly)
    held = ix.scatter_unchecked(held, 0, own, flat)
    return ix.getitem(held, index)


def _copies(memory: Tensor, own: Tensor) -> Tensor | None:
    """How many of the positions ``own`` are each one's (None: each is once), for the
    gradient of a view that holds a memory position more than once."""
    from tensorweaver.ops import creation
    from tensorweaver.ops import elementwise as ew

    ones = creation.ones(own.shape, dtype=memory.dtype, device=memory)
    counts = ix.scatter_add_unchecked(creation.zeros_like(memory), 0, own, ones)
    copies = ix.getitem(counts, own)
    return None if bool(ew.eq(copies, 1).all()) else copies


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """Every window of ``size`` elements along ``dimension``, ``step`` apart, as a new last
    dimension: a view of ``input``'s memory, as PyTorch's (writes reach ``input``; it
    follows later changes)."""
    from tensorweaver.ops import windows

    out = windows.unfold(input, dimension, size, step)  # the values, without the positions
    memory, shape = Memory(input), input.shape

    def index() -> Tensor:  # the memory positions, wanted only for a write or a re-read:
        # those of input's shape and strides now, as PyTorch's view is fixed when made (a
        # resize_ of input in between must not move them)
        own = mv.reshape(memory.own(input, shape), shape)
        return windows.unfold(own, dimension, size, step)

    # Windows share elements where they are closer than their size (and there are two), or
    # where input's own elements do (an expanded input).
    strides = memory.x_strides
    axis = _axis(dimension, max(input.ndim, 1), "unfold")
    shared = False if strides is None else _overlapping(input.shape, strides)
    if shared is False:
        shared = step < size and out.shape[axis] > 1
    laid, repeats = None, False
    if strides is not None:  # PyTorch's strides of the windows
        along = strides[axis] if strides else 1
        laid = (*strides[:axis], along * step, *strides[axis + 1 :], along), memory.start
        # (windows of an expand() hold its repeated elements: only fills may write, as the
        # expand's own writes)
        repeats = any(s == 0 and n > 1 for s, n in zip(laid[0], out.shape))
    view = _memory_view(input, memory, functools.cache(index), repeats, shared, out, laid)
    return labelled(view, "UnfoldBackward0", input)  # (the windows' take and movedim: one node)


def _memory_view(
    x: Tensor,
    memory: Memory,
    index: Callable[[], Tensor],
    repeats: bool,
    shared: bool | None,
    out: Tensor | None = None,
    laid: tuple | None = None,
) -> Tensor:
    """The elements of ``memory`` (``x``'s) at the positions ``index()`` (its shape), as a
    view of ``memory.base``; ``repeats``: whether some position is held twice by a zero
    stride; ``shared``: whether some position is held twice at all (None: count them);
    ``out``: those elements where the caller has them (then ``index`` may wait for a write);
    ``laid``: the view's ``(strides, storage offset)`` in that memory, where it has strides
    (an ``as_strided`` or ``unfold`` of the view then views that memory, as PyTorch's)."""
    strides = None if laid is None else laid[0]
    read = _strided_read(memory, index, strides)
    if out is None:
        out = read(memory.base)
    elif strides is not None:
        _laid_by(out, strides)
    if not out.numel():
        write: Write = functools.partial(_write_nothing)  # (its own: it carries the layout)
    else:
        if shared is None:
            held = index().backend.to_host(index().native)
            shared = _unique_count(held) != held.size
        write = _strided_write(memory, index, shared)
        if repeats:  # several elements are one memory location: only fills may write
            write.overlapping = True  # type: ignore[attr-defined]
    if laid is not None and memory.x_strides is not None:
        write.memory_layout = (memory, *laid)  # type: ignore[attr-defined]
    return as_view(out, memory.base, write, read, origin=x)


# -- PyTorch's strides of views that hold arrays of their own ---------------------------------


def view_layout(view: Tensor) -> tuple | None:
    """PyTorch's ``(strides, storage_offset, data_ptr)`` of ``view``, a view whose array is a
    copy (the backend's ``as_strided``/``unfold`` windows, diagonals, complex parts): in its
    base's memory, where its elements lie there; None where that cannot be told."""
    base, write, read = view._view_of[:3]
    laid = getattr(write, "memory_layout", None)
    if laid is not None:
        return laid[0].layout(*laid[1:])
    strides, offset, address = base._layout()
    if getattr(write, "conjugates", False):
        # conj(): PyTorch's conjugate bit on its base's memory, so its layout is the base's
        # (numpy(), DLPack and host sharing refuse it by is_conj(), as its values are not
        # that memory's)
        return strides, offset, address
    part = getattr(write, "part", None)
    if part == "bits":  # view(dtype): the last dimension's elements resized
        old, new = base.dtype.itemsize, view.dtype.itemsize
        if old == new or not strides:
            return strides, offset, address
        return (*[s * old // new for s in strides[:-1]], 1), offset * old // new, address
    if part is not None:  # a complex tensor's floats: two per element
        pairs = tuple([2 * s for s in strides])
        if part == "complex":
            return tuple([s // 2 for s in strides[:-1]]), offset // 2, address
        if part == "pairs":
            return (*pairs, 1), 2 * offset, address
        at = int(part == "imag")
        return pairs, 2 * offset + at, address + at * view.dtype.itemsize
    if base.dtype is not view.dtype or not view.numel():
        return None
    import numpy as np

    # each element's memory position, carried through the view's own read of its base
    with no_grad():
        held = read(_index_tensor(_grid(base.shape, strides, offset), base))
    positions = held.backend.to_host(held.native)
    if positions.shape != tuple(view.shape):
        return None
    own = view.backend.layout(view.native)[0]
    first = int(positions.reshape(-1)[0])
    steps = []
    for d, n in enumerate(view.shape):
        if n == 1:
            steps.append(own[d])
        else:
            at = [0] * view.ndim
            at[d] = 1
            steps.append(int(positions[tuple(at)]) - first)
    if not np.array_equal(positions, _grid(tuple(view.shape), steps, first)):
        return None
    return tuple(steps), first, address + (first - offset) * view.dtype.itemsize


def empty_view_layout(view: Tensor, found: tuple) -> tuple:
    """PyTorch's ``(strides, storage_offset, data_ptr)`` of ``view``, an empty view (or alias:
    ``detach()``), whose layout as the backend reports it is ``found``: an empty array holds
    no element to place it by (NumPy gives an empty slice the address of the array it was
    taken of), so its first position is its base's moved by where the view op starts (a basic
    index's, a run's along one axis: ``x[3:3]`` starts at 3; none for a reshape, permute or
    expand), as PyTorch's (a ``resize_`` of it, or an ``out=`` the op resizes, writes there)."""
    if view._view_of is None:
        alias = view._alias_of
        same = alias._shape == view._shape and alias._dtype is view._dtype
        return alias._layout() if same else found
    base, write = view._view_of[:2]
    if hasattr(write, "memory_layout") or hasattr(write, "part") or hasattr(write, "conjugates"):
        laid = view_layout(view)  # (placed by its base's layout alone)
        return found if laid is None else laid
    strides, offset, address = base._layout()
    index = getattr(write, "index", None)
    if index is None:
        region = getattr(write, "region", None)
        if region is None:
            return found[0], offset, address
        d, first, stop = region  # (one index along d, or a slice)
        index = (_ALL,) * d + (first if view.ndim < base.ndim else slice(first, stop),)
    steps, start = _indexed_layout(tuple(base.shape), strides, index)
    return steps, offset + start, address + start * view.dtype.itemsize


def holds_memory_values(view: Tensor) -> bool:
    """Whether ``view``'s values are those of the memory :func:`view_layout` places it in, so
    host code may share that memory: not so under PyTorch's conjugate bit (an odd number of
    ``conj()`` steps up its chain) nor for the imaginary part of such a tensor (its negative
    bit)."""
    if view.dtype.is_complex and cx.is_conj(view):
        return False
    t = view
    while t._view_of is not None:
        up, write = t._view_of[0], t._view_of[1]
        if getattr(write, "part", None) == "imag" and cx.is_conj(up):
            return False
        t = up
    return True


def part_layout(view: Tensor, part: Tensor, laid: tuple, own: tuple) -> tuple:
    """The layout of ``part``, a view (``x[i]``, ``t()``, ...) within the array of
    ``view``, whose layout is ``laid`` (:func:`view_layout`): each step of ``part``'s array
    (``own``, as the backend lays it out) as steps along ``view``'s axes, taken with
    ``laid``'s strides instead; ``own`` where a step is not such (a reshape that merged)."""
    own_laid = view.backend.layout(view.native)
    if own_laid is None:  # (an empty array: no steps to map)
        return own
    held, first, _ = own_laid
    strides, offset, address = laid
    if tuple(held) == tuple(strides):  # (a conj()'s array, laid out as its memory is)
        start = own[1] - first
        return own[0], offset + start, address + start * part.dtype.itemsize
    # view's axes by decreasing step in its array: each step is then its axes' indices,
    # greedily
    axes = sorted(
        ((s, n, v) for s, n, v in zip(held, view.shape, strides) if s > 0 and n > 1),
        reverse=True,
    )

    def taken(step: int) -> int | None:
        at = 0
        for s, n, v in axes:
            k = min(step // s, n - 1) if step > 0 else 0
            step -= k * s
            at += k * v
        return at if step == 0 else None

    mapped = [taken(s) for s in own[0]]
    start = taken(own[1] - first)
    for d in reversed(range(part.ndim)):
        if mapped[d] is not None or part.shape[d] != 1:
            continue
        if d + 1 == part.ndim:  # a new axis: its stride as PyTorch's unsqueeze gives it
            mapped[d] = 1
        elif mapped[d + 1] is not None:
            mapped[d] = mapped[d + 1] * part.shape[d + 1]
    if start is None or None in mapped:
        return own
    return tuple(mapped), offset + start, address + start * part.dtype.itemsize


def _overlapping(size: tuple, stride: tuple) -> bool | None:
    """Whether two elements of ``size`` laid out with ``stride`` are one memory position:
    False where each dimension (by growing stride) steps past all the smaller ones reach,
    True for a zero stride or one that a smaller dimension's steps reach exactly (windows
    one element apart), None where only counting the positions can tell."""
    reach, below = 0, []
    for s, n in sorted((s, n) for n, s in zip(size, stride) if n > 1):
        if s == 0 or any(s % p == 0 and s // p < m for p, m in below):
            return True
        if s <= reach:
            return None
        reach += (n - 1) * s
        below.append((s, n))
    return False


def _unique_count(positions: Any) -> int:
    import numpy as np

    return int(np.unique(positions).size)


def _sizes(op: str, sizes: Any, name: str) -> tuple[int, ...]:
    """A size or stride argument as PyTorch takes it: a tuple or list of ints (or one int)."""
    if isinstance(sizes, Tensor) or not isinstance(sizes, (tuple, list)):
        sizes = (sizes,)
    out = []
    for i, n in enumerate(sizes):
        if isinstance(n, bool) or not isinstance(n, (Integral, Tensor)):
            raise TypeError(
                f"{op}(): argument '{name}' must be tuple of ints, but found element of type "
                f"{type(n).__name__} at pos {i}"
            )
        out.append(operator.index(n))
    return tuple(out)


def _grid(shape: tuple, strides: tuple, offset: int) -> Any:
    """The memory position of each element of a ``shape`` laid out with ``strides`` from
    ``offset`` (a NumPy int64 array of that shape)."""
    import numpy as np

    at = np.full((), offset, np.int64)
    for n, s in zip(shape, strides):
        at = np.add.outer(at, np.arange(n, dtype=np.int64) * s)
    return at


class Memory:
    """The memory a tensor ``x`` uses, as PyTorch's storage: ``base`` (``x``, or the tensor
    it is a view of over the same memory), the ``positions`` of ``base``'s elements in it
    (C order, 1-d int64; None where they are ``0, 1, ...``), ``start`` (``x``'s storage
    offset there) and ``extent`` (its size in elements). The positions are fixed when the
    view is made, as PyTorch's strides are (a later change may give ``base`` an array laid
    out otherwise)."""

    def __init__(self, x: Tensor) -> None:
        above = x._view_of
        laid = None if above is None else getattr(above[1], "memory_layout", None)
        if laid is not None:  # an as_strided or unfold view: its base's memory, its strides
            memory, self.x_strides, self.start = laid
            self.base, self.extent, self._laid = memory.base, memory.extent, memory._laid
            self.first = memory.first
            self._like = getattr(memory, "_like", None)
            if "positions" in memory.__dict__:
                self.__dict__["positions"] = memory.__dict__["positions"]
            return
        layout = getattr(x.backend, "layout", None)
        base = x
        if layout is None or layout(x.native) is None:
            # no strides known: x's elements in C order are the memory
            self.start, self.x_strides = 0, None
            shape, strides, first = x.shape, None, 0
        else:
            # (PyTorch's strides and offsets, where a view's array is a copy: a diagonal's)
            base = _memory_base(x)
            strides, first, _ = base._layout()
            found = x._layout()
            self.start, self.x_strides = found[1] - first, found[0]
            shape = base.shape
        self.base, self.extent, self._laid, self.first = base, base.numel(), None, first
        if strides is not None and not base.is_contiguous() and all(s >= 0 for s in strides):
            # the positions themselves only when a read or a write wants them (making them
            # took half of an unfold of an unfold)
            self._laid, self._like = (tuple(shape), tuple(strides)), x
            numel = base.numel()
            self.extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if numel else 0

    def layout(self, strides: tuple, offset: int) -> tuple:
        """``(strides, storage_offset, data_ptr)`` of the view of this memory with ``strides``
        from position ``offset``, as PyTorch reports them: the view's own array is a copy, so
        they are read off the memory's base (the address moves with its array)."""
        address = self.base._layout()[2]
        return strides, self.first + offset, address + offset * self.base.dtype.itemsize

    @functools.cached_property
    def positions(self) -> Tensor | None:
        if self._laid is None:
            return None
        return _index_tensor(_grid(*self._laid, 0).reshape(-1), self._like)

    def own(self, x: Tensor, shape: tuple | None = None) -> Tensor:
        """The memory position of each of ``x``'s elements (C order, 1-d); ``shape``: ``x``'s
        shape when this memory was found (a later ``resize_`` must not move them)."""
        import math

        shape = x.shape if shape is None else shape
        if self.x_strides is None or self.base is x and self._laid is None:
            return _index_tensor(_grid((math.prod(shape),), (1,), 0), x)
        if self.base is x:
            return self.positions
        return _index_tensor(_grid(shape, self.x_strides, self.start).reshape(-1), x)

    def index(self, x: Tensor, size: tuple, stride: tuple, offset: int) -> Tensor:
        """The memory position of each element of ``x.as_strided(size, stride, offset)``,
        after PyTorch's checks (with its messages) that they lie in this memory."""
        import math

        if len(size) != len(stride):
            raise RuntimeError("mismatch in length of strides and shape")
        if any(s < 0 for s in stride):
            raise RuntimeError(
                f"as_strided: Negative strides are not supported at the moment, got strides: "
                f"{list(stride)}"
            )
        if any(n < 0 for n in size):
            raise RuntimeError(
                f"Storage size calculation overflowed with sizes={list(size)} and "
                f"strides={list(stride)}"
            )
        if offset < 0:
            raise RuntimeError(f"Tensor: invalid storage offset {offset}")
        reach = sum((n - 1) * s for n, s in zip(size, stride))
        need = 0 if math.prod(size) == 0 else offset + 1 + reach
        if need > self.extent:
            item = x.dtype.itemsize
            raise RuntimeError(
                f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset "
                f"{offset}, and itemsize {item} requiring a storage size of {need * item} are "
                f"out of bounds for storage of size {self.extent * item}; as_strided reaches "
                "only the memory of the tensor (or of the tensor it is a view of)"
            )
        return _index_tensor(_grid(size, stride, offset), x)


def _memory_base(x: Tensor) -> Tensor:
    """The tensor whose memory ``x`` uses, as PyTorch's storage, read as ``x``'s dtype: up
    ``x``'s chain of views while each shares its base's array, or holds a copy laid out in its
    base's memory (a diagonal: :func:`view_layout`); for a complex tensor's ``real``/``imag``
    part or ``view_as_real``, the floats of that tensor's memory, which the part lies among;
    for ``view(dtype)`` of one item size, that memory read as ``dtype``; for a ``conj()``,
    the conjugate of its base's memory."""
    storage = x.backend.storage
    t, held = x, storage(x.native)
    while t._view_of is not None:
        up, write = t._view_of[0], t._view_of[1]
        if getattr(write, "conjugates", False):
            # its base's memory holds the values unconjugated: that memory, conjugated
            # (a conj of a strided view reaches the whole storage, as PyTorch's)
            memory = _memory_base(up)
            return t if memory is up else conj(memory)
        if up.dtype is not t.dtype:
            part = getattr(write, "part", None)
            if part in ("real", "imag", "pairs"):
                return view_as_real(_memory_base(up))
            if part == "bits" and up.dtype.itemsize == t.dtype.itemsize:
                return view_dtype(_memory_base(up), t.dtype)
            return t
        above = storage(up.native)
        if above is not held:
            if view_layout(t) is None:
                return t
            held = above
        t = up
    return t


def _index_tensor(positions: Any, like: Tensor) -> Tensor:
    from tensorweaver.contract import dtypes
    from tensorweaver.ops import creation

    return creation.tensor(positions, dtype=dtypes.int64, device=like)


def image(x: Tensor, positions: Tensor | None, extent: int) -> Tensor:
    """A 1-d tensor of ``extent`` elements holding ``x``'s elements (C order) at
    ``positions`` (its memory; elsewhere zeros), or ``x`` flattened where they are None."""
    flat = mv.reshape(x, (-1,))
    if positions is None:
        return flat
    from tensorweaver.ops import creation

    empty = creation.zeros(extent, dtype=x.dtype, device=x)
    return ix.scatter_unchecked(empty, 0, positions, flat)


def _strided_read(
    memory: Memory, index: Callable[[], Tensor], strides: tuple | None = None
) -> Read:
    """The read of a view of ``memory`` at ``index()``; ``strides``: the view's, by whose
    order its own array is laid out (:func:`_laid_by`)."""
    extent = memory.extent

    def read(base: Tensor) -> Tensor:
        out = ix.getitem(image(base, memory.positions, extent), index())
        return out if strides is None else _laid_by(out, strides)

    return read


def _laid_by(t: Tensor, strides: tuple) -> Tensor:
    """``t``, the array of its own that a view of strides ``strides`` holds, laid out in
    memory in their order (as PyTorch's ``preserve_format``), so that an op that follows its
    input's layout (elementwise ops, ``clone``, ``empty_like``) lays its result out from the
    view as PyTorch's does (``x.as_strided((3, 3), (1, 4)) + y``: strides (1, 3))."""
    from tensorweaver.memory_formats import laid_out, preserved_order

    order = preserved_order(tuple(t.shape), strides)
    if order != tuple(range(len(order))):
        t.native = laid_out(t.backend, t.native, order)
    return t


def _strided_write(memory: Memory, index: Callable[[], Tensor], shared: bool) -> Write:
    """The write-back of a view of ``memory`` at ``index()``; ``shared``: some position is
    held twice, and only the elements a write changed are written there (as PyTorch's write
    into the memory itself: the other copies of a position must not put its old value back)."""
    extent = memory.extent

    def write(base: Tensor, value: Tensor) -> Any:
        positions = memory.positions
        written = image(base, positions, extent)
        values = mv.reshape(value, (-1,))
        flat = mv.reshape(index(), (-1,))
        if shared:
            old = ix.getitem(written, flat)
            written = ix.scatter_changed(written, flat, values, old)
        else:
            written = ix.scatter_unchecked(written, 0, flat, values)
        if positions is not None:
            written = ix.getitem(written, positions)
        return base.copy_(mv.reshape(written, base.shape))

    if shared:  # the other copies of what it wrote change too: the writer reads them again
        write.rereads = True  # type: ignore[attr-defined]
    return write


# -- complex parts: views of the real and imaginary halves -------------------------------------


def real(input: Tensor) -> Tensor:
    """The real parts of a complex tensor, as a view (writes reach ``input``, and it follows
    later changes); a real tensor itself."""
    out = cx.real(input)
    if out is input:  # a real tensor: itself, as PyTorch's
        return out

    def write(base: Tensor, value: Tensor) -> Any:
        return base.copy_(cx.complex(value, cx.imag(base)))

    write.part = "real"  # type: ignore[attr-defined]  # (its strides: view_layout)
    return as_view(out, input, write, cx.real)


def imag(input: Tensor) -> Tensor:
    """The imaginary parts of a complex tensor, as a view."""

    def write(base: Tensor, value: Tensor) -> Any:
        return base.copy_(cx.complex(cx.real(base), value))

    write.part = "imag"  # type: ignore[attr-defined]  # (its strides: view_layout)
    return as_view(cx.imag(input), input, write, cx.imag)


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor as a real one with a last dimension of 2 (real, imag), as a view."""

    def write(base: Tensor, value: Tensor) -> Any:
        return base.copy_(cx.complex(value[..., 0], value[..., 1]))

    write.part = "pairs"  # type: ignore[attr-defined]  # (its strides: view_layout)
    return as_view(cx.view_as_real(input), input, write, cx.view_as_real)


def view_as_complex(input: Tensor) -> Tensor:
    """A float tensor whose last dimension has size 2 as a complex one, as a view."""

    def write(base: Tensor, value: Tensor) -> Any:
        return base.copy_(cx.view_as_real(value))

    write.part = "complex"  # type: ignore[attr-defined]  # (its strides: view_layout)
    return as_view(cx.view_as_complex(input), input, write, cx.view_as_complex)


# -- conj: the conjugate as a view, PyTorch's conjugate bit ------------------------------------


def _write_conjugated(base: Tensor, value: Tensor) -> Any:
    return base.copy_(cx.conj_physical(value))


# (``is_conj`` counts these up a chain of views; ``holds_memory_values`` keeps an odd count
# off their base's memory)
_write_conjugated.conjugates = True  # type: ignore[attr-defined]


def _conjugated(input: Tensor) -> Tensor:
    """The conjugate computed, its node named as PyTorch's view op's (also when read again)."""
    out = cx.conj_physical(input)
    if out._node is not None:
        out._node.label = "ConjBackward0"
    return out


def conj(input: Tensor) -> Tensor:
    """The conjugate of a complex tensor as a view of it (PyTorch's conjugate bit, so
    ``is_conj()``): writes through it reach ``input`` conjugated, and it follows later
    changes of ``input``. It holds the conjugated values, so reading it costs nothing more."""
    return as_view(_conjugated(input), input, _write_conjugated, _conjugated)


# -- view(dtype): the same memory read as another dtype ------------------------------------------


def view(x: Tensor, *shape: Any, size: Any = None, dtype: Any = None) -> Tensor:
    """``x.view(*shape)`` or ``x.view(size=shape)`` (a reshape that is a view,
    :func:`reshape`) or ``x.view(dtype)``: ``x``'s memory read as ``dtype``
    (:func:`view_dtype`)."""
    if size is not None:
        if not isinstance(size, (tuple, list)):
            raise TypeError(
                f"view(): argument 'size' must be tuple of ints, not {type(size).__name__}"
            )
        if shape:
            raise TypeError(
                "view() received an invalid combination of arguments: both a "
                "positional shape and size=; give one of them"
            )
        shape = (size,)
    if dtype is None and len(shape) == 1 and isinstance(shape[0], dtypes.DType):
        dtype = shape[0]
    if dtype is not None:
        return view_dtype(x, dtype)
    out = reshape(x, *shape)
    if out._view_of is not None or out is x or not x.numel():
        return out
    # reshape copied. A view (transposed, stepped, expanded) of a contiguous tensor has
    # PyTorch's strides, so PyTorch cannot view it either. Any other tensor keeps its
    # backend's layout, which need not be PyTorch's (cat, softmax, cumsum... of a transposed
    # input are contiguous there): the copy is a view all the same, writing back into x.
    if _strides_are_torchs(x):
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead."
        )
    new_shape = out.shape
    return as_view(out, x, _write_reshaped, lambda base: mv.reshape(base, new_shape))


def _strides_are_torchs(x: Tensor) -> bool:
    """Whether ``x`` is a view (through ``detach()`` aliases too) of a contiguous tensor:
    its strides are then PyTorch's, whatever the backend's layout of other results."""
    viewed, t = False, x
    while True:
        if t._view_of is not None:
            viewed, t = True, t._view_of[0]
        elif t._alias_of is not None:
            t = t._alias_of
        else:
            return viewed and t.is_contiguous()


_TYPE_NAMES = dtypes.SCALAR_TYPE_NAMES  # PyTorch's names, in its view(dtype) errors


def view_dtype(x: Tensor, dtype: Any) -> Tensor:
    """``x``'s memory read as ``dtype`` (its bits, not its values), as a view: writes through
    it reach ``x``. A dtype of another size changes the last dimension (which must be
    contiguous), as PyTorch's; not differentiable. The bits are moved on the host (a copy
    each way: the IR has no bit-cast primitive)."""
    if x.dtype.is_complex and cx.is_conj(x):  # its memory holds the unconjugated values
        raise RuntimeError(
            f"view(dtype): not supported for a conjugate view (a conj() tensor), even to "
            f"{_TYPE_NAMES[dtype.name]}; call x.resolve_conj().view(dtype) (a new tensor)"
        )
    if dtype is x.dtype:
        out, read = _same_bits(x), _same_bits
    else:
        _check_view_dtype(x, dtype)
        out, read = _bitcast(x, dtype), lambda base: _bitcast(base, dtype)

    def write(base: Tensor, value: Tensor) -> Any:
        # (no view for autograd: the base's memory changes, not its history, as PyTorch's)
        with no_grad():
            return base.copy_(value if value.dtype is base.dtype else _bitcast(value, base.dtype))

    # (its strides: view_layout; and no view for autograd, whatever the dtype, as PyTorch's:
    # it never follows its base's requires_grad, tensor.py _differentiable_root_requires_grad)
    write.part = "bits"  # type: ignore[attr-defined]
    return as_view(out, x, write, read)


def _same_bits(base: Tensor) -> Tensor:
    """A new tensor over ``base``'s array, with no history (not a ``detach()`` alias: the
    view's own write-back is the only link, so a change bumps the base's version once)."""
    return Tensor(base.native, base.backend, base.dtype)


def _check_view_dtype(x: Tensor, dtype: Any) -> None:
    old, new = x.dtype.itemsize, dtype.itemsize
    if old == new:
        return
    names = f"{_TYPE_NAMES[x.dtype.name]} as {_TYPE_NAMES[dtype.name]}"
    what = f"to view {names} (different element sizes)"
    if not x.ndim:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    strides, offset = x.stride(), x.storage_offset()
    if new > old:
        ratio = new // old
        if x.shape[-1] % ratio:
            raise RuntimeError(
                f"self.size(-1) must be divisible by {ratio} {what}, but got {x.shape[-1]}"
            )
    if strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
    if new > old:
        if offset % ratio:
            raise RuntimeError(
                f"self.storage_offset() must be divisible by {ratio} {what}, but got {offset}"
            )
        for d, s in enumerate(strides[:-1]):
            if s % ratio:
                raise RuntimeError(
                    f"self.stride({d}) must be divisible by {ratio} {what}, but got {s}"
                )


def _bitcast(x: Tensor, dtype: Any) -> Tensor:
    """``x``'s bits as ``dtype`` (the last dimension scaled by the ratio of item sizes)."""
    import numpy as np

    host = np.ascontiguousarray(x.backend.to_host(x.native))
    if x.dtype.name == "bfloat16":  # (it arrives as float32: its upper half is the bfloat16)
        host = (host.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    target = np.uint16 if dtype.name == "bfloat16" else np.dtype(dtype.numpy_name)
    if not host.ndim:
        bits = host.reshape(1).view(target).reshape(())
    else:
        bits = host.view(target)
    if dtype.name == "bfloat16":
        bits = (bits.astype(np.uint32) << 16).view(np.float32)
    with no_grad():
        return Tensor(x.backend.from_host(bits, dtype), x.backend, dtype)
