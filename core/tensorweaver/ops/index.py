"""Indexing: ``x[...]`` and ``x[...] = v`` (basic, advanced and boolean, PyTorch's rules), and
the gather/scatter family. Everything lowers to slice, flip, reshape, permute, take, gather
and scatter primitives, so gradients come from their rules.

Every index a user passes is checked (:mod:`tensorweaver.ops.bounds`) and raises the error
class PyTorch raises for that op; negative indices count from the end only in ``x[...]``.
A mask must match the dimensions it covers. The ``*_unchecked`` functions take the core's
own indices, in range by construction, and skip the check's read-back.
"""

from __future__ import annotations

import math
import operator
import warnings
import weakref
from collections.abc import Sequence
from typing import Any, Callable

import numpy as np

from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import (
    SAVED_TENSORS_HOOKS,
    Node,
    ViewChange,
    refuse_saved,
    saves_integer_input,
)
from tensorweaver.contract import dtypes
from tensorweaver.memory_formats import c_ordered, laid_out
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops.apply import (
    all_inference,
    apply,
    broadcast_shapes,
    check_backends,
    labelled,
    view_requires_grad,
)
from tensorweaver.ops.bounds import check_index
from tensorweaver.ops.out_arguments import _refuse_overlap, same_elements
from tensorweaver.ops.overflow import fill_value
from tensorweaver.ops.rank import check_ndim
from tensorweaver.tensor import (
    _HELD,
    _HOST_SHARED,
    _SETITEM,
    Tensor,
    _axis,
    _c_strides,
    _warn_deprecated_overlap,
    _write_overlapping,
    _writes_through,
)

#: Index tensor dtypes: integers are positions, bool and uint8 (deprecated) are masks.
_POSITIONS = (dtypes.int64, dtypes.int32)
_MASKS = (dtypes.bool_, dtypes.uint8)
#: The dtypes of a 0-d tensor PyTorch indexes with as the int it holds (a select).
SELECTING = (dtypes.int64, dtypes.int32, dtypes.int16, dtypes.int8)


def _host_index(value: Any) -> tuple[np.ndarray, Any]:
    """A list / array index as PyTorch converts it, with its dtype: all bools (or a uint8
    array) a mask, anything else int64 positions (floats truncated toward zero); a string
    or complex is a TypeError, and what is no sequence (a dict, a NumPy float or bool) an
    IndexError."""
    if not isinstance(value, (Sequence, np.ndarray, np.integer)):  # (a NumPy float or bool)
        kind = type(value)
        name = f"numpy.{kind.__name__}" if kind.__module__ == "numpy" else kind.__name__
        raise IndexError(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables "
            f"are valid indices (got {name})"
        )
    array = np.asarray(value)
    kind = array.dtype.kind
    if kind == "b":
        return array, dtypes.bool_
    if array.dtype == np.uint8:
        return array, dtypes.uint8
    if kind in "US":
        raise TypeError(f"new(): invalid data type '{'str' if kind == 'U' else 'bytes'}'")
    if kind == "c":
        raise TypeError("'complex' object cannot be interpreted as an integer")
    if kind == "f":
        if not np.isfinite(array).all():
            raise RuntimeError("value cannot be converted to type int64 without overflow")
        return array.astype(np.int64), dtypes.int64
    if kind in "iu" or array.size == 0:  # [] indexes nothing
        return array, dtypes.int64
    raise IndexError(
        f"tensors used as indices must be long, int, byte or bool tensors; got {array.dtype}"
    )


def _index_tensor(value: Any, like: Tensor) -> Tensor:
    """A list / array / tensor index as int64 positions or a bool/uint8 mask on ``like``'s
    device."""
    if isinstance(value, Tensor):
        t = value
    else:
        array, dtype = _host_index(value)
        check_ndim("indexing", array.shape, like.backend)
        t = Tensor(like.backend.from_host(array, dtype), like.backend, dtype)
    if t.dtype not in _POSITIONS and t.dtype not in _MASKS:
        raise IndexError(
            f"tensors used as indices must be long, int, byte or bool tensors, got {t.dtype.name}"
        )
    check_backends("indexing", (like, t))
    return ew.cast(t, dtypes.int64) if t.dtype is dtypes.int32 else t


def int64_index(op: str, index: Any, x: Tensor) -> Tensor:
    """The int64 ``index`` argument of ``op`` (int32 is converted, as PyTorch accepts it)."""
    if not isinstance(index, Tensor):
        index = _index_tensor(index, x)
    if index.dtype not in _POSITIONS:
        raise RuntimeError(f"{op}(): expected an int64 or int32 index, got {index.dtype.name}")
    check_backends(op, (x, index))
    return ew.cast(index, dtypes.int64) if index.dtype is dtypes.int32 else index


class _Advanced:
    """An index tensor in an expanded index: int64 positions along the next dimension of the
    tensor (``checked``: known to be in range and non-negative), or along a new dimension of
    size 1 (``new_axis``: from a 0-d mask)."""

    __slots__ = ("index", "checked", "new_axis")

    def __init__(self, index: Tensor, checked: bool = False, new_axis: bool = False) -> None:
        self.index, self.checked, self.new_axis = index, checked, new_axis


class Remade:
    """How the index that a take, gather or scatter node saved derives from the index its
    caller gave (cast to int64, negatives wrapped, several combined, a mask's positions, laid
    out along a dimension): :meth:`index` remakes it at backward where a write that bumped no
    version (through ``.data``, which rebinds the array, or by host code into memory it
    shares) changed a given one, as PyTorch's node reads the index tensors it saved. A
    NumPy array given as an index is PyTorch's tensor over that memory: always read again.
    ``prefix``: a remade index of fewer positions takes the gradient's first ones (PyTorch's
    MaskedSelectBackward0 scatters it through the mask), where others refuse it. ``make``
    takes the given tensors and arrays, or what a saved_tensors_hooks unpack returned for
    them (autograd/graph.py ``unpack_operands``: PyTorch's backward reads those)."""

    __slots__ = ("make", "given", "arrays", "prefix")

    def __init__(self, make: Callable[..., Tensor], given: list, prefix: bool = False) -> None:
        self.make, self.given, self.prefix = make, given, prefix
        self.arrays = [t.native if isinstance(t, Tensor) else None for t in given]

    def index(self, kept: Tensor) -> Tensor:
        """``kept`` (the index the forward derived), or it remade from the given index."""
        for t, native in zip(self.given, self.arrays):
            if native is None or t.native is not native or (_HOST_SHARED and _shared(t)):
                return self.remake(self.given)
        return kept

    def over(self, given: list) -> Remade:
        """This remaking over ``given``, what stands for the given tensors (a saved_tensors_hooks
        unpack's results), which it always reads: PyTorch's backward indexes with those."""
        remade = Remade(self.make, given, self.prefix)
        remade.arrays = [None] * len(given)  # (read always, as a NumPy array given)
        return remade

    def remake(self, given: list) -> Tensor:
        """The index made again from ``given`` (the given tensors and arrays, or what stands
        for them), recording no graph."""
        with no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (the forward warned: uint8 masks)
            return self.make(*given)


#: The ops whose node saves ``(dim, index)`` and whose rule reads :func:`saved_index`.
_REMAKES = frozenset(("take", "gather", "scatter", "scatter_add"))


def remade_at_backward(
    out: Tensor, make: Callable[..., Tensor], given: list, prefix: bool = False
) -> Tensor:
    """``out``, whose take/gather/scatter node (if any) remakes its index with ``make`` from
    the ``given`` index tensors and arrays at backward (:class:`Remade`); or whose ``where``
    node remakes its condition so."""
    node = out._node
    if node is None or not given:
        return out
    if node.op in _REMAKES:
        node.saved = (node.saved[0], node.saved[1], Remade(make, given, prefix))
    elif node.op == "where" and node.saved is None:  # (index_fill's: the condition remade)
        node.saved = Remade(make, given)
    return out


def like(x: Tensor) -> Callable[[], Tensor]:
    """A maker of a tensor of ``x``'s shape and device over one element: what remaking an
    index reads of the tensor it indexes, without keeping ``x``'s values until backward."""
    backend, shape = x.backend, x.shape

    def make() -> Tensor:
        one = Tensor(backend.full((), 0, dtypes.int64), backend, dtypes.int64)
        return mv.expand(one, shape)

    return make


def _shared(t: Tensor) -> bool:
    """Whether host code may have written into ``t``'s memory unseen."""
    return _writes_through(t) or t._is_shared_view()


def saved_index(node: Any) -> Tensor:
    """The index of a take, gather or scatter node, for its gradient rule."""
    saved = node.saved
    return saved[1] if len(saved) == 2 else saved[2].index(saved[1])


def _unit_index(x: Tensor, keep: bool) -> _Advanced:
    """A 0-d mask: a new dimension of size 1 that keeps its one element, or none of it."""
    native = x.backend.full((1 if keep else 0,), 0, dtypes.int64)
    return _Advanced(Tensor(native, x.backend, dtypes.int64), checked=True, new_axis=True)


def _covers(part: Any) -> int:
    """How many dimensions of the indexed tensor an index part reads."""
    if part is None or part is Ellipsis:
        return 0
    if isinstance(part, _Advanced):
        return 0 if part.new_axis else 1
    if isinstance(part, Tensor) and part.dtype in _MASKS:
        return part.ndim
    return 1


def check_mask_shape(x: Tensor, mask: Tensor, dim: int) -> None:
    """PyTorch's IndexError where ``mask``'s shape is not that of ``x``'s dimensions ``dim,
    dim + 1, ...`` (which it selects from)."""
    for j, n in enumerate(mask.shape):
        if n != x.shape[dim + j]:
            raise IndexError(
                f"The shape of the mask {list(mask.shape)} at index {j} does not match the "
                f"shape of the indexed tensor {list(x.shape)} at index {dim + j}"
            )


def _mask_coordinates(x: Tensor, mask: Tensor, dim: int) -> list[_Advanced]:
    """The positions a mask selects in the dimensions ``dim, dim + 1, ...`` of ``x``, one index
    per dimension, after checking its shape against theirs."""
    if mask.dtype is dtypes.uint8:
        warnings.warn(
            "indexing with dtype uint8 is deprecated, please use a dtype bool instead",
            UserWarning,
            stacklevel=5,
        )
    check_mask_shape(x, mask, dim)
    coords = Tensor(mask.backend.nonzero(mask.native), mask.backend, dtypes.int64)
    return [_Advanced(coords[:, k], checked=True) for k in range(mask.ndim)]


def _expand_index(x: Tensor, index: Any) -> list:
    """The index as a list of entries: ints and slices (one per dimension of ``x``), None
    (a new dimension) and :class:`_Advanced` index tensors; Ellipsis expanded, masks checked
    and turned into coordinates."""
    parts: list = []
    for item in index if isinstance(index, tuple) else (index,):
        if item is None or item is Ellipsis or isinstance(item, slice):
            parts.append(item)
        elif isinstance(item, bool):
            parts.append(_unit_index(x, item))
        elif isinstance(item, int) or (
            isinstance(item, Tensor) and not item.shape and item.dtype in SELECTING
        ):
            parts.append(int(item))
        else:
            t = _index_tensor(item, x)
            if t.dtype not in _MASKS:
                parts.append(_Advanced(t))
            else:
                parts.append(t if t.shape else _unit_index(x, bool(t.item())))
    used = sum(_covers(p) for p in parts)
    if used > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim} (got {used} indices)")
    entries: list = []
    dim = 0
    for part in parts:
        if part is Ellipsis:
            entries.extend([_SPREAD] * (x.ndim - used))
            dim += x.ndim - used
        elif isinstance(part, Tensor):  # a mask
            entries.extend(_mask_coordinates(x, part, dim))
            dim += part.ndim
        else:
            entries.append(part)
            dim += _covers(part)
    if dim > x.ndim:  # (two Ellipses or more)
        return _within(x, entries)
    entries.extend([slice(None)] * (x.ndim - dim))
    return entries


#: The whole-axis slices an Ellipsis stands for (told from a ``:`` given by identity).
_SPREAD = slice(None)


def _within(x: Tensor, entries: list) -> list:
    """``entries`` of an index with several Ellipses, as PyTorch reads them: each Ellipsis
    moves on by the dimensions no other entry reads, so the later ones reach past the last
    dimension, where PyTorch skips an Ellipsis's dimensions and a slice from 0 by 1 (its
    whole-axis shortcut) and raises for any other entry."""
    kept: list = []
    dim = 0
    for e in entries:
        new_axis = e is None or isinstance(e, _Advanced) and e.new_axis
        if dim < x.ndim or new_axis and dim == x.ndim:  # (a new last axis)
            kept.append(e)
        elif e is _SPREAD or (type(e) is slice and e.start in (None, 0) and e.step in (None, 1)):
            pass
        elif type(e) is int:
            raise IndexError(f"index {e} is out of bounds for dimension {dim} with size 0")
        else:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-x.ndim - 1}, {x.ndim}], "
                f"but got {dim})"
            )
        if not new_axis:
            dim += 1
    return kept


def getitem(x: Tensor, index: Any) -> Tensor:
    out = _basic(x, index)
    if out is not None:
        return out
    entries = _expand_index(x, index)
    starts, stops, steps, flips = [], [], [], []
    shape: list[int] = []  # the shape after basic indexing, with None axes added
    advanced: list[tuple[int, Tensor]] = []  # (position in `shape`, index tensor)
    dim = 0
    for e in entries:
        if e is None:
            shape.append(1)
            continue
        if isinstance(e, _Advanced) and e.new_axis:
            shape.append(1)
            advanced.append((len(shape) - 1, e.index))
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
                raise _out_of_bounds(e, dim, n)
            e = e + n if e < 0 else e
            starts.append(e)
            stops.append(e + 1)
            steps.append(1)
        else:
            starts.append(0)
            stops.append(n)
            steps.append(1)
            shape.append(n)
            advanced.append((len(shape) - 1, _in_range(x, e, dim)))
        dim += 1
    if not flips and x.requires_grad and is_grad_enabled():
        out = _in_turn(x, entries, starts, stops, steps)  # (PyTorch's nodes, entry by entry)
    else:
        out = mv.slice_dims(x, starts, stops, steps) if x.ndim else x
        if flips:
            out = mv.flip(out, flips)
        out = mv.reshape(out, tuple(shape))
    if advanced:
        # (PyTorch's one node, on the basic indexing's view: a reshape of the result here)
        basic = out
        out = labelled(_advanced(out, advanced, x, index), "IndexBackward0", out)
        if out._node is not None:  # (which saves the index tensors, masks too, as given)
            INDEX_ARGUMENTS[out._node] = (index, x.ndim, basic._shape)
            if type(index) is Tensor and index.shape:  # (the common index, told cheaply)
                saves_integer_input(out, index)
            elif SAVED_TENSORS_HOOKS:
                _save_as_torch(out, index, x)
            else:
                saves_integer_input(out, *index_tensors(index))
    elif out is x:
        out = (
            apply("reshape", x.native, x.dtype, (x,))
            if x.requires_grad
            else Tensor(x.native, x.backend, x.dtype)
        )
    return out


def _save_as_torch(out: Tensor, index: Any, x: Tensor) -> None:
    """Note on ``out``'s node the index tensors PyTorch's IndexBackward0 saves, so that the
    saved_tensors_hooks pack them in its order (lists and arrays as the tensors made of them,
    a bool's new axis as its positions); a take node remakes its index from what unpack
    gives for them, as PyTorch's backward reads it (not for a bool's, which stays a new
    axis, nor an array's: its memory is read again, as a tensor over it)."""
    saved = [t for t in pytorch_indices(index, x.ndim, x) if t is not None]
    node = out._node
    # (a take that keeps its one index reads the one unpacked tensor as it: _index_read)
    if node.op == "take" and (len(node.saved) == 3 or len(saved) > 1):
        items = index if type(index) is tuple else (index,)
        spots, k = {}, 0  # (item -> its entry in `saved`: pytorch_indices' order)
        for j, e in enumerate(items):
            if type(e) is bool or isinstance(e, Tensor) and not e.shape and e.dtype in _MASKS:
                k += 1
            elif isinstance(e, (list, range, np.ndarray)) or isinstance(e, Tensor) and e.shape:
                if not isinstance(e, np.ndarray):
                    spots[j] = k
                k += 1
        shaped = like(x)

        def make(*now: Tensor) -> Tensor:
            swapped = tuple([now[spots[j]] if j in spots else e for j, e in enumerate(items)])
            return _taken_positions(shaped(), swapped if type(index) is tuple else swapped[0])

        prefix = len(node.saved) == 3 and node.saved[2].prefix
        node.saved = (*node.saved[:2], Remade(make, saved, prefix))
    saves_integer_input(out, *saved)


#: What PyTorch's IndexBackward0 of ``x[index]`` saves, by the node that stands for it (the
#: take or the reshape after it): ``(index, x.ndim, sizes)``, ``sizes`` those of the basic
#: indexing's result (``self_sym_sizes``); its ``indices`` are made when asked
#: (:func:`pytorch_indices`, for autograd/grad_fn.py).
INDEX_ARGUMENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pytorch_indices(index: Any, ndim: int, like: Tensor) -> tuple:
    """The ``indices`` PyTorch's IndexBackward0 of ``x[index]`` (``x`` of ``ndim``
    dimensions) saves: per axis of the basic indexing's result up to the last index tensor,
    that tensor as given (a list or array as the tensor made of it, on ``like``'s device; a
    bool or 0-d mask as the int64 positions of its new axis, [0] or []), None for a slice,
    a None's new axis and an Ellipsis's axes; nothing for an int."""
    items = index if type(index) is tuple else (index,)
    used = 0
    for e in items:
        if isinstance(e, Tensor) and e.dtype in _MASKS:
            used += e.ndim
        elif not (e is None or e is Ellipsis or type(e) is bool):
            used += 1
    found: list = []
    for e in items:
        if e is None or type(e) is slice:
            found.append(None)
        elif e is Ellipsis:
            found.extend([None] * (ndim - used))
        elif type(e) is bool or isinstance(e, Tensor) and not e.shape and e.dtype in _MASKS:
            found.append(_unit_index(like, bool(e)).index)
        elif isinstance(e, Tensor) and e.shape:
            found.append(e)
        elif isinstance(e, (list, range, np.ndarray)):
            found.append(_index_tensor(e, like))
    while found and found[-1] is None:
        found.pop()
    return tuple(found)


def _out_of_bounds(index: int, dim: int, n: int) -> IndexError:
    """PyTorch's error for the int ``index`` outside dimension ``dim`` of size ``n``."""
    return IndexError(f"index {index} is out of bounds for dimension {dim} with size {n}")


def select_native(x: Tensor, d: int, i: int) -> Any:
    """``x``'s array at index ``i`` (in range, non-negative) along axis ``d``, that axis
    dropped: the backend's ``select``, else its slice and reshape."""
    backend, native = x.backend, x.native
    select = getattr(backend, "select", None)
    if select is not None:
        return select(native, d, i)
    shape = x._shape
    starts, stops = [0] * len(shape), list(shape)
    starts[d], stops[d] = i, i + 1
    native = backend.slice(native, tuple(starts), tuple(stops), (1,) * len(shape))
    return backend.reshape(native, shape[:d] + shape[d + 1 :])


def _basic(x: Tensor, index: Any) -> Tensor | None:
    """``x[index]`` for the common index: an int, a slice of positive step, or a tuple of
    them, one per leading dimension; None for any other (left to the general path, which
    gives the same result). One slice primitive, then one reshape that drops the int axes;
    one ``select`` where one int alone cuts (``x[i]``, ``x[:, i]``), recorded as one slice
    node that saves ``(axis, index)`` as given, PyTorch's SelectBackward0; with grad, where
    two entries or more cut (``x[1, 2]``, ``x[1, 1:]``), PyTorch's chain (:func:`_in_turn`)."""
    shape = x.shape  # (the property: an uninitialized parameter's raises)
    if type(index) is int:  # x[i]: the commonest
        if not shape:  # (PyTorch's words: a negative index reads as one out of bounds)
            if index < 0:
                raise _out_of_bounds(index, 0, 0)
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            )
        n = shape[0]
        if not -n <= index < n:
            raise _out_of_bounds(index, 0, n)
        native = select_native(x, 0, index + n if index < 0 else index)
        # (the slot first, as apply reads it; a view's flag may be its base's)
        if not (x._requires_grad or x._view_of is not None and view_requires_grad(x)):
            return Tensor(native, x.backend, x.dtype)
        return apply("slice", native, x.dtype, (x,), (0, index))
    entries = index if type(index) is tuple else (index,)
    ndim = len(shape)
    if len(entries) > ndim:
        return None
    starts, stops, steps = [], [], []
    kept: list[int] = []  # the sizes of the axes the result keeps
    cuts = 0  # the entries that cut their axis: PyTorch's nodes, one each
    sliced = False  # a slice cuts its axis
    at = 0  # the axis of the last int
    dim = 0
    for e in entries:
        n = shape[dim]
        kind = type(e)
        if kind is int:
            if not -n <= e < n:
                raise _out_of_bounds(e, dim, n)
            if e < 0:
                e += n
            starts.append(e)
            stops.append(e + 1)
            steps.append(1)
            cuts += 1
            at = dim
        elif kind is slice:
            start, stop, step = e.indices(n)
            if step < 0:
                return None
            count = len(range(start, stop, step))
            stop = start + (count - 1) * step + 1 if count else start
            starts.append(start)
            stops.append(stop)
            steps.append(step)
            kept.append(count)
            if not skips_slice(e, n):  # (PyTorch's node: a negative start reaching 0 too)
                cuts += 1
                sliced = True
        else:
            return None
        dim += 1
    rest = shape[dim:]
    grad = x._requires_grad or x._view_of is not None and view_requires_grad(x)  # (as above)
    if not cuts:  # a new tensor over the same values, as the general path makes
        if grad:
            return apply("reshape", x.native, x.dtype, (x,))
        return Tensor(x.native, x.backend, x.dtype)
    if not sliced and len(kept) == dim - 1:  # x[:, i]: one int
        native = select_native(x, at, starts[at])
        if not grad:
            return Tensor(native, x.backend, x.dtype)
        return apply("slice", native, x.dtype, (x,), (at, entries[at]))
    if cuts > 1 and grad and is_grad_enabled():
        return _in_turn(x, entries, starts, stops, steps)
    if rest:
        starts += [0] * len(rest)
        stops += rest
        steps += [1] * len(rest)
    bounds = (tuple(starts), tuple(stops), tuple(steps))
    backend = x.backend
    native = backend.slice(x.native, *bounds)
    if len(kept) == dim:  # no int axis to drop
        return apply("slice", native, x.dtype, (x,), bounds)
    if not grad:
        # (no graph: one tensor over both primitives, as apply() would make of each)
        return Tensor(backend.reshape(native, tuple(kept) + rest), backend, x.dtype)
    out = apply("slice", native, x.dtype, (x,), bounds)
    return mv._reshape(out, tuple(kept) + rest, "indexing")


def skips_slice(entry: slice, n: int) -> bool:
    """Whether PyTorch's indexing makes no node for the slice ``entry`` of an axis of size
    ``n``: its start as given is 0 or None (not a negative one that reaches back to 0, as
    -4: on an axis of 4), its step 1 and its stop at or past ``n``."""
    start, stop, step = entry.start, entry.stop, entry.step
    return (
        (start is None or start == 0)
        and (step is None or step == 1)
        and (stop is None or stop >= n)
    )


def _in_turn(x: Tensor, entries: Any, starts: list, stops: list, steps: list) -> Tensor:
    """``x[entries]`` as PyTorch records it with grad, entry by entry: a select node per int,
    saving ``(axis, index)`` as given; a slice node per slice but one PyTorch skips (start 0
    or None as given, step 1, stop at or past the size); an unsqueeze node per None (or 0-d
    mask's new axis); an index tensor's axis left whole (for the index node after). Each node
    is the next one's input (the chain a ``grad_fn.next_functions`` walk finds). ``starts``,
    ``stops`` and ``steps``: the bounds of each int or slice, by axis of ``x``, non-negative."""
    out, axis, d = x, 0, 0  # (the axis of ``out``, that of ``x``)
    for e in entries:
        kind = type(e)
        if kind is int:
            out = apply("slice", select_native(out, axis, starts[d]), x.dtype, (out,), (axis, e))
            d += 1
            continue
        if kind is slice:
            shape = out._shape
            if not skips_slice(e, shape[axis]):
                first, last, by = [0] * len(shape), list(shape), [1] * len(shape)
                first[axis], last[axis], by[axis] = starts[d], stops[d], steps[d]
                bounds = (tuple(first), tuple(last), tuple(by))
                native = out.backend.slice(out.native, *bounds)
                cut = apply("slice", native, x.dtype, (out,), bounds)
                if cut._node is not None:  # (its saved arguments as given: grad_fn.py reads them)
                    from tensorweaver.ops.views import SLICE_ARGUMENTS

                    SLICE_ARGUMENTS[cut._node] = ((slice(None),) * axis + (e,), shape)
                out = cut
            d += 1
        elif e is None or e.new_axis:
            out = mv.unsqueeze(out, axis)
        else:  # an index tensor
            d += 1
        axis += 1
    return out


def _in_range(x: Tensor, e: _Advanced, dim: int) -> Tensor:
    """The positions of the index tensor ``e`` along dimension ``dim`` of ``x``: checked,
    negative ones counted from the end."""
    idx = e.index
    n = x.shape[dim]
    if not e.checked and n and x.numel() == 0:
        # Another dimension is empty, so is the result: PyTorch checks no index, and any
        # position in range reads the same nothing.
        return ew.remainder(idx, n)
    if not e.checked and check_index("indexing", idx, n, dim, error=IndexError, negative=True):
        return ew.where(ew.lt(idx, 0), ew.add(idx, n), idx)
    return idx


def _taken_positions(x: Tensor, index: Any) -> Tensor:
    """The flat positions that ``x[index]``'s take node reads (see :func:`_advanced`), made
    again from ``index``."""
    indices, sizes = [], []
    dim = 0
    for e in _expand_index(x, index):
        if isinstance(e, _Advanced):
            indices.append(e.index if e.new_axis else _in_range(x, e, dim))
            sizes.append(1 if e.new_axis else x.shape[dim])
        if e is not None and not (isinstance(e, _Advanced) and e.new_axis):
            dim += 1
    return _flat_positions(indices, sizes)[0]


def _flat_positions(indices: list[Tensor], sizes: list[int]) -> tuple[Tensor, tuple]:
    """The positions that the in-range ``indices`` (broadcast together) pick in dimensions of
    ``sizes`` merged into one, flat, and the shape the indices broadcast to."""
    try:
        bshape = broadcast_shapes("indexing", *(t.shape for t in indices))
    except RuntimeError:  # PyTorch's class for index tensors that do not fit together
        shapes = ", ".join(str(list(t.shape)) for t in indices)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes "
            f"{shapes}; give index tensors whose sizes match or are 1"
        ) from None
    linear = None
    stride = 1
    for idx, size in zip(reversed(indices), reversed(sizes)):
        term = idx if stride == 1 else ew.mul(idx, stride)
        linear = term if linear is None else ew.add(linear, term)
        stride *= size
    flat = mv.reshape(mv.expand(linear, bshape), (-1,)) if bshape else mv.reshape(linear, (1,))
    return flat, bshape


def _advanced(x: Tensor, advanced: list[tuple[int, Tensor]], indexed: Tensor, index: Any) -> Tensor:
    """PyTorch's advanced indexing of ``x`` by in-range index tensors at the given dimensions
    (``indexed[index]``'s: its take node makes its positions again from ``index`` where a
    write through the given index tensors' ``.data`` changed them)."""
    dims = [d for d, _ in advanced]
    indices = [t for _, t in advanced]
    adjacent = dims == list(range(dims[0], dims[0] + len(dims)))
    if not adjacent:  # the indexed dimensions go first, as in NumPy
        rest = [d for d in range(x.ndim) if d not in dims]
        x = mv.permute(x, dims + rest)
        dims = list(range(len(dims)))
    first = dims[0]
    sizes = [x.shape[d] for d in dims]
    flat, bshape = _flat_positions(indices, sizes)
    merged = mv.reshape(x, x.shape[:first] + (math.prod(sizes),) + x.shape[first + len(dims) :])
    taken = take_along(merged, first, flat)
    if taken._node is not None:
        given = [index] if type(index) is Tensor and index.shape else _read_back(index)
        shaped = like(indexed)
        remade_at_backward(
            taken, lambda *now: _taken_positions(shaped(), _replaced(index, given, now)), given
        )
    return mv.reshape(taken, x.shape[:first] + bshape + x.shape[first + len(dims) :])


def take_along(x: Tensor, dim: int, index: Tensor) -> Tensor:
    """``index_select`` without checks: ``index`` is 1-d int64, in range."""
    return apply("take", x.backend.take(x.native, dim, index.native), x.dtype, (x,), (dim, index))


def _positions(x: Tensor) -> Tensor:
    """Each element's flat position in ``x``, in ``x``'s shape."""
    backend = x.backend
    flat = backend.arange(0, x.numel(), 1, dtypes.int64)
    return Tensor(backend.reshape(flat, x.shape), backend, dtypes.int64)


def _selected_positions(x: Tensor, index: Any) -> Tensor:
    """``_positions(x)[index]`` (which records no graph: the positions need no gradient),
    for the common index without switching grad mode (:func:`_basic`)."""
    positions = _positions(x)
    out = _basic(positions, index)
    if out is not None:
        return out
    with no_grad():
        return getitem(positions, index)


def _written_positions(x: Tensor, index: Any) -> Tensor:
    """The flat positions ``x[index] = v`` writes, made again at backward (:class:`Remade`)."""
    return mv.reshape(_selected_positions(x, index), (-1,))


def sequence_as_tuple(index: Any) -> Any:
    """PyTorch's (and old NumPy's) rule for a list index: shorter than 32 and holding a
    tensor, a sequence, a slice, Ellipsis or None, it indexes as the tuple of its items
    (``x[[[0, 1], [1, 0]]]`` is ``x[[0, 1], [1, 0]]``), with PyTorch's deprecation warning;
    any other index is returned as it is."""
    if type(index) is not list or len(index) >= 32:
        return index
    for item in index:
        if item is None or item is Ellipsis or isinstance(item, (Tensor, list, tuple, slice)):
            warnings.warn(
                "Using a non-tuple sequence for multidimensional indexing is deprecated and "
                "will be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]",
                UserWarning,
                stacklevel=3,
            )
            return tuple(index)
    return index


def check_steps(x: Tensor, index: Any) -> None:
    """PyTorch's errors for a slice of ``x[index]`` that steps backwards or not at all (in
    reads and writes: ``x[::-1] = v`` wrote the flipped selection), after those PyTorch
    raises first (:func:`_raise_earlier`)."""
    entries = index if type(index) is tuple else (index,)
    for k, e in enumerate(entries):
        if type(e) is slice and e.step is not None:
            step = operator.index(e.step)
            if step <= 0 and type(index) is tuple:
                _raise_earlier(x, entries, k)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step < 0:
                raise ValueError(
                    "step must be greater than zero (tensors have no negative-step slices; "
                    "use x.flip(dim))"
                )


def _raise_earlier(x: Tensor, entries: tuple, k: int) -> None:
    """The error PyTorch raises before the step of the ``k``-th entry's slice, if any: too
    many indices (it counts them first), then an int out of range or an entry of no index
    type before it (it applies the entries in turn; index tensors and lists only after all
    of them). Read from ``x`` indexed with those entries, the others standing in as the
    whole axes they read."""
    stand_in: list = []
    for j, e in enumerate(entries):
        if e is None or e is Ellipsis or type(e) is bool:
            stand_in.append(e)
        elif isinstance(e, Tensor) and e.dtype in _MASKS:
            stand_in.extend([slice(None)] * e.ndim)
        elif (
            j < k
            and not isinstance(e, (list, tuple, np.ndarray))
            and not (isinstance(e, Tensor) and e.shape)
        ):
            stand_in.append(slice(None) if type(e) is slice else e)
        else:
            stand_in.append(slice(None))
    with no_grad():
        getitem(x, tuple(stand_in))


def setitem(x: Tensor, index: Any, value: Any) -> None:
    """``x[index] = value``: rebinds ``x`` to a copy with the selected elements replaced.

    Where ``x`` is an ``expand()`` that repeats elements of its base, the selection is
    written into the base (which ``x`` then follows), as PyTorch's shared memory does, if it
    holds no element twice; else PyTorch's error."""
    _check_assignable(x, value)
    if type(index) is list:
        index = sequence_as_tuple(index)
    check_steps(x, index)
    if shares_memory(x, value) and not (_HELD and _HELD[-1] is x):  # (not a write-back)
        _refuse_overlapping_value(x, index, value)
    if (
        isinstance(value, Tensor)
        and value.dtype is not x.dtype
        and _puts_through_index(index, value)
    ):
        raise RuntimeError(  # before the indices, as PyTorch checks
            f"setitem: index put requires the source and destination dtypes match, got "
            f"{x.dtype.name} for the destination and {value.dtype.name} for the source; "
            f"convert the value with .to({x.dtype.name})"
        )
    if (
        x._inference
        and x.requires_grad
        and ew.inference_alone(x)
        and (
            ew.inference_alone(x, value)
            or _write_node_name(x, index, not isinstance(value, Tensor)) == "CopySlices"
        )
    ):
        # PyTorch's autograd, whose leaf check _inplace_source makes, skips a write of
        # inference tensors alone, and a write into a view of one (a view that requires no
        # grad): made (then refused outside the mode) as under no_grad
        with no_grad():
            setitem(x, index, value)
        return
    repeated = None if x._view_of is None else expanded_base(x)
    expanded = repeated is not None
    target = repeated if expanded else x
    source = target._inplace_source()
    if expanded:
        with no_grad():
            positions = getitem(mv.expand(_positions(target), x.shape), index)
    else:
        positions = _selected_positions(x, index)
    arrays = _index_arrays(index)
    if _fills_through_byte_mask(arrays, value):
        raise RuntimeError(
            "setitem: a single value cannot be written through a uint8 mask (PyTorch's "
            "masked_fill_ takes only bool masks); convert the mask with .bool()"
        )
    puts = _puts_through(arrays, value)  # (before value is expanded)
    number = not isinstance(value, Tensor)
    given = None if number else value  # (its edge: PyTorch's node has one for the value)
    if not number and value.requires_grad and is_grad_enabled() and not (_HELD and _HELD[-1] is x):
        given = value = _as_written(value, positions.shape, bool(arrays))
    # (PyTorch writes into an inference tensor outside the mode, then refuses, in its version
    # bump; a write through a view of it (CopySlices) is refused for an alias of one too)
    refused = (
        x._inference
        and not (_HELD and _HELD[-1] is x)  # (not a view's write-back)
        and x._refuses_inference_update(_write_node_name(x, index, number) == "CopySlices")
    )
    if number:
        value = fill_value(value, x.dtype, "setitem")
        value = Tensor(x.backend.full((), value, x.dtype), x.backend, x.dtype)
    elif value.dtype is not x.dtype:
        value = ew.cast(value, x.dtype)
    check_backends("setitem", (x, value))
    shape = value.shape
    try:
        value = mv.expand(_without_leading_ones(value, positions.ndim), positions.shape)
    except RuntimeError:
        raise RuntimeError(
            f"setitem: a value of shape {list(shape)} cannot be assigned to a selection "
            f"of shape {list(positions.shape)}"
        ) from None
    # PyTorch writes index arrays with index_put_ or masked_fill_, which may write through
    # elements that repeat (with a warning)
    op = ("index_put_" if puts else "masked_fill_") if arrays else _SETITEM
    n = positions.numel()
    if not expanded and not (is_grad_enabled() and (source.requires_grad or value.requires_grad)):
        # no graph to record: the primitives of the general path below, no tensor for each
        written = x.backend.scatter(
            _as_shape(source, (source.numel(),)),
            0,
            _as_shape(positions, (n,)),
            _as_shape(value, (n,)),
        )
        if len(x.shape) != 1:
            written = x.backend.reshape(written, x.shape)
        x._assign(Tensor(written, x.backend, x.dtype), op)
        if refused:
            x._refuse_inference_update("setitem", True)
        return
    flat_index = mv._reshape(positions, (n,), "setitem")
    values = mv._reshape(value, (n,), "setitem")
    flat = mv._reshape(source, (source.numel(),), "setitem")
    if expanded and _HELD and _HELD[-1] is x:
        # a view of x passes its change on (Tensor._pass_on): it wrote the memory, each
        # position once, so only the copies it changed go in (the others hold old values)
        with no_grad():
            old = getitem(mv.reshape(x, (-1,)), getitem(_positions(x), index).reshape(-1))
        target._assign(mv.reshape(scatter_changed(flat, flat_index, values, old), target.shape))
        return
    if expanded:
        if arrays:
            _warn_deprecated_overlap(op)
            if _repeats(getitem(mv.expand(_positions(target), x.shape), _sliced_part(index))):
                flat = through_repeats(flat, op)
        else:
            _check_no_repeats(positions)
    flat = scatter_unchecked(flat, 0, flat_index, values)
    if not expanded and flat._node is not None:  # (as PyTorch's node reads the given index)
        shaped = like(x)
        read = _read_back(index)
        remade_at_backward(
            flat, lambda *now: _written_positions(shaped(), _replaced(index, read, now)), read
        )
    result = mv._reshape(flat, target.shape, "setitem")
    if result._node is not None:
        refuse_saved_indices(op, arrays)
        written_back = _HELD and _HELD[-1] is x  # (a view's change: PyTorch's CopySlices)
        filled = number or (not arrays and given.ndim == 0)  # (PyTorch fills with a 0-d value)
        name = "CopySlices" if expanded or written_back else _write_node_name(x, index, filled)
        labelled(result, name, target, given)
        if written_back and given._node is not None:
            # the edges of the op that changed the view follow the base's, but the view's own
            node = result._node
            node.edges = (node.edges[0], ViewChange(given._node))
        # (PyTorch's index_put_ and masked_fill_ nodes save the index tensors and mask)
        saves_integer_input(result, *index_tensors(index))
    target._assign(result, op)
    if refused:
        x._refuse_inference_update("setitem", True)


def _as_written(value: Tensor, shape: tuple, advanced: bool) -> Tensor:
    """``value`` as PyTorch's setitem hands it to its write of a selection of ``shape`` (its
    node is the write node's edge): its leading size-1 dims dropped by a view (for a copy
    where its shape is not the selection's, for ``index_put_`` where it has some), and a
    copy's value expanded to the selection. A 0-d value, which a copy fills with, stays."""
    lead = 0
    while lead < value.ndim and value.shape[lead] == 1:
        lead += 1
    if advanced:
        return value.view(value.shape[lead:]) if lead else value
    kept = value.shape[lead:]
    if value.shape == shape or not value.ndim or len(kept) > len(shape):
        return value
    if any(m != 1 and m != n for m, n in zip(reversed(kept), reversed(shape))):
        return value  # (the write's own check names the shapes)
    viewed = value.view(kept)
    return viewed if viewed.shape == shape else viewed.expand(shape)


def _as_shape(t: Tensor, shape: tuple) -> Any:
    """``t``'s array in ``shape`` (of its size), reshaped only where that differs, as
    :func:`movement.reshape` does."""
    return t.native if t.shape == shape else t.backend.reshape(t.native, shape)


def refuse_saved_indices(op: str, indices: Any) -> None:
    """PyTorch's error where the node of an index write (``op``), which saves its index
    tensors, would save one made under ``inference_mode()``."""
    for index in indices:
        if isinstance(index, Tensor) and index._inference:
            refuse_saved(op, index)


def _write_node_name(x: Tensor, index: Any, number: bool) -> str:
    """PyTorch's grad_fn name for ``x[index] = value``: its basic parts (ints, slices,
    None) view ``x`` unless each takes a whole axis; the write then goes into that view
    (``CopySlices``), else into ``x`` itself: ``index_put_`` with index tensors, ``fill_``
    of a number or ``copy_`` of a tensor without."""
    items = index if type(index) is tuple else (index,)
    advanced = False
    dim = 0
    for k, item in enumerate(items):
        if item is Ellipsis:
            dim = x.ndim - sum(_axes_taken(later) for later in items[k + 1 :])
            continue
        if isinstance(item, slice):
            if not _whole(item, x.shape[dim]):
                return "CopySlices"
        elif isinstance(item, (list, np.ndarray)) or (isinstance(item, Tensor) and item.ndim):
            advanced = True
        elif isinstance(item, Tensor) and item.dtype is dtypes.bool_:
            advanced = True
        else:  # an int (or 0-d integer tensor) selects, None or a bool adds an axis: views
            return "CopySlices"
        dim += _axes_taken(item)
    if advanced:
        return "IndexPutBackward0"
    return "FillBackward3" if number else "CopyBackwards"


def _whole(item: slice, size: int) -> bool:
    """Whether PyTorch's slicing returns the axis of ``size`` itself for ``item``: its
    start is 0 as given (a negative one is not), its stop clamped to the size."""
    start, stop, step = item.start, item.stop, item.step
    return (
        (start is None or start == 0)
        and (step is None or step == 1)
        and (stop is None or stop >= size)
    )


def _axes_taken(item: Any) -> int:
    """How many of the indexed tensor's axes an index item consumes."""
    if item is None or item is Ellipsis or isinstance(item, (bool, np.bool_)):
        return 0
    if isinstance(item, Tensor) and item.dtype is dtypes.bool_:
        return item.ndim
    if isinstance(item, np.ndarray) and item.dtype == np.bool_:
        return item.ndim
    return 1


#: The values ``x[...] = value`` takes (bool is an int).
_ASSIGNABLE = (Tensor, int, float, complex, np.integer)


def _check_assignable(x: Tensor, value: Any) -> None:
    """PyTorch's ``x[...] = value`` takes a tensor, a Python number or a NumPy integer
    scalar; a sequence, a NumPy array (0-d too), None, another object with ``__index__``, or
    a NumPy float that is no Python float is a TypeError (checked before the index, as
    PyTorch does)."""
    if isinstance(value, _ASSIGNABLE):
        if type(value) is int and not -(2**63) <= value < 2**63:
            # (PyTorch reads a Python int as a 64-bit one first, whatever x's dtype)
            raise ValueError(
                f"setitem: {value} does not fit a 64-bit integer (PyTorch: Overflow when "
                "unpacking long long); pass a float or a tensor"
            )
        return
    kind = type(value)
    name = kind.__name__
    if kind.__module__ != "builtins":
        name = f"{kind.__module__}.{name}"
    raise TypeError(
        f"setitem: can't assign a {name} to a {x.type()}; pass a tensor (tensor(value)) "
        "or a Python number"
    )


def scatter_changed(flat: Tensor, positions: Tensor, values: Tensor, old: Tensor) -> Tensor:
    """``flat`` (1-d) with ``values`` written at ``positions`` (1-d) where they differ from
    ``old``, the values there before: the write of a tensor that holds a position more than
    once, whose unchanged copies must not put the position's old value back."""
    from tensorweaver.ops import creation

    with no_grad():
        changed = ew.ne(values, old)
    n = flat.shape[0]
    at = ew.where(changed, positions, n)  # (unchanged copies write one more element, dropped)
    spare = creation.zeros(1, dtype=flat.dtype, device=flat)
    written = scatter_unchecked(mv.cat([flat, spare]), 0, at, values)
    return mv.narrow(written, 0, 0, n)


def _without_leading_ones(value: Tensor, ndim: int) -> Tensor:
    """``value`` without the leading size-1 dims it has beyond ``ndim``, as PyTorch's setitem
    drops them before broadcasting (``x[0] = v`` with ``v`` of shape ``(1, N)`` fills a row);
    dropping those it has within ``ndim`` changes no broadcast, so they stay."""
    extra = 0
    while extra < value.ndim - ndim and value.shape[extra] == 1:
        extra += 1
    return mv.reshape(value, value.shape[extra:]) if extra else value


def expanded_base(x: Tensor) -> Tensor | None:
    """The tensor whose elements ``x``, an ``expand()`` view (of an ``expand()``, ...) that
    repeats them, shows; None where ``x`` is no such view."""
    view = x._view_of
    if view is None or view[1] is not _write_overlapping:
        return None
    base = view[0]
    while base._view_of is not None and base._view_of[1] is _write_overlapping:
        base = base._view_of[0]
    return base


def _repeats(positions: Tensor) -> bool:
    """Whether some position is among ``positions`` twice."""
    held = positions.backend.to_host(positions.native)
    return bool(np.unique(held).size != held.size)


def _sliced_part(index: Any) -> tuple:
    """``index`` with each index tensor (list, array) replaced by full slices over the
    dimensions it indexes: the view PyTorch's ``x[index] = v`` writes with ``index_put_``."""
    items = index if isinstance(index, tuple) else (index,)
    sliced: list = []
    for i in items:
        if isinstance(i, Tensor) and i.shape:
            sliced.extend([slice(None)] * (i.ndim if i.dtype in _MASKS else 1))
        elif isinstance(i, (list, np.ndarray)):
            sliced.extend([slice(None)] * (np.ndim(i) if np.asarray(i).dtype == bool else 1))
        else:
            sliced.append(i)
    return tuple(sliced)


def through_repeats(source: Tensor, op: str) -> Tensor:
    """``source``, the value of a tensor that ``op`` changes through a view repeating its
    elements (an ``expand()``), on a history whose backward raises: PyTorch's CopySlices
    cannot hand a gradient back through such a view (its copy into the view's repeated
    elements refuses), so a backward that needs one for ``source``'s history fails."""
    if not (source.requires_grad and is_grad_enabled()):
        return source
    from tensorweaver.ops.order_stats import no_derivative  # (builds on this module)

    error = RuntimeError(
        f"{op}: unsupported operation: more than one element of the written-to tensor refers "
        "to a single memory location (a write through an expand() view, whose base's history "
        "needs a gradient back through it); clone() the view before writing into it"
    )
    return no_derivative(Tensor(source.native, source.backend, source.dtype), (source,), error)


def _check_no_repeats(positions: Tensor) -> None:
    """PyTorch's error for a write into an expanded tensor that lands on one element of its
    base twice (``fill_`` may: one value through every copy)."""
    if Tensor._filling():
        return
    if _repeats(positions):
        raise RuntimeError(
            "setitem: unsupported operation: more than one element of the written-to tensor "
            "refers to a single memory location (it was made by expand()); clone() it first, "
            "or write into the tensor it was expanded from"
        )


def index_tensors(index: Any) -> list:
    """The tensors of ``index`` that index as tensors: not the 0-d ones, which index as an
    int or a new axis (PyTorch's IndexBackward0 saves none of them)."""
    return [i for i in _index_arrays(index) if isinstance(i, Tensor)]


#: The NumPy dtypes of an index array that PyTorch indexes with a tensor over its memory (it
#: converts others to int64, a copy).
_SHARED_ARRAYS = frozenset((np.dtype(np.int64), np.dtype(np.bool_), np.dtype(np.uint8)))


def _read_back(index: Any) -> list:
    """The index tensors and arrays of ``index`` that PyTorch's node reads at backward: its
    tensors, and the NumPy arrays it indexes with a tensor over (:data:`_SHARED_ARRAYS`)."""
    return [
        i
        for i in _index_arrays(index)
        if isinstance(i, Tensor) or (isinstance(i, np.ndarray) and i.dtype in _SHARED_ARRAYS)
    ]


def _replaced(index: Any, given: list, now: tuple) -> Any:
    """``index`` with its tensors and arrays ``given`` (:func:`_read_back`'s, or ``[index]``)
    replaced by ``now``, what a :class:`Remade` remakes it from."""
    if type(index) is not tuple:
        return now[0] if given and index is given[0] else index
    swap = {id(g): n for g, n in zip(given, now)}
    return tuple([swap.get(id(i), i) for i in index])


def _index_arrays(index: Any) -> list:
    """The index's tensors (but 0-d ones, which index as ints), lists and arrays."""
    items = index if isinstance(index, tuple) else (index,)
    return [
        i for i in items if isinstance(i, (list, np.ndarray)) or (isinstance(i, Tensor) and i.shape)
    ]


def _fills_through_byte_mask(arrays: list, value: Any) -> bool:
    """Whether PyTorch would write ``value`` with ``masked_fill_``, which refuses uint8 masks:
    one value, and a uint8 mask (a tensor or a NumPy array) as the only index tensor
    (``arrays``: the index's tensors, :func:`_index_arrays`)."""
    mask = arrays[0] if len(arrays) == 1 else None
    dtype = getattr(mask, "dtype", None)
    byte = dtype is dtypes.uint8 or (isinstance(mask, np.ndarray) and dtype == np.uint8)
    return byte and (not isinstance(value, Tensor) or value.numel() == 1)


def shares_memory(x: Tensor, value: Any) -> bool:
    """Whether ``value`` is ``x`` or another tensor in ``x``'s memory as PyTorch's would be:
    one of them a view, both of one :func:`memory_root` (a copy_ may leave two tensors over
    one array, which are not views); the one case an overlap check of an in-place write
    needs, so told cheaply first (two tensors that are no views: apart, or the same
    elements). Their elements' addresses then tell whether they meet (``data_ptr()`` and
    ``stride()``, PyTorch's also for a view whose array is a copy written back)."""
    if value is x:
        return True
    if not isinstance(value, Tensor) or (
        x._view_of is None
        and value._view_of is None
        and x._alias_of is None
        and value._alias_of is None
    ):
        return False
    storage = getattr(x.backend, "storage", None)
    return (
        storage is not None  # (else no addresses to compare)
        and value.backend is x.backend
        and storage(x.native) is not None
        and storage(value.native) is not None
        and memory_root(value) is memory_root(x)
    )


def memory_root(t: Tensor) -> Tensor:
    """The tensor at the top of ``t``'s chain of bases (views; ``detach()`` and ``.data``
    aliases), whose memory PyTorch's ``t`` uses: also where ``t``'s array is a copy that is
    written back into its base (``unfold``, ``as_strided``, ``view(dtype)``), which
    ``Tensor._memory_root`` (the top of the chain over one array) stops below."""
    while True:
        base = t._alias_of
        if base is None:
            if t._view_of is None:
                return t
            base = t._view_of[0]
        t = base


def refuse_overlapping_operands(op: str, x: Tensor, operands: tuple, indices: Any = None) -> None:
    """PyTorch's error for an index write ``op`` into ``x`` (index_put_, put_) where one of
    ``operands`` (its values first, then its indices) lies anywhere in ``x``'s memory: its
    kernel would read elements it already wrote. ``indices``: index_put_'s, with which one
    bool mask and one value is PyTorch's masked_fill_, which checks none (told only where
    an operand shares memory: the common call pays the cheap test alone)."""
    for t in operands:
        if shares_memory(x, t):
            if indices is not None and not _puts_through(list(indices), operands[0]):
                return
            _refuse_overlap(op, x, (t,))


def _refuse_overlapping_value(x: Tensor, index: Any, value: Tensor) -> None:
    """PyTorch's error for ``x[index] = value`` where ``value`` lies in ``x``'s memory: for
    copy_ (a basic index) over part of the selection, for index_put_ anywhere in ``x``.
    PyTorch checks neither a 0-d value (fill_) nor one broadcast (its repeats are not
    dense), nor masked_fill_'s one value."""
    if _puts_through_index(index, value):
        _refuse_overlap("index_put_", x, (value,))
    elif value.ndim and not _index_arrays(index):
        with no_grad():
            selected = getitem(x, index)
        # (the value may be this selection made with grad, whose size-1 axes' strides are
        # PyTorch's chain's: those strides address nothing, and do not count here)
        if selected.numel() == value.numel() and not same_elements(
            selected, value, unit_strides=False
        ):
            _refuse_overlap("copy_", selected, (value,), partly=True)


def _puts_through_index(index: Any, value: Any) -> bool:
    """Whether PyTorch would write ``value`` with ``index_put_``, which takes only values of
    the tensor's dtype: an index tensor or list, but not one bool mask with one value (that
    is ``masked_fill_``)."""
    return _puts_through(_index_arrays(index), value)


def _puts_through(arrays: list, value: Any) -> bool:
    """:func:`_puts_through_index` of an index whose index arrays are ``arrays``."""
    if not arrays:
        return False
    one_mask = len(arrays) == 1 and (
        getattr(arrays[0], "dtype", None) in (dtypes.bool_, np.bool_)
        or (isinstance(arrays[0], list) and all(type(b) is bool for b in arrays[0]))
    )
    return not (one_mask and (not isinstance(value, Tensor) or value.numel() == 1))


def check_scatter_index(op: str, x: Tensor, dim: int, index: Any) -> tuple[int, Tensor]:
    """``dim`` normalised and ``index`` as int64, after PyTorch's checks for gather and the
    scatters: ``index`` has ``x``'s number of dimensions, is no larger than ``x`` but along
    ``dim``, and lies in ``[0, size)`` along ``dim`` (no negative indices)."""
    if not isinstance(index, Tensor):
        raise RuntimeError(f"{op}(): expected index to be a tensor, got {type(index).__name__}")
    index = int64_index(op, index, x)
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
    check_index(f"{op}()", index, x.shape[d] if x.ndim else 1, d)
    return d, index


def _unless_empty(error: RuntimeError, x: Tensor, index: Any, src: Any = None) -> None:
    """Raise ``error`` (a size or dtype check's) unless ``index`` is empty: PyTorch then
    checks none of its sizes nor its dtype, and reads or writes nothing (``src``'s dtype is
    still checked)."""
    if not isinstance(index, Tensor) or index.numel():
        raise error
    if isinstance(src, Tensor) and src.dtype is not x.dtype:
        raise error


def vectors_of_0d(*tensors: Any) -> bool:
    """Whether PyTorch's gather and scatters take these operands' 0-d tensors as 1-element
    vectors: one is 0-d and none has more than one dimension."""
    ranks = [t.ndim for t in tensors if isinstance(t, Tensor)]
    return 0 in ranks and max(ranks) == 1


def as_vector(t: Any) -> Any:
    """A 0-d tensor as a 1-element vector; anything else unchanged."""
    return mv.reshape(t, (1,)) if isinstance(t, Tensor) and not t.ndim else t


def gather(
    input: Tensor,
    dim: int = mv.REQUIRED,
    index: Tensor = mv.REQUIRED,
    *,
    sparse_grad: bool = False,
    **aliases: Any,
) -> Tensor:
    if aliases or dim is mv.REQUIRED or index is mv.REQUIRED:
        dim = mv.dim_alias("gather", aliases, dim, index=index)
    if sparse_grad:
        raise NotImplementedError(
            "gather(): sparse_grad=True asks for a sparse gradient, and TensorWeaver has no "
            "sparse tensors; pass sparse_grad=False for the same values as a dense gradient"
        )
    try:
        d, positions = check_scatter_index("gather", input, dim, index)
    except RuntimeError as error:
        if vectors_of_0d(input, index):  # off the hot path: only such shapes fail the checks
            return mv.reshape(gather(as_vector(input), dim, as_vector(index)), index.shape)
        _unless_empty(error, input, index)
        # Nothing is read, but the result is still part of x's graph, as PyTorch's.
        nothing = Tensor(input.backend.full((0,), 0, dtypes.int64), input.backend, dtypes.int64)
        return mv.reshape(gather_unchecked(mv.reshape(input, (-1,)), 0, nothing), index.shape)
    return saves_integer_input(gather_unchecked(input, d, positions), index)


def _saving_index(out: Tensor, index: Any, only_for: Tensor | None = None) -> Tensor:
    """``out``, whose node saves ``index``, its call's index argument, as PyTorch's does:
    changed in place before backward, it makes backward refuse (one that is no tensor never
    changes). ``only_for``: the operand whose gradient alone reads the index (scatter_add's
    ``src``): PyTorch's node saves it only when that operand requires grad."""
    if isinstance(index, Tensor) and (only_for is None or only_for.requires_grad):
        saves_integer_input(out, index)
    return out


def gather_unchecked(x: Tensor, d: int, index: Tensor) -> Tensor:
    """``gather`` of the core's own ``index``: int64, in range, ``d`` normalised."""
    if x.ndim == 0 and index.ndim:  # backends take an index of their array's rank
        flat = gather_unchecked(mv.reshape(x, (1,)), 0, mv.reshape(index, (-1,)))
        return mv.reshape(flat, index.shape)
    native = x.backend.gather(x.native, d, index.native)
    return apply("gather", native, x.dtype, (x,), (d, index))


def scatter(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Any = None,
    *,
    value: Any = None,
    reduce: str | None = None,
) -> Tensor:
    """A copy of ``input`` with ``src`` (or ``value``) written at ``index`` along ``dim``."""
    if reduce not in (None, "add", "multiply"):
        raise RuntimeError(
            f"scatter(): reduce argument must be either add or multiply, got {reduce!r}"
        )
    if reduce is not None and isinstance(src, Tensor):
        warnings.warn(  # PyTorch deprecates only this form (a number src keeps reduce=)
            "scatter(): the reduce argument with a tensor src is deprecated; use "
            f"scatter_reduce(dim, index, src, {'sum' if reduce == 'add' else 'prod'!r})",
            UserWarning,
            stacklevel=2,
        )
    if src is None:
        src = value
    number = not isinstance(src, Tensor)  # (the value overload: PyTorch's ScatterBackward1)
    if input._inference and copied_first(input, index, src):
        with no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (reduce= warned above, once)
            out = scatter(input, dim, index, src, reduce=reduce)
        return ew.as_copy_of(out, input)
    try:
        d, positions = check_scatter_index("scatter", input, dim, index)
        if not isinstance(src, Tensor):
            src = fill_value(src, input.dtype, "scatter")  # PyTorch's range checks and wrapping
            src = Tensor(input.backend.full((), src, input.dtype), input.backend, input.dtype)
            src = mv.expand(src, positions.shape)
        src = _src_for(input, positions, src, "scatter")
    except RuntimeError as error:
        if vectors_of_0d(input, index, src):  # as gather's
            out = scatter(as_vector(input), dim, as_vector(index), as_vector(src), reduce=reduce)
            return mv.reshape(out, input.shape)
        _unless_empty(error, input, index, src)
        return input.clone()
    if reduce is None:
        out = saves_integer_input(scatter_unchecked(input, d, positions, src), index)
        return labelled(out, "ScatterBackward1", input) if number else out
    reduced = scatter_add_unchecked if reduce == "add" else _scatter_multiply
    if not (is_grad_enabled() and (input.requires_grad or src.requires_grad)):
        return reduced(input, d, positions, src)
    # PyTorch defines no derivative for scatter's reduce= forms (scatter_reduce has one)
    from tensorweaver.ops.order_stats import NO_DERIVATIVE, no_derivative  # (builds on this)

    with no_grad():
        out = reduced(input, d, positions, src)
    return no_derivative(out, (input, src), RuntimeError(NO_DERIVATIVE.format("scatter")))


def _scatter_multiply(x: Tensor, d: int, index: Tensor, src: Tensor) -> Tensor:
    """``x`` times the product of the ``src`` elements ``index`` sends to each place."""
    from tensorweaver.ops.numeric import scatter_reduce  # numeric builds on this module

    if x.ndim == 0 and index.ndim:
        return _on_vector(_scatter_multiply, x, index, src)
    return scatter_reduce(x, d, index, src, "prod")


def _on_vector(scatter_op: Any, x: Tensor, index: Tensor, src: Tensor) -> Tensor:
    """``scatter_op`` into a 0-d ``x`` by a 0-d or 1-d ``index``, done on ``x`` as a 1-element
    vector: backends take an index of their array's rank."""
    flat = scatter_op(mv.reshape(x, (1,)), 0, mv.reshape(index, (-1,)), mv.reshape(src, (-1,)))
    return mv.reshape(flat, ())


def copied_first(input: Tensor, *operands: Any) -> bool:
    """Whether PyTorch's out-of-place index write (``scatter``, ``index_add``, ...) of an
    inference ``input`` that requires grad, with inference ``operands`` alone, clones
    ``input`` first: the clone records ``CopyBackwards`` (:func:`ew.as_copy_of`), the write
    into it nothing."""
    return input._requires_grad and ew.inference_alone(input, *operands)


def scatter_unchecked(x: Tensor, d: int, index: Tensor, src: Tensor) -> Tensor:
    """``scatter`` of the core's own ``index`` (int64, in range) and ``src`` (x's dtype,
    index's shape)."""
    if x.ndim == 0:  # also for a 0-d index: a backend's 0-d array may be a NumPy scalar
        return _on_vector(scatter_unchecked, x, index, src)
    native = x.backend.scatter(x.native, d, index.native, src.native)
    return apply_indexed("scatter", native, x, d, index, src)


def apply_indexed(op: str, native: Any, x: Tensor, d: int, index: Tensor, src: Tensor) -> Tensor:
    """``apply`` for a write of ``src`` into ``x`` at ``index``, which counts among the
    operands of the all-inference test: PyTorch's node takes it, so an index made outside
    ``inference_mode()`` makes the op of inference ``x`` and ``src`` a recorded one."""
    out = apply(op, native, x.dtype, (x, src), (d, index))
    if (
        out._node is None
        and (x._requires_grad or src._requires_grad)
        and is_grad_enabled()
        and not all_inference((index,))
    ):
        out._node = Node(op, (x, src), (d, index))
        out._requires_grad = True
    return out


def _src_for(x: Tensor, index: Tensor, src: Tensor, op: str) -> Tensor:
    """``src`` cut to ``index``'s shape (PyTorch reads only that part); it must have ``x``'s
    dtype, as PyTorch requires."""
    if src.dtype is not x.dtype:
        raise RuntimeError(
            f"{op}(): expected self.dtype to be equal to src.dtype, got {x.dtype.name} and "
            f"{src.dtype.name}; convert src with .to({x.dtype.name})"
        )
    if src.shape != index.shape:
        if src.ndim != index.ndim or any(s < i for s, i in zip(src.shape, index.shape)):
            raise RuntimeError(
                f"{op}(): src of shape {list(src.shape)} is smaller than index of shape "
                f"{list(index.shape)}"
            )
        src = cut_source(src, index.shape, op.title().replace("_", "") + "Backward0")
    return src


def cut_source(src: Tensor, shape: tuple, node: str) -> Tensor:
    """The leading part of ``shape`` of a scatter's ``src``, the part PyTorch reads. Where
    ``src`` is larger, PyTorch's ``node`` hands back a gradient of ``shape``, which its engine
    refuses: so does backward here, when it computes src's gradient (autograd/gradients.py
    ``_cut_source``)."""
    if tuple(src.shape) == tuple(shape):
        return src
    starts, steps = [0] * src.ndim, [1] * src.ndim
    if not (src._requires_grad and is_grad_enabled()):
        return mv.slice_dims(src, starts, list(shape), steps)
    with no_grad():
        cut = mv.slice_dims(src, starts, list(shape), steps)
    return apply("cut_source", cut.native, src.dtype, (src,), node)


def scatter_add(
    input: Tensor,
    dim: int = mv.REQUIRED,
    index: Tensor = mv.REQUIRED,
    src: Tensor = mv.REQUIRED,
    **aliases: Any,
) -> Tensor:
    """A copy of ``input`` with ``src`` added at ``index`` along ``dim``; duplicates accumulate."""
    if aliases or dim is mv.REQUIRED or index is mv.REQUIRED or src is mv.REQUIRED:
        dim = mv.dim_alias("scatter_add", aliases, dim, index=index, src=src)
    if input._inference and copied_first(input, index, src):
        with no_grad():
            out = scatter_add(input, dim, index, src)
        return ew.as_copy_of(out, input)
    try:
        d, positions = check_scatter_index("scatter_add", input, dim, index)
        src = _src_for(input, positions, src, "scatter_add")
    except RuntimeError as error:
        if vectors_of_0d(input, index, src):  # as gather's
            out = scatter_add(as_vector(input), dim, as_vector(index), as_vector(src))
            return mv.reshape(out, input.shape)
        _unless_empty(error, input, index, src)
        return input.clone()
    return _saving_index(scatter_add_unchecked(input, d, positions, src), index, src)


def scatter_add_unchecked(x: Tensor, d: int, index: Tensor, src: Tensor) -> Tensor:
    """``scatter_add`` of the core's own ``index`` (int64, in range) and ``src`` (x's dtype,
    index's shape)."""
    if x.ndim == 0:  # as scatter_unchecked
        return _on_vector(scatter_add_unchecked, x, index, src)
    native = x.backend.scatter_add(x.native, d, index.native, src.native)
    return apply_indexed("scatter_add", native, x, d, index, src)


def index_select(
    input: Tensor, dim: int = mv.REQUIRED, index: Tensor = mv.REQUIRED, **aliases: Any
) -> Tensor:
    if aliases or dim is mv.REQUIRED or index is mv.REQUIRED:
        dim = mv.dim_alias("index_select", aliases, dim, index=index)
    d = _axis(dim, input.ndim, "index_select")
    positions = int64_index("index_select", index, input)
    if positions.ndim > 1:
        raise IndexError(f"index_select(): index must be 0-d or 1-d, got shape {positions.shape}")
    flat = mv.reshape(positions, (-1,))
    if input.ndim == 0:
        if flat.shape[0] != 1:
            raise RuntimeError(
                f"index_select(): index to a 0-d tensor can have only 1 value, got {flat.shape[0]}"
            )
        check_index("index_select()", flat, 1, 0, error=IndexError)
        return input.clone()
    # PyTorch's CPU kernels raise IndexError, but RuntimeError along dimension 1 or into an
    # empty tensor of more than one dimension.
    error = RuntimeError if input.ndim > 1 and (d == 1 or input.numel() == 0) else IndexError
    check_index("index_select()", flat, input.shape[d], d, error=error)
    out = labelled(take_along(input, d, flat), "IndexSelectBackward0", input)
    return _saving_index(out, index)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of ``input`` with the slices of ``source`` added at ``index`` along ``dim``."""
    if input._inference and copied_first(input, index, source):
        with no_grad():
            out = index_add(input, dim, index, source, alpha=alpha)
        return ew.as_copy_of(out, input)
    d = _axis(dim, input.ndim, "index_add")
    if is_grad_enabled() and source.requires_grad and not ew.inference_alone(source, input, index):
        refuse_saved_indices("index_add", (index,))  # (source's gradient reads it: saved)
    if isinstance(index, Tensor) and index.ndim > 1:
        raise IndexError(
            f"index_add(): Index is supposed to be a vector, but got dim: {index.ndim} "
            f"(shape {list(index.shape)}); flatten it"
        )
    positions = mv.reshape(int64_index("index_add", index, input), (-1,))
    if source.dtype is not input.dtype:
        raise RuntimeError(
            f"index_add(): self ({input.dtype.name}) and source ({source.dtype.name}) must have "
            f"the same dtype; convert source with .to({input.dtype.name})"
        )
    given = source  # (PyTorch's node takes it; alpha scales inside: no node of its own)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):  # PyTorch casts alpha
        alpha = bool(alpha) if input.dtype is dtypes.bool_ else int(alpha)
    if alpha != 1:
        source = ew.cast(ew.mul(source, alpha), input.dtype)
    if input.ndim == 0 and source.ndim == 0 and positions.shape[0] == 1:  # as a 1-element vector
        check_index("index_add()", positions, 1, d, error=IndexError)
        out = mv.reshape(
            index_add_unchecked(mv.reshape(input, (1,)), 0, positions, source.reshape(1)), ()
        )
        return _saving_index(labelled(out, "IndexAddBackward0", input, given), index, given)
    if source.ndim == 0 and d == 0 and positions.shape[0] != 1:  # (PyTorch reads size(0))
        raise IndexError(
            f"index_add(): Dimension specified as {d} but source has no dimensions, for "
            f"{positions.shape[0]} indices; give source one slice per index"
        )
    if (
        source.ndim != input.ndim
        or input.ndim == 0
        or source.shape[d] != positions.shape[0]
        or any(a != b for k, (a, b) in enumerate(zip(source.shape, input.shape)) if k != d)
    ):
        raise RuntimeError(
            f"index_add(): source of shape {list(source.shape)} does not fit input of shape "
            f"{list(input.shape)} with {positions.shape[0]} indices along dim {d}; it must have "
            "the input's shape but along dim, where it has one slice per index"
        )
    # PyTorch's CPU kernels (contiguous input) raise RuntimeError only along the first or
    # last of several dimensions with alpha 1, IndexError otherwise.
    inner = 0 < d < input.ndim - 1
    error = IndexError if input.ndim <= 1 or alpha != 1 or inner else RuntimeError
    try:
        check_index("index_add()", positions, input.shape[d], d, error=error)
    except error:
        if input.numel() or input.ndim <= 1:
            raise
        return input.clone()  # PyTorch checks no index of an empty input of several dims
    out = index_add_unchecked(input, d, positions, source)
    if out._node is not None and isinstance(index, Tensor):
        shaped, shape = like(input), source.shape
        remade_at_backward(out, lambda i: _added_at(i, shaped(), d, shape, error), [index])
    return _saving_index(labelled(out, "IndexAddBackward0", input, given), index, given)


def _added_at(index: Tensor, x: Tensor, d: int, shape: tuple, error: type) -> Tensor:
    """The index of ``index_add``'s scatter-add node, made again from its ``index``."""
    positions = mv.reshape(int64_index("index_add", index, x), (-1,))
    check_index("index_add()", positions, x.shape[d], d, error=error)
    return along(positions, d, shape)


def index_add_unchecked(x: Tensor, d: int, index: Tensor, source: Tensor) -> Tensor:
    """``index_add`` of the core's own 1-d ``index`` (int64, in range, ``d`` normalised)."""
    full_index = along(index, d, source.shape)
    return scatter_add_unchecked(x, d, full_index, _src_for(x, full_index, source, "index_add"))


def along(index: Tensor, d: int, shape: tuple) -> Tensor:
    """A 1-d ``index`` along dimension ``d``, expanded to ``shape`` (for a scatter)."""
    view = [1] * len(shape)
    view[d] = index.shape[0]
    return mv.expand(mv.reshape(index, tuple(view)), shape)


def take_along_dim(
    input: Tensor, indices: Tensor, dim: int | None = None, **aliases: Any
) -> Tensor:
    """``input``'s elements at ``indices`` along ``dim`` (of the flattened ``input`` when None);
    ``indices`` in ``[0, size)``, as ``gather``, or, when ``dim`` is given, in ``[-size,
    size)`` counting negative ones from the end (PyTorch's CPU kernel reads out of bounds
    instead of checking beyond that)."""
    if aliases:
        dim = mv.dim_alias("take_along_dim", aliases, dim, None)
    if not isinstance(indices, Tensor) or indices.dtype is not dtypes.int64:
        raise RuntimeError(
            "take_along_dim(): dtype of indices should be int64, got "
            f"{getattr(indices, 'dtype', type(indices)).name}"
        )
    if dim is None:  # (PyTorch's gather saves a view of indices: its changes count)
        # (views, as PyTorch's: a non-contiguous input or indices is its view's error)
        flat = input.view(-1)
        out = gather(flat, 0, indices.view(-1))
        if out._node is not None:
            shaped = like(flat)
            remade_at_backward(
                out,
                lambda i: check_scatter_index("gather", shaped(), 0, mv.reshape(i, (-1,)))[1],
                [indices],
            )
        return _saving_index(out, indices)
    d = _axis(dim, input.ndim, "take_along_dim")
    if not input.ndim:
        raise IndexError(
            f"take_along_dim(): dimension specified as {dim} but the tensor has no dimensions; "
            "pass dim=None"
        )
    if indices.ndim != input.ndim:
        raise RuntimeError(
            f"take_along_dim: input and indices should have the same number of dimensions, "
            f"got shapes {input.shape} and {indices.shape}"
        )
    # Every dimension but `dim` broadcasts.
    others = broadcast_shapes(
        "take_along_dim",
        input.shape[:d] + (1,) + input.shape[d + 1 :],
        indices.shape[:d] + (1,) + indices.shape[d + 1 :],
    )
    xs, ids = list(others), list(others)
    xs[d], ids[d] = input.shape[d], indices.shape[d]
    input, indices = mv.expand(input, xs), mv.expand(indices, ids)
    check_backends("take_along_dim", (input, indices))
    size = input.shape[d]
    if check_index("gather()", indices, size, d, negative=True):
        indices = ew.where(ew.lt(indices, 0), ew.add(indices, size), indices)
    elif input.requires_grad and is_grad_enabled():
        # PyTorch's gather saves a tensor of its own (that where's): a later in-place change
        # of indices reaches neither its backward nor its version check
        indices = indices.clone()
    return gather_unchecked(input, d, indices)


def _bool_mask(op: str, mask: Any) -> Tensor:
    if not isinstance(mask, Tensor) or mask.dtype is not dtypes.bool_:
        raise RuntimeError(
            f"{op}: expected a bool mask, got {getattr(mask, 'dtype', type(mask)).name}; "
            "convert it with .bool()"
        )
    return mask


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """``input`` with ``value`` where ``mask`` holds; the two broadcast together (the in-place
    ``masked_fill_`` then refuses a result larger than ``input``)."""
    mask = _bool_mask("masked_fill", mask)
    kind = type(value)
    if (
        (kind is float or kind is int)
        and input.dtype.kind == "f"
        and mask.shape == input.shape
        and mask.backend is input.backend
    ):
        # Fast path: a number that keeps x's float dtype, a mask of x's shape. The general
        # path's where, without its promotion and broadcasting work.
        value = fill_value(value, input.dtype, "masked_fill")  # PyTorch's overflow check
        out = ew.where_number(mask, input, value, number_first=True)
        return labelled(allocated_as(out), "MaskedFillBackward0", input)
    name = "MaskedFillBackward1" if isinstance(value, Tensor) else "MaskedFillBackward0"
    if isinstance(value, Tensor):
        if value.ndim:
            raise RuntimeError(
                "masked_fill: only supports a 0-dimensional value tensor, but got one of shape "
                f"{list(value.shape)}"
            )
        if input.dtype.kind in "iub":  # PyTorch reads the value and checks that it fits
            fill_value(value.item(), input.dtype, "masked_fill")
        value = ew.cast(value, input.dtype)
    else:
        value = fill_value(value, input.dtype, "masked_fill")
        value = Tensor(input.backend.full((), value, input.dtype), input.backend, input.dtype)
    try:
        broadcast_shapes("masked_fill", input.shape, mask.shape)
    except RuntimeError:
        raise RuntimeError(
            f"masked_fill: mask of shape {list(mask.shape)} does not broadcast with the input's "
            f"shape {list(input.shape)}"
        ) from None
    return labelled(allocated_as(ew.where(mask, value, input)), name, input)


def allocated_as(out: Tensor, order: tuple[int, ...] | None = None) -> Tensor:
    """``out``, a result no other tensor holds, its array laid out as PyTorch's kernel
    allocates its result: row-major (``masked_fill``'s contiguous clone), or in the axis
    order ``order``, outermost first (an input's ``_preserved_order()``: ``preserve_format``)."""
    shape = out._shape
    if len(shape) < 2 or 0 in shape:
        return out
    if order is None or order == tuple(range(len(shape))):
        # (C order told cheaply; the strides of size-1 axes, which NumPy's flag skips, read)
        if c_ordered(out.native) and (1 not in shape or out._strides() == _c_strides(shape)):
            return out
        order = tuple(range(len(shape)))
    out.native = laid_out(out.backend, out.native, order)
    return out


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements of ``input`` where ``mask`` holds, as a 1-d tensor (the two broadcast)."""
    mask = _bool_mask("masked_select", mask)
    check_backends("masked_select", (input, mask))
    shape = broadcast_shapes("masked_select", input.shape, mask.shape)
    out = take_along(mv.reshape(mv.expand(input, shape), (-1,)), 0, mask_positions(mask, shape))
    if out._node is not None:  # (its gradient goes where the mask holds then)
        remade_at_backward(out, lambda m: mask_positions(m, shape), [mask], prefix=True)
    # (PyTorch's node saves the mask, not its expansion)
    return saves_integer_input(labelled(out, "MaskedSelectBackward0", input), mask)


def mask_positions(mask: Tensor, shape: tuple) -> Tensor:
    """The flat positions where ``mask``, broadcast to ``shape``, holds, in order."""
    flat = mv.reshape(mv.expand(mask, shape), (-1,))
    positions = Tensor(flat.backend.nonzero(flat.native), flat.backend, dtypes.int64)
    return mv.reshape(positions, (-1,))


def nonzero(input: Tensor, *, as_tuple: bool = False) -> Any:
    """The indices of ``input``'s nonzero elements: one row each (int64, shape (n, ndim)),
    or with ``as_tuple`` one tensor per dimension."""
    if as_tuple and input.ndim == 0:  # PyTorch treats a 0-d input as one element here
        return nonzero(mv.reshape(input, (1,)), as_tuple=True)
    coords = Tensor(input.backend.nonzero(input.native), input.backend, dtypes.int64)
    if as_tuple:
        return tuple(coords[:, k] for k in range(input.ndim))
    return coords


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:
    """``nonzero(input)`` with exactly ``size`` rows: the first ``size`` ones, or all of them
    followed by rows of ``fill_value``."""
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise RuntimeError(f"nonzero_static: 'size' must be a non-negative integer, got {size!r}")
    coords = nonzero(input)
    found = coords.shape[0]
    if found >= size:
        return mv.narrow(coords, 0, 0, size)
    rows = (size - found, input.ndim)
    fill = Tensor(input.backend.full(rows, fill_value, dtypes.int64), input.backend, dtypes.int64)
    return mv.cat([coords, fill], 0)
