"""The Tensor: a backend's native array, its dtype and device, and its place in the graph.

A tensor never computes: its operators and methods are the op functions of
:mod:`tensorweaver.ops`, attached to the class in :mod:`tensorweaver.ops.methods`. The
native array is treated as immutable (the IR is functional), so an in-place method computes
a new array and rebinds it (:meth:`Tensor._assign`). What PyTorch's shared memory does for
views is done by hand: a view writes its changes back into its base (``ops/views.py``), and
a tensor brings its live views and ``detach()`` aliases up to date after each of its own
changes (:meth:`Tensor._refresh_views`), so an older view sees them as in PyTorch.

**Memory shared with host code.** On a backend that can (NumPy; torch on the CPU; see the
optional ``wrap_host``/``host_view``/``write_into`` of :mod:`tensorweaver.contract.ir`), a
tensor from ``tw.from_numpy`` or one whose ``numpy()`` was called shares its memory with
NumPy, as in PyTorch: its in-place methods write their result into that memory
(:meth:`Tensor._store`) instead of rebinding, so the NumPy side sees them, and NumPy's writes
are seen by the tensor. Such a tensor is *host-shared*; ``detach()``/``.data`` of it are too.
Every other tensor stays functional, but for one whose live views over its array are many
(:meth:`Tensor._wrote_into_memory`: where nothing else holds that array, the change is written
into it, so the views need not be read again). Because other tensors may hold the same array (views,
``detach()``, results of ops that return an input as is), each write is counted per storage
and added to the version of every tensor over that storage (:attr:`Tensor._version`), so a
backward that needs overwritten values raises PyTorch's "modified by an inplace operation"
error; but each ``from_numpy`` tensor (and its views and aliases) leaves out the writes made
through another one over the same array, as PyTorch's counter per ``from_numpy``. Limits,
where PyTorch would share further:

* The first ``numpy()`` of a tensor that is not host-shared copies its array once (its array
  may be held by the graph, or by a tensor it was not derived from as a view); its live views
  over that array and the ``detach()`` chains that hold it move with it, and ``numpy()`` of
  a view moves the tensor whose memory it views. A view that holds an array of its own
  (``as_strided``, ``unfold``, ``diagonal``, complex parts: copies its writes are carried
  back from) gets memory of its own from ``numpy()``.
* A view (``x[0]``, ``x.t()``, ``reshape``, ...) of a host-shared tensor sees later writes,
  and its own in-place methods write into the shared memory (then, as for any view, into its
  base through ops/views.py, which bumps the base's version). A view op that copies in our
  backend where PyTorch's views (``reshape`` of a non-contiguous tensor is a copy in both)
  gives a tensor that neither sees nor makes such writes directly.
* Ops that hand back their input's array in a new tensor where PyTorch copies (``clone``
  until it copies host-shared memory, a 0-d ``sum``, ``round`` of an integer tensor, an
  ``autograd.Function`` returning an input) give a tensor that sees later writes.
* A read-only array is shared for reading; an in-place method gives the tensor its own copy.
* ``np.asarray(tensor)`` copies; ``tensor.numpy()`` shares.
"""

from __future__ import annotations

import operator
import sys
import threading
import weakref
from typing import Any

from tensorweaver.autograd.hooks import (
    GRAD_HOOKS,
    NODE_POSTHOOKS,
    NODE_PREHOOKS,
    bypass_view_hooks,
)
from tensorweaver.autograd.mode import (
    enable_grad,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
)
from tensorweaver.autograd.node import (
    INPLACE_CHANGES,
    SAVED_INTEGER_OUTPUTS,
    SAVED_TENSORS_HOOKS,
    Node,
    ViewChange,
    _saves_output,
    integer_output_changed,
    note_invalid_history,
    output_changed,
    output_rewritten,
    saved_operand,
)
from tensorweaver.autograd.view_regeneration import STALE_VIEWS, forget, mark_stale, regenerate
from tensorweaver.contract.dtypes import DType, bfloat16
from tensorweaver.memory_formats import (
    C_TESTS,
    c_test,
    contiguous_format,
    preserved_order,
    takes_writes,
)

#: Tensors (by id) whose memory is shared with host code: their in-place methods write into
#: it. Weak references, each removing its entry as its tensor dies (a WeakSet would compare
#: tensors with their elementwise ==).
_HOST_SHARED: dict[int, weakref.ref] = {}
#: The storages (backend ``storage`` objects, by id) that host-shared tensors use.
_SHARED_STORAGES: dict[int, bool] = {}
#: In-place writes into each storage (by id), part of the version of every tensor over it.
_WRITES: dict[int, int] = {}
#: For a storage (by id) that ``from_numpy`` tensors use (or tensors ``numpy()`` moved there):
#: each such tensor's (by id: a weak reference to it, and a count) writes into the storage
#: that are none of its counter's, made through another such tensor or before it existed.
#: PyTorch gives each a counter of its own, shared by its views and ``detach()`` aliases.
_ROOT_COUNTERS: dict[int, dict[int, list]] = {}
#: The tensors (by id) whose in-place change is being written back into their bases: the
#: bases' refresh of their views leaves them alone (they hold the new values already).
_WRITING: set[int] = set()
#: The tensors (by id) of such a write-back whose overlapping copies read the base again:
#: that reread is their change, counted already, so it leaves their version alone.
_COUNTED: set[int] = set()
#: ``(base, (axis, start, stop))`` for each write-back under way from a view that holds such
#: a run of its base: the base's views over other runs of that axis keep their values (else
#: writing through each of n held rows would reread all n: quadratic).
_REGIONS: list[tuple] = []


def _apart(written: tuple, region: tuple | None) -> bool:
    """Whether two runs along one axis share no element."""
    return (
        region is not None
        and written[0] == region[0]
        and (written[2] <= region[1] or region[2] <= written[1])
    )


#: The tensors whose in-place change went into their own memory, under way, each with the
#: ids of its views over that memory (:meth:`Tensor._wrote_into_memory`): those have it.
_IN_MEMORY: list[tuple[Any, set[int]]] = []

#: A tensor writes its change into its own memory rather than rebinding where reading its
#: live views again would cost more: about one view's read (~8 us) per this many elements
#: copied (NumPy, one thread: 4096 float64 ~3 us).
_ELEMENTS_PER_VIEW = 4096

#: Bases whose write-back a climbing :meth:`Tensor._pass_on` makes itself: the ``_pass_on``
#: of the last one, reached from inside the write into it, only reports that it ran (so a
#: write through a chain of views is a loop, not one Python call per level).
_HELD: list = []

#: The storage of each write-back under way from a view that wrote into host-shared memory
#: already: the base's write of those values into it is no second write (one version each).
_WRITTEN: list = []

#: The non-leaf tensors (by id, each with a weak reference that removes its entry) that
#: called ``retain_grad()``: as PyTorch's ``retains_grad``, a flag of the tensor, which stays
#: when its node changes (an in-place op, ``detach_``, a base's change) while the retention
#: itself moves with the node (``Node.retained``).
_RETAINING: dict[int, weakref.ref] = {}


class _RetainingRef(weakref.ref):
    """The weak reference of a :data:`_RETAINING` entry, which holds its key (one shared
    callback, no closure per tensor)."""

    __slots__ = ("key",)


def _forget_retention(ref: _RetainingRef) -> None:
    _RETAINING.pop(ref.key, None)


def _retaining(t: Tensor) -> bool:
    """PyTorch's ``t.retains_grad``: whether ``t`` called ``retain_grad()`` as a non-leaf (its
    node's retention, where a replay by tw.compile set it, counts too)."""
    if _RETAINING and id(t) in _RETAINING:
        return True
    node = t._node
    return (
        node is not None
        and node.__class__ is not _InvalidHistory
        and node.retained is not None
        and node.retained() is t
    )


#: How many writes through a ``.data`` tensor are being passed on into the tensors over its
#: memory: their versions, and the nodes that saved their values, do not see them.
_UNCOUNTED = [0]


class _VmapDepth(threading.local):
    """How many of ``tw.func.vmap``'s per-element calls are under way in this thread, and
    the batched values among its tensors (func/_batched_values.py: natives by id, each with
    a weak reference and its levels): PyTorch's vmap holds one value per batch element
    there, so reading a Python value out of such a tensor raises (an unbatched one's, or
    another thread's, reads as usual)."""

    def __init__(self) -> None:
        self.depth = 0
        self.batched: dict = {}


VMAPPED = _VmapDepth()

#: How many ``fill_`` write-backs are under way (they may write through repeated elements).
_FILLING = [0]
#: The in-place ops that PyTorch lets write through elements an ``expand()`` repeats (every
#: other write onto such elements raises its internal-overlap error); all but ``fill_`` with
#: its deprecation warning.
_FILLS = frozenset({"fill_", "masked_fill_", "index_fill_", "index_put_"})


def _fills(op: str) -> bool:
    return op in _FILLS or _FILLING[0] > 0


def _refuse_read_in_vmap(tensor: Tensor, what: str) -> None:
    """PyTorch's error for the user's function reading a Python value out of a batched
    ``tensor`` (``what``) inside ``vmap``; tensorweaver's own reads (an op's implementation)
    pass, as PyTorch's kernels see the whole batch."""
    entry = VMAPPED.batched.get(id(tensor.native))
    if entry is None or entry[0]() is not tensor.native:  # (a dead native's id: reused)
        return
    if sys._getframe(2).f_globals.get("__name__", "").startswith("tensorweaver."):
        return
    raise RuntimeError(
        f"vmap: It looks like you're {what}. We don't support vmap over reading a Python "
        "value out of a Tensor (it holds one value per batch element); rewrite it with tensor "
        "operations (tw.where for data-dependent control flow)"
    )


def _warn_deprecated_overlap(op: str) -> None:
    import warnings

    warnings.warn(
        f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor before "
        "performing this operation.",
        UserWarning,
        stacklevel=4,
    )


def _view_refusals(made: str, now: str, block: str) -> tuple[str, str]:
    """PyTorch's errors for a view ``made`` with grad off (``"no_grad"``, ``"inference"``)
    that is written in place, or whose base or another view of it is, ``now`` (grad on)."""
    advice = (
        " Given that this use case is ambiguous and error-prone, it is forbidden. You can "
        "clarify your code by moving both the view and the inplace either both inside the "
        f"{block} block (if you don't want the inplace to be tracked) or both outside (if you "
        "want the inplace to be tracked)."
    )
    return (
        f"A view was created in {made} mode and is being modified inplace {now}.{advice}",
        f"A view was created in {made} mode and its base or another view of its base has been "
        f"modified inplace {now}.{advice}",
    )


_NO_GRAD_VIEW_WRITTEN, _NO_GRAD_VIEW_CHANGED = _view_refusals(
    "no_grad", "with grad mode enabled", "no_grad"
)
_INFERENCE_VIEW_WRITTEN, _INFERENCE_VIEW_CHANGED = _view_refusals(
    "inference", "in normal mode", "inference_mode"
)
#: The refusals of a view made with grad off, which PyTorch gives no grad_fn of its own.
_MADE_WITHOUT_GRAD = (_NO_GRAD_VIEW_CHANGED, _INFERENCE_VIEW_CHANGED)


def _refusals_of_a_view_made_now() -> tuple[str, str]:
    """The errors of a view made now, with grad off: the written and the changed one, in
    the words of the mode that turned grad off (inference_mode, else no_grad)."""
    if is_inference_mode_enabled():
        return _INFERENCE_VIEW_WRITTEN, _INFERENCE_VIEW_CHANGED
    return _NO_GRAD_VIEW_WRITTEN, _NO_GRAD_VIEW_CHANGED


def _move_retention(t: Tensor, old: Any, new: Any) -> None:
    """Move ``t``'s ``retain_grad()`` from its old node to ``new``, its node now, as PyTorch
    moves the retains-grad hook to a tensor's new ``grad_fn`` (after an in-place change, or
    a view's regenerated one): ``.grad`` is then the gradient of its latest value, which the
    old node no longer fills."""
    retained = old.retained
    if new is not None and new is not old and retained() is t:
        new.retained, old.retained = retained, None


def _as_copy_slices(base: Tensor, old: Any, view: Tensor) -> None:
    """Name ``base``'s node, made by the write-back of ``view``'s change into it, PyTorch's
    ``CopySlices`` with its edges: ``base``'s node before (``old``), then those of the op that
    changed the view but its first. A write-back of its own (a permuted or reshaped view's
    ``base.copy_``) made a ``CopyBackwards`` over the view's node; setitem's is named already."""
    node = base._node
    if node is None or node is old or view._node is None:
        return
    edges = getattr(node, "edges", None)
    if edges and type(edges[-1]) is ViewChange:
        return
    node.label = "CopySlices"
    node.edges = (old, ViewChange(view._node))


class _InvalidHistory:
    """The history of a view PyTorch cannot regenerate after an in-place change of its base
    (one made under ``no_grad`` of a base that requires grad, or one of several views an op
    returned): using it in autograd raises ``message``, as PyTorch does (printing shows
    ``grad_fn=<Invalid>``, as PyTorch's)."""

    __slots__ = ("message",)
    name = "Invalid"

    def __init__(self, message: str) -> None:
        self.message = message

    def __getattr__(self, attr: str) -> Any:
        raise RuntimeError(self.message)


#: The op name of ``x[index] = value`` (ops/index.py's setitem passes none).
_SETITEM = "in-place operation"

#: id -> a weak reference to each alias (``detach()``, ``.data``, ``nn.Parameter``) made
#: outside inference_mode() of an inference tensor: an inference tensor too (it may not
#: require grad nor be saved for backward), but with a version counter of its own, so
#: PyTorch lets it change in place, as it does not a tensor made in the mode nor a view of one.
_INFERENCE_ALIASES: dict[int, weakref.ref] = {}

# The result array and error of the last NumPy ufunc that __array_wrap__ refused with a
# TypeError, for NumPy's retry without context (which names no other input to check).
_REFUSED_WRAP: tuple | None = None


def _mark_inference_alias(t: Tensor) -> None:
    """Record ``t`` (an alias just made) in :data:`_INFERENCE_ALIASES`."""
    t._inference = True
    key = id(t)
    _INFERENCE_ALIASES[key] = weakref.ref(t, lambda _, key=key: _INFERENCE_ALIASES.pop(key, None))


#: id -> the ``grad_dtype`` (None: any) of the leaves where it was set to other than their
#: own dtype, kept aside so that other tensors pay nothing for it (an entry goes with its
#: tensor).
GRAD_DTYPES: dict[int, Any] = {}


def _changes_repeat(t: Tensor, new: Any) -> bool:
    """Whether ``new`` (an array of ``t``'s shape) changes two elements of ``t`` at one memory
    location (``t``'s strides as the backend lays it out): a ``setitem`` writes only the
    elements it selects, which PyTorch refuses only where they repeat one. Host code: a rare
    path (views of expands, memory shared with NumPy that repeats elements)."""
    import numpy as np

    strides = t._strides()
    where = np.zeros((), np.int64)
    for n, s in zip(t.shape, strides):
        where = np.add.outer(where, np.arange(n, dtype=np.int64) * s)
    old, new = t.backend.to_host(t.native), t.backend.to_host(new)
    changed = new != old
    if new.dtype.kind in "fc":  # NaN written over NaN is no change
        changed &= ~(np.isnan(new) & np.isnan(old))
    hit = where[changed]
    return np.unique(hit).size != hit.size


def _write_overlapping(base: Tensor, value: Tensor) -> None:
    """The write-back of an ``expand`` view that repeats elements of ``base``. Only a fill
    gets here (:meth:`Tensor._assign` refuses other writes, as PyTorch does): each element
    of ``base`` takes the value of a copy the fill changed (they all hold the fill value),
    else keeps its own. Host code: a rare path, where a few NumPy calls say it plainly."""
    import numpy as np

    backend = base.backend
    old = backend.to_host(base.native)
    new = backend.to_host(value.native)
    padded = (1,) * (value.ndim - base.ndim) + tuple(base.shape)
    shown = np.broadcast_to(old.reshape(padded), new.shape)
    changed = new != shown
    if new.dtype.kind in "fc":  # NaN written over NaN is no change
        changed &= ~(np.isnan(new) & np.isnan(shown))
    where = np.broadcast_to(np.arange(old.size).reshape(padded), new.shape)
    merged = old.copy().reshape(-1)
    merged[where[changed]] = new[changed]
    native = backend.from_host(merged.reshape(old.shape), base.dtype)
    if is_grad_enabled() and (value._requires_grad or base._requires_grad):
        from tensorweaver.ops.repeated_write import through_copies  # (builds on Tensor)

        result = through_copies(value, base, native, padded)
    else:
        result = Tensor(native, backend, base.dtype)
    base.copy_(result)


# Only fills may write through it (``overlapping``); what wrote into it reads it again after
# (``rereads``: the copies of each element change together).
_write_overlapping.overlapping = _write_overlapping.rereads = True  # type: ignore[attr-defined]


def _storage_of(backend: Any, native: Any) -> Any:
    storage = getattr(backend, "storage", None)
    return None if storage is None else storage(native)


def _writes_into(t: Tensor) -> int:
    """How many in-place writes went into the memory of ``t``'s array (through any tensor
    but those with a counter apart from ``t``'s: _ROOT_COUNTERS); none for a ``.data``
    tensor or its views, whose counter is their own (_counts_apart)."""
    root = _counter_root(t)
    if root is None:
        return 0
    owner = _storage_of(t.backend, t.native)
    if owner is None:
        return 0
    writes = _WRITES.get(id(owner), 0)
    roots = _ROOT_COUNTERS.get(id(owner)) if _ROOT_COUNTERS else None
    if roots is not None:
        elsewhere = roots.get(id(root))
        if elsewhere is not None:
            writes -= elsewhere[1]
    return writes


def _forget(table: dict, key: int) -> None:
    table.pop(key, None)


def _count_write(owner: Any, root: Tensor | None = None) -> None:
    """Count an in-place write into the storage ``owner`` made through a tensor whose
    counter is ``root``'s (_counter_root; None: unknown, every tensor over it counts it)."""
    if not _WRITES:
        _count_versions_per_storage()
    key = id(owner)
    if key not in _WRITES:
        # Once the storage is gone no tensor uses it, and its id may be reused.
        weakref.finalize(owner, _forget_writes, key)
        _WRITES[key] = 0
    _WRITES[key] += 1
    roots = _ROOT_COUNTERS.get(key) if _ROOT_COUNTERS and root is not None else None
    if roots is not None:
        mine = id(root)
        for other, elsewhere in roots.items():
            if other != mine:
                elsewhere[1] += 1


def _count_apart_from_other_roots(t: Tensor, owner: Any) -> None:
    """Give ``t``, a tensor of no chain of views or aliases over the host memory ``owner``
    (``from_numpy``'s, or one ``numpy()`` moved there), a version counter of its own: the
    writes into ``owner`` through other such tensors, or before, are none of its count."""
    key = id(owner)
    roots = _ROOT_COUNTERS.get(key)
    if roots is None:  # (forgotten with the storage: _mark_shared's _forget_storage)
        roots = _ROOT_COUNTERS[key] = {}
    mine = id(t)
    roots[mine] = [
        weakref.ref(t, lambda _, roots=roots, mine=mine: _forget(roots, mine)),
        _WRITES.get(key, 0),
    ]


def _forget_writes(key: int) -> None:
    _WRITES.pop(key, None)
    if not _WRITES:  # every version is its own part again
        Tensor._version = _VERSION_SLOT


class _Slot:
    __slots__ = ("value",)


def _references(holder: _Slot) -> int:
    return sys.getrefcount(holder.value)


def _one_holder() -> int:
    """What ``sys.getrefcount(holder.attribute)`` gives for an object that one attribute
    alone holds (this interpreter's count; 0 where references are not counted, so that no
    count ever matches). The object is never a function's local: a tracer that reads
    ``frame.f_locals`` (a debugger) would add a reference to it and a unit to the count."""
    if sys.implementation.name != "cpython":
        return 0
    slot = _Slot()
    slot.value = object()
    return _references(slot)


_ONE_HOLDER = _one_holder()


def _unseen(t: Tensor) -> bool:
    """Whether the one reference to ``t``'s base is ``t``'s ``_alias_of`` link (``t`` made
    by ``nn.Parameter(tw.empty(...))``, ``x.detach()`` of a dropped ``x``): no code can read
    or write the base any more, so ``t`` need not pass its changes into it. (Views and
    aliases of the base hold it by their ``_view_of``/``_alias_of``, a graph by its inputs:
    each is one more reference.)"""
    base = t._alias_of
    if base._alias_of is not None or base._view_of is not None or _writes_through(base):
        return False
    del base  # counted through the link alone, as _one_holder counts
    return sys.getrefcount(t._alias_of) == _ONE_HOLDER


def _writes_through(t: Tensor) -> bool:
    """Whether ``t`` is host-shared: its in-place methods write into its memory."""
    return bool(_HOST_SHARED) and id(t) in _HOST_SHARED


def _set_writes_through(t: Tensor, on: bool) -> None:
    key = id(t)
    if on:
        _HOST_SHARED[key] = weakref.ref(t, lambda _, key=key: _forget(_HOST_SHARED, key))
    else:
        _HOST_SHARED.pop(key, None)


def _mark_shared(t: Tensor, writes: bool = True) -> None:
    """Record that ``t``'s memory is shared with host code; with ``writes``, ``t``'s in-place
    methods write into it from now on (a read-only array is only read)."""
    if writes:
        _set_writes_through(t, True)
    owner = _storage_of(t.backend, t.native)
    key = id(owner)
    if owner is not None and key not in _SHARED_STORAGES:
        weakref.finalize(owner, _forget_storage, key)
        _SHARED_STORAGES[key] = True
    if owner is not None and t._view_of is None and t._alias_of is None:
        _count_apart_from_other_roots(t, owner)


def _forget_storage(key: int) -> None:
    """Forget a host-shared storage that is gone (its id may be reused)."""
    _SHARED_STORAGES.pop(key, None)
    _ROOT_COUNTERS.pop(key, None)


def _writable(view: Any) -> Any:
    """``view`` (a NumPy array over a host-shared tensor's memory), or where NumPy made it
    read-only (a broadcast: ``expand()``) a writable array over the same memory, as PyTorch's
    ``numpy()`` gives; ``view`` itself where that memory is read-only. Rare: host code."""
    if view.flags.writeable:
        return view
    import numpy as np

    owner = view
    while isinstance(owner.base, np.ndarray):
        owner = owner.base
    flat = owner.ravel(order="K")  # its memory in order (a view where it is one block)
    if not (owner.flags.writeable and np.may_share_memory(flat, owner)):
        return view
    start = view.__array_interface__["data"][0] - flat.__array_interface__["data"][0]
    at = flat[start // view.itemsize :]
    return np.lib.stride_tricks.as_strided(at, view.shape, view.strides, writeable=True)


def _written_storage(view: Tensor, base: Tensor) -> Any:
    """The host-shared memory ``view`` wrote its change into, where ``base`` uses it too
    (the write-back then only brings ``base``'s graph and views up to date), else None."""
    if not (_HOST_SHARED and _writes_through(view)):
        return None
    owner = _storage_of(view.backend, view.native)
    return owner if owner is _storage_of(base.backend, base.native) else None


def _shares_host(backend: Any) -> bool:
    """Whether ``backend`` has the optional methods that share memory with host NumPy arrays
    (it defines all of them or none, :mod:`tensorweaver.contract.ir`)."""
    return getattr(backend, "write_into", None) is not None


def _private_copy(backend: Any, native: Any, dtype: DType) -> Any:
    """A copy of ``native`` that shares memory with nothing."""
    host = backend.host_view(native)
    return backend.from_host(backend.to_host(native) if host is None else host, dtype)


def _laid_out_like(backend: Any, native: Any, old: Any) -> Any:
    """``native`` (the new values of a tensor with views) in the dense memory layout of
    ``old``, its array so far: PyTorch's in-place ops keep the memory, so its views keep
    their strides (and whether a reshape of them views or copies). A ``copy_`` here lays its
    result out as its source (NumPy's and torch's follow their inputs' layouts)."""
    layout, contiguous = getattr(backend, "layout", None), getattr(backend, "contiguous", None)
    was = None if layout is None or contiguous is None else layout(old)
    now = None if was is None else layout(native)
    if now is None or was[0] == now[0] or not old.shape:
        return native
    order = _dense_axis_order(tuple(old.shape), was[0])
    if order is None:
        return native  # not dense (old is itself a strided view): leave it
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    # (no Tensor here: only the backend's array primitives, which record no history)
    dense = contiguous(backend.permute(native, tuple(order)))
    return backend.permute(dense, tuple(inverse))


def _watch_view_result(view: Tensor, node: Any) -> None:
    """Have ``node``, which made ``view``'s new value in place (``i.sigmoid_()`` on a view
    ``i = b[:, :2]``), refuse backward once that memory changes again, if it saves its output:
    PyTorch's saved output shares the version counter of the view and its base, so a later
    write into the base or any view of it (a sibling gate's ``sigmoid_``) raises at backward
    (:func:`watch_memory`)."""
    if type(node) is Node and _saves_output(node):
        watch_memory(node, view)


def watch_memory(node: Any, t: Tensor) -> None:
    """Have ``node``, which saves ``t`` or a copy of it, refuse backward once ``t``'s memory
    changes in place, as PyTorch's saved variable shares the version counter of ``t``, its
    base and every view of that base: checked by the root base's version, which every such
    write moves (a view's own is refreshed only while the view lives). Not under
    saved_tensors_hooks: PyTorch checks no version of a packed tensor."""
    if SAVED_TENSORS_HOOKS:
        return
    while t._view_of is not None:
        t = t._view_of[0]
    node.operands = (*getattr(node, "operands", ()), saved_operand(t, True))


def _root_requires_grad(t: Tensor) -> bool:
    """Whether the tensor at the root of ``t``'s chain of views (PyTorch's ``_base``)
    requires grad."""
    while t._view_of is not None:
        t = t._view_of[0]
    return t.requires_grad


def _note_missed(view: Tensor) -> None:
    """A write missed ``view``, made with a graph (Tensor._count_apart_write): note it stale
    unless it is already with the node it holds (the test inline: a write pays it for each
    live view it misses), and let it require grad where its root gained a history."""
    node = view._node
    noted = STALE_VIEWS.get(id(view))
    if noted is None or noted[1] is not node:
        mark_stale(view)
    if node is None and not view._requires_grad and view._dtype.kind in "fc":
        view._requires_grad = _differentiable_root_requires_grad(view)


def _counts_apart(t: Tensor) -> bool:
    """Whether ``t`` is a ``.data`` tensor or a view of one: PyTorch's counter of that
    memory is then its own, so a write through it into host-shared memory moves no version
    of the tensor it was read from (nor counts on the storage all of them share)."""
    return _counter_root(t) is None


def _counter_root(t: Tensor) -> Tensor | None:
    """The tensor at the top of ``t``'s chain of views and ``detach()`` aliases, whose
    version counter ``t`` shares; None where a ``.data`` tensor is on the way (_counts_apart).
    """
    while not t._own_counter:
        if t._view_of is not None:
            t = t._view_of[0]
        elif t._alias_of is not None:  # (a .detach() of a .data tensor shares its counter)
            t = t._alias_of
        else:
            return t
    return None


def _differentiable_root_requires_grad(t: Tensor) -> bool:
    """Whether the root base of the view ``t`` requires grad, where every view between them is
    differentiable: not a ``view(dtype)`` of another item type (ops/views.py marks its write
    "bits"), which PyTorch makes no view for autograd."""
    while True:
        view = t._view_of
        if view is None:  # (an inference tensor's views never require grad in PyTorch)
            return t._requires_grad and not t._inference
        if getattr(view[1], "part", None) == "bits":
            return False
        t = view[0]


def _out_of_order(t: Any) -> bool:
    """Whether ``t``'s array is not laid out as its backend prefers (C order), told cheaply:
    by a test of the array's own where its type has one (asking the backend for a C-ordered
    array would copy a transposed one only to compare it), else by the backend."""
    native = t.native
    test = C_TESTS.get(type(native), C_TESTS)
    if test is C_TESTS:
        test = c_test(type(native))
    if test is not None and test(native):
        return False  # (the common case: no backend method looked up)
    make = getattr(t.backend, "contiguous", None)
    if make is None:
        return False
    return test is not None or make(native) is not native


def _dense_axis_order(shape: tuple, strides: tuple) -> tuple[int, ...] | None:
    """The axes from outermost to innermost in memory where ``strides`` lay the elements of
    ``shape`` out in one block once each (PyTorch's "non-overlapping and dense": C order, or
    a permutation of it such as channels-last), else None (an expanded or stepped view)."""
    # (a size-1 axis inside the axis of its stride: where PyTorch's empty_like puts it)
    order = tuple(sorted(range(len(shape)), key=lambda d: (-strides[d], shape[d] == 1, d)))
    step = 1
    for d in reversed(order):
        if shape[d] != 1:
            if strides[d] != step:
                return None
            step *= shape[d]
    return order


def note_shape_change(t: Tensor) -> None:
    """Record ``t``'s shape and version now, before its first in-place change of shape
    (autograd/node.py :data:`~tensorweaver.autograd.node.SHAPES_BEFORE`: later ones need no
    record, a node recorded since keeps its inputs' shapes itself), and the shape its node
    made it in (``RESHAPED_OUTPUTS``)."""
    from tensorweaver.autograd.node import SHAPES_BEFORE, note_reshaped_output  # (rare)

    key = id(t)
    if key not in SHAPES_BEFORE:
        SHAPES_BEFORE[key] = (t._version, t._shape)
        weakref.finalize(t, SHAPES_BEFORE.pop, key, None)
    if t._node is not None:  # (made it in this shape, or changed it to it under grad mode)
        note_reshaped_output(t._node, t._shape)


def _c_strides(shape: tuple) -> tuple:
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


#: A Tensor without ``__init__``, for a caller that sets every slot itself (``Tensor.data``).
_new_tensor = object.__new__


def _shaped(native: Any, backend: Any, dtype: DType, shape: Size) -> Tensor:
    """``Tensor(native, backend, dtype)`` where the caller knows ``native``'s shape (the
    ``Size`` of an operand an elementwise op kept the shape of): the slots ``__init__`` sets,
    without reading the array's shape and finding its ``Size`` (half the constructor's
    ~0.8 us on torch:cpu) or the legacy constructor's test."""
    out = _new_tensor(Tensor)
    out.native = native
    out.backend = backend
    out._dtype = dtype
    out._shape = shape
    out._requires_grad = False
    out._grad = None
    out._node = None
    out._own_version = 0
    out._own_counter = False
    out._alias_of = None
    out._view_of = None
    out._views = None
    out._inference = is_inference_mode_enabled()
    return out


class Tensor:
    """An n-dimensional array on one device, with PyTorch's API and autograd."""

    __slots__ = (
        "native",
        "backend",
        "_dtype",
        "_shape",
        "_requires_grad",
        "_grad",
        "_node",
        "_own_version",
        "_own_counter",
        "_alias_of",
        "_view_of",
        "_views",
        "_new_axis_strides",
        "_inference",
        "__weakref__",
    )
    #: As torch.Tensor's: a NumPy scalar or array on an operator's left defers to the
    #: tensor's reflected method (np.float32(0.5) * t is a tensor in the graph, not NumPy's).
    __array_priority__ = 1000

    def __init__(
        self, native: Any = (), backend: Any = None, dtype: Any = None, *sizes: int
    ) -> None:
        if dtype.__class__ is not DType:  # PyTorch's legacy constructor: tw.Tensor(2, 3)
            self._legacy_init((native, backend, dtype, *sizes))
            return
        self.native = native
        self.backend = backend
        self._dtype = dtype
        shape = native.shape
        size = _SIZES.get(shape)
        self._shape = size if size is not None else _size_of(shape)
        self._requires_grad = False
        self._grad: Tensor | None = None
        self._node = None
        self._own_version = 0  # the version counter's own part, see _version below
        # a ``.data`` tensor: as PyTorch's, it shares its tensor's memory but has a version
        # counter of its own, so autograd does not see writes through it
        self._own_counter = False
        self._alias_of: Tensor | None = None
        # (base, write): a view of ``base`` that ``write(base, value)`` updates (ops/views.py)
        self._view_of: tuple | None = None
        # [(weak reference to a view or alias, read)]: what follows this tensor's changes
        self._views: list | None = None
        # made inside inference_mode(), or a view or alias of such (ops/views.py as_view,
        # _share_memory_of): may be an inference tensor (ops/memory_facts.py is_inference
        # decides: a view is one where its base is one, wherever it was made)
        self._inference = is_inference_mode_enabled()

    def _legacy_init(self, args: tuple) -> None:
        """``tw.Tensor(*sizes)`` (zeros: there is no uninitialised memory), ``tw.Tensor(data)``
        or ``tw.Tensor()``: a tensor of the default float dtype on the default device;
        ``tw.Tensor(t)`` of a tensor, an alias of ``t`` (its dtype and memory, in its graph
        by ``AliasBackward0``), as PyTorch's."""
        from tensorweaver.ops import creation

        args = tuple(a for a in args if a is not None)
        if len(args) == 1 and isinstance(args[0], Tensor):
            from tensorweaver.ops.apply import apply, labelled

            base = args[0]
            identity = apply("identity", base.native, base.dtype, (base,))
            graphed = labelled(identity, "AliasBackward0", base)
            Tensor.__init__(self, base.native, base.backend, base.dtype)
            self._share_memory_of(base)
            self._node, self._requires_grad = graphed._node, base.requires_grad
            return
        dtype = creation.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], int):
            made = creation.tensor(args[0], dtype=dtype)
        else:
            made = creation.zeros(args or (0,), dtype=dtype)
        Tensor.__init__(self, made.native, made.backend, made.dtype)

    # Identity hashing: == is elementwise, as in PyTorch.
    __hash__ = object.__hash__

    # -- facts ------------------------------------------------------------------------------

    # Read-only, as PyTorch's (AttributeError): a write would leave the tensor reporting a
    # shape or dtype its data does not have. The core writes the slots (``_shape``,
    # ``_dtype``, ``_requires_grad``) and reads them on its hottest paths: a property read
    # costs about twice a slot's (Python 3.11 specializes slots, not properties).
    shape = property(operator.attrgetter("_shape"), doc="The size of each dimension.")
    dtype = property(operator.attrgetter("_dtype"), doc="The element type (a tw.dtype).")

    def _set_requires_grad(self, requires_grad: bool) -> None:
        """``t.requires_grad = b``: PyTorch's checks, which are ``requires_grad_()``'s and,
        here alone, a bool and a leaf (the core writes ``_requires_grad``)."""
        if requires_grad.__class__ is not bool:
            raise RuntimeError(f"requires_grad must be a bool, got {type(requires_grad).__name__}")
        if self._node is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables (this tensor was "
                "computed from tensors that require grad)."
                + (
                    ""
                    if requires_grad
                    else " If you want to use a computed variable in a subgraph that doesn't "
                    "require differentiation use var_no_grad = var.detach()."
                )
            )
        self.requires_grad_(requires_grad)

    def _get_requires_grad(self) -> bool:
        # A view's flag is its own or its root base's, as PyTorch's differentiable view reads
        # its base's (the core reads the ``_requires_grad`` slot, the view's own)
        if self._view_of is None or self._requires_grad:
            return self._requires_grad
        return self._dtype.kind in "fc" and _differentiable_root_requires_grad(self)

    def _del_requires_grad(self) -> None:
        raise RuntimeError("requires_grad must be a bool (it cannot be deleted)")

    requires_grad = property(
        _get_requires_grad,
        _set_requires_grad,
        _del_requires_grad,
        doc="Whether autograd records operations on this tensor.",
    )

    @property
    def device(self) -> Any:
        from tensorweaver.selection import device_of

        return device_of(self.backend)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return len(self.shape)

    def size(self, dim: int | None = None) -> Any:
        if dim is None:
            return self.shape
        return self.shape[_axis(dim, len(self.shape), "size")]

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    nelement = numel

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def _base(self) -> Tensor | None:
        """The tensor whose memory this view shows (a view of a view: the first one's base), as
        PyTorch's ``Tensor._base``; None for a tensor that is not a view for autograd:
        ``detach()`` and ``.data`` aliases, and a ``view(dtype)``, which is a base itself."""
        base = None
        t = self
        while t._view_of is not None and getattr(t._view_of[1], "part", None) != "bits":
            t = base = t._view_of[0]
        return base

    def _is_view(self) -> bool:
        return self._base is not None

    @property
    def is_leaf(self) -> bool:
        if STALE_VIEWS:  # (a view a write missed: its node is rebuilt when next read)
            regenerate(self)
        node = self._node
        if node is None:
            return True
        if node.__class__ is _InvalidHistory:
            raise RuntimeError(node.message)  # (PyTorch's, as at any use of its grad_fn)
        return False

    @property
    def grad_fn(self) -> Any:
        if STALE_VIEWS:
            regenerate(self)
        node = self._node
        if node is None:
            return None
        from tensorweaver.autograd.grad_fn import grad_fn_of

        return grad_fn_of(node)

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for a leaf), as PyTorch's."""
        from tensorweaver.autograd.node import output_nr

        if STALE_VIEWS:
            regenerate(self)
        return output_nr(self._node)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    def ndimension(self) -> int:
        return len(self.shape)

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def is_signed(self) -> bool:
        return self.dtype.is_signed

    # -- autograd ---------------------------------------------------------------------------

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if requires_grad.__class__ is not bool:
            raise TypeError(
                "requires_grad_(): argument 'requires_grad' (position 1) must be bool, not "
                f"{type(requires_grad).__name__}"
            )
        node = self._node
        # (a view made under no_grad has no grad_fn of its own: PyTorch lets it go, its
        # requires_grad following its base's still)
        no_grad_view = node.__class__ is _InvalidHistory and node.message in _MADE_WITHOUT_GRAD
        if node is not None and not requires_grad and not no_grad_view:
            raise RuntimeError(
                "requires_grad_(False): this tensor is not a leaf (it was computed from "
                "tensors that require grad); use .detach() to get one that does not"
            )
        if requires_grad and self._dtype.kind not in "fc":
            raise RuntimeError(
                "only Tensors of floating point and complex dtype can require gradients, got "
                f"{self._dtype.name}; "
                "convert first, e.g. x.float().requires_grad_()"
            )
        if requires_grad and self._inference_outside_the_mode():
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not "
                "allowed; make a normal tensor of it first with .clone()"
            )
        self._requires_grad = requires_grad
        return self

    @property
    def grad(self) -> Tensor | None:
        """The gradient that backward accumulated (or that was assigned), else None. Reading
        it on a non-leaf that has none and does not retain its gradient warns, as PyTorch:
        backward never fills it there (the core reads ``_grad``)."""
        grad = self._grad
        if grad is None and self._node is not None:
            node = self._node
            if _retaining(self):
                return None
            # (PyTorch reads the flag, then the view's own grad_fn: a view made under no_grad
            # has none, as a leaf)
            if node.__class__ is _InvalidHistory and node.message in _MADE_WITHOUT_GRAD:
                return None
            import warnings

            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed: "
                "backward() does not populate it. Call .retain_grad() on the non-leaf Tensor "
                "if you want its .grad, or read the .grad of the leaf Tensor instead.",
                UserWarning,
                stacklevel=2,
            )
        return grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        # PyTorch's checks: a gradient on this tensor's device, of its size, or None.
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    "assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type(value).__name__}"
                )
            if value is self:
                raise RuntimeError("can't assign Variable as its own grad")
            if value.backend is not self.backend:
                raise RuntimeError(
                    f"attempting to assign a gradient on device '{value.device.name}' to a "
                    f"tensor on device '{self.device.name}': move it there first with "
                    f".to({self.device.name!r})"
                )
            if value.shape != self._shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size {list(value.shape)} to a "
                    f"tensor of size {list(self._shape)}: the gradient must have the tensor's "
                    "size"
                )
            if value.dtype is not self._dtype or GRAD_DTYPES:
                wanted = GRAD_DTYPES.get(id(self), self._dtype)
                if wanted is not None and value.dtype is not wanted:
                    # (a foreign dtype would be accumulated into and stepped with silently)
                    raise RuntimeError(
                        f"attempting to assign a gradient with dtype {value.dtype.name} to a "
                        f"tensor whose grad_dtype is {wanted.name}: convert the gradient with "
                        f".to({wanted.name}), or set the tensor's grad_dtype (None takes any)"
                    )
        self._grad = value

    @property
    def grad_dtype(self) -> DType | None:
        """The dtype ``.grad`` must have (a leaf's; None: any); the tensor's own by default.
        Backward casts the gradient it accumulates to it."""
        if self._node is not None:
            raise RuntimeError("grad_dtype can only be accessed on leaf tensors")
        return GRAD_DTYPES.get(id(self), self._dtype)

    @grad_dtype.setter
    def grad_dtype(self, value: DType | None) -> None:
        if self._node is not None:
            raise RuntimeError("grad_dtype can only be set on leaf tensors")
        if value is not None and not isinstance(value, DType):
            raise TypeError(f"grad_dtype must be a dtype or None, got {type(value).__name__}")
        if value is not None and self._grad is not None and self._grad.dtype is not value:
            raise RuntimeError(
                f"cannot set grad_dtype to {value.name}: the tensor has a gradient of dtype "
                f"{self._grad.dtype.name}; set .grad = None first"
            )
        if value is self._dtype:
            GRAD_DTYPES.pop(id(self), None)
        elif GRAD_DTYPES.setdefault(id(self), value) is not value:
            GRAD_DTYPES[id(self)] = value
        else:
            weakref.finalize(self, GRAD_DTYPES.pop, id(self), None)

    def retain_grad(self) -> None:
        """Keep ``.grad`` on this non-leaf tensor after backward."""
        import weakref

        if STALE_VIEWS:
            regenerate(self)
        node = self._node
        if node is None:
            if not self._requires_grad:
                raise RuntimeError("retain_grad() on a tensor that does not require grad")
            return
        if node.__class__ is _InvalidHistory:
            if node.message in _MADE_WITHOUT_GRAD:
                return  # (PyTorch's test reads the view's own grad_fn: none, made under no_grad)
            raise RuntimeError(node.message)
        node.retained = weakref.ref(self)
        key = id(self)
        if key not in _RETAINING:
            ref = _RetainingRef(self, _forget_retention)
            ref.key = key
            _RETAINING[key] = ref

    def register_hook(self, hook: Any) -> Any:
        """Call ``hook(grad)`` whenever this tensor's gradient is computed; a tensor the hook
        returns replaces the gradient. Returns a handle whose ``remove()`` unregisters it."""
        from tensorweaver.autograd.hooks import register_hook

        if STALE_VIEWS:
            regenerate(self)
        if self._node.__class__ is _InvalidHistory:
            raise RuntimeError(self._node.message)  # type: ignore[union-attr]
        return register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook: Any) -> Any:
        """Call ``hook(self)`` after backward has accumulated into this leaf's ``.grad``."""
        from tensorweaver.autograd.hooks import register_post_accumulate_grad_hook

        return register_post_accumulate_grad_hook(self, hook)

    def detach(self) -> Tensor:
        """The same values, cut from the graph. In-place changes to it reach this tensor; it
        shares memory with the host where this tensor does."""
        out = _shaped(self.native, self.backend, self._dtype, self._shape)
        out._share_memory_of(self)
        return out

    def _share_memory_of(self, base: Tensor) -> None:
        """Make this new tensor over ``base``'s array an alias of ``base``, as PyTorch's
        ``detach()`` and ``nn.Parameter(base)`` share its storage: in-place changes of either
        reach the other (and NumPy, where ``base``'s memory is shared with it); and its
        version counter, which starts where ``base``'s is."""
        self._alias_of = base
        if base._inference and not self._inference:  # (made outside the mode)
            _mark_inference_alias(self)
        self._own_version = base._own_version  # (the own parts: one memory, one count)
        # (_follow's alias case, inline: one call fewer on every detach(), .data, Parameter)
        entry = (weakref.ref(self), None, self._node is not None, None)
        views = base._views
        if views is None:
            base._views = [entry]
        else:
            n = len(views)
            if n >= 16 and n & (n - 1) == 0:  # drop dead views now and then, as _follow does
                views[:] = [old for old in views if old[0]() is not None]
            views.append(entry)
        if _HOST_SHARED and _writes_through(base):
            _set_writes_through(self, True)

    def detach_(self) -> Tensor:
        if self._view_of is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead (this tensor is a view of "
                "another, made by indexing, reshaping or transposing it)"
            )
        self._node = None
        self._requires_grad = False
        return self

    @property
    def data(self) -> Tensor:
        """A ``detach()`` alias with a version counter of its own (from 0), as PyTorch's:
        writes through it change this tensor's values unseen by autograd's version checks,
        and this tensor's writes leave its count alone."""
        # (Tensor.__init__'s slots copied from this tensor, which has them checked already:
        # ``p.data`` runs once a parameter in every step of a hand-written SGD loop)
        out = _new_tensor(Tensor)
        out.native, out.backend, out._dtype, out._shape = (
            self.native,
            self.backend,
            self._dtype,
            self._shape,
        )
        out._requires_grad, out._grad, out._node = False, None, None
        out._view_of = out._views = None
        out._inference = is_inference_mode_enabled()
        out._share_memory_of(self)
        out._own_counter = True  # (before the count is set: a storage's writes are not in it)
        out._version = 0
        return out

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a Tensor, got {type(value).__name__}")
        if self._requires_grad and value._dtype.kind not in "fc":
            raise RuntimeError(
                "data set to a tensor that requires gradients must be floating point or "
                f"complex dtype (got {value._dtype.name}); convert it first, e.g. .float()"
            )
        if self._views is not None:
            self._leave_views()
        self._alias_of = self._view_of = None  # new memory: no longer that of another tensor
        # (the version stays: PyTorch's .data assignment is no in-place change, so a saved
        # tensor reads the new values in backward, unrefused)
        self.native, self.backend, self._dtype = value.native, value.backend, value.dtype
        self._shape = value.shape
        INPLACE_CHANGES[0] += 1
        self._share_like(value)
        # As PyTorch's tensors now share value's storage: an alias of it (unless value is
        # this tensor's own alias or view, whose memory this tensor already was)
        above: Tensor | None = value
        while above is not None and above is not self:
            if above._alias_of is not None:
                above = above._alias_of
            else:
                above = above._view_of[0] if above._view_of is not None else None
        if above is None:
            self._alias_of = value
            # (PyTorch's tensor keeps its own version counter: writes through either move
            # none of the other's, as for a ``value.data`` alias)
            self._own_counter = True
            if value._inference and not self._inference:  # (as PyTorch's: value's kind now)
                _mark_inference_alias(self)
            value._follow(self, None)

    def _leave_views(self) -> None:
        """Hand this tensor's views and aliases to a tensor over its current array, which
        they go on sharing (and writing into) as PyTorch's views keep the old memory when
        ``.data`` is replaced; it also takes this tensor's place as a view or alias of
        another (that memory's other tensors), which this tensor leaves."""
        old = Tensor(self.native, self.backend, self._dtype)
        old._views, self._views = self._views, None
        for entry in old._views:
            view = entry[0]()
            if view is None:
                continue
            if view._alias_of is self:
                view._alias_of = old
            if view._view_of is not None and view._view_of[0] is self:
                view._view_of = (old, *view._view_of[1:])
        old._alias_of, old._view_of = self._alias_of, self._view_of
        old._inference = self._inference  # (it takes this tensor's place: its kind too)
        for base in (self._alias_of, self._view_of[0] if self._view_of else None):
            for i, entry in enumerate(base._views or () if base is not None else ()):
                if entry[0]() is self:
                    base._views[i] = (weakref.ref(old), *entry[1:])

    def _share_like(self, other: Tensor) -> None:
        """This tensor now holds ``other``'s array: it writes in place into that memory when
        ``other`` does (``.data =``, as PyTorch shares the storage)."""
        _set_writes_through(self, _writes_through(other))

    def backward(
        self,
        gradient: Tensor | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: Any = None,
    ) -> None:
        from tensorweaver.autograd.engine import backward

        if STALE_VIEWS:
            regenerate(self)
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    # -- in place ---------------------------------------------------------------------------

    def _inference_outside_the_mode(self) -> bool:
        """Whether this is an inference tensor used outside ``inference_mode()``, where
        PyTorch refuses to let it require grad or change in place."""
        if not self._inference or is_inference_mode_enabled():
            return False
        from tensorweaver.ops.memory_facts import is_inference

        return is_inference(self)

    def _refuses_inference_update(self, view: bool = False) -> bool:
        """Whether :meth:`_refuse_inference_update` raises."""
        return self._inference_outside_the_mode() and (view or id(self) not in _INFERENCE_ALIASES)

    def _refuse_inference_update(self, op: str, view: bool = False) -> None:
        """PyTorch's error for an in-place change (``op``) of this tensor's values or shape
        where it is an inference tensor outside ``inference_mode()`` (but an alias of one
        made outside the mode: see _INFERENCE_ALIASES, unless the change goes through a
        ``view`` of it, which is no alias)."""
        if self._refuses_inference_update(view):
            raise RuntimeError(
                f"{op}: Inplace update to inference tensor outside InferenceMode is not "
                "allowed. You can make a clone to get a normal tensor before doing inplace "
                "update."
            )

    def _check_inplace(self) -> None:
        """The start of an in-place method (before it reads this tensor's values)."""
        if _HOST_SHARED and self._view_of is not None:
            self._catch_up_with_host()
        if self._requires_grad and self._node is None and is_grad_enabled():
            view = self._view_of
            if view is not None and len(view) > 3:  # a view made under no_grad: PyTorch's
                raise RuntimeError(view[3][0])  # refusal of it (ops/views.py), not a leaf's
            raise RuntimeError(
                "a leaf tensor that requires grad is being used in an in-place operation; "
                "wrap the update in `with tw.no_grad():` or work on a .detach()ed copy"
            )

    def _catch_up_with_host(self) -> None:
        """Read this view again from host-shared memory above it where a ``conj()`` step
        between holds a copy of it (ops/views.py), and so each view between that does not
        view the memory itself: host code may have written that memory since, and an
        in-place change through the view must start from those values (its write-back into
        the memory would else put the copy's old values back)."""
        chain = []
        t, conjugated = self, False
        while t._view_of is not None and not _writes_through(t):
            chain.append(t)
            conjugated = conjugated or getattr(t._view_of[1], "conjugates", False)
            t = t._view_of[0]
        if not conjugated or not _writes_through(t):
            return
        for t in reversed(chain):
            if t._is_shared_view():
                continue  # (it views that memory: it sees the host's writes)
            base, _, read = t._view_of[:3]
            with no_grad():
                native = read(base).native
            version = t._version
            t.native = native
            t._version = version

    def _snapshot(self) -> Tensor:
        """A new tensor object for this tensor's current value and graph position (over a
        copy where its memory is host-shared: the in-place write is about to change it)."""
        native = self.native
        if self._requires_grad and _writes_through(self):
            native = _private_copy(self.backend, native, self._dtype)
        snap = Tensor(native, self.backend, self._dtype)
        snap._requires_grad = self._requires_grad
        snap._node = self._node
        snap._version = self._version
        return snap

    def _assign(self, result: Any, op: str = _SETITEM) -> Tensor:
        """Make ``result`` this tensor's new value (the end of every in-place method): a
        Tensor, or a bare backend array of this tensor's dtype and no history (an update
        written by ops/in_place_writes.py: no throwaway Tensor around it).

        A node that PyTorch makes save its output (``exp``, ``tanh``, ``softmax``, ...) is
        told its output changed (``autograd/node.py``: ``output_changed``), so backward
        through it raises as PyTorch's version counter makes it; a change of an op's input
        raises as in PyTorch.
        """
        if (
            self._node is None
            and self._view_of is None
            and not self._inference
            and not isinstance(result, Tensor)
        ):
            # A bare array (an update, zero_'s zeros) into a tensor that is no view, has no
            # history and is no inference tensor (p.data, p.grad): of the steps below, only
            # the shape check, the store, the count and the write-back can apply
            mine = self.native
            c_ordered = C_TESTS.get(type(mine))
            if (
                c_ordered is not None
                and c_ordered(mine)
                and (op != "copy_" or self._views is None)
                and result.shape == self._shape
            ):
                linked = self._alias_of is not None
                if linked:
                    kept = self._kept_values() if _HOST_SHARED else (mine, None)
                    before = (kept, None, self._requires_grad, self._version)
                if not self._store(result, op) and not _UNCOUNTED[0]:
                    self._version += 1
                INPLACE_CHANGES[0] += 1
                if linked or self._views is not None:
                    self._pass_on_or_undo(op, True, before if linked else None)
                if SAVED_INTEGER_OUTPUTS and not _UNCOUNTED[0]:
                    integer_output_changed(self, self._version - 1)
                return self
        # PyTorch writes into an inference tensor outside the mode, then refuses (in its
        # version-counter bump, before the write is recorded in the graph): at the end here
        refused = (
            self._inference
            and not (_HELD and _HELD[-1] is self)  # (not a write-back)
            and self._refuses_inference_update()
        )
        if isinstance(result, Tensor):
            native, node, requires_grad = result.native, result._node, result._requires_grad
        else:
            native, node, requires_grad = result, None, False
        view = self._view_of
        if view is not None:
            # (a write-back of a view's change into this base is no write of the user's: only
            # the tensor the user writes is checked, as in PyTorch)
            if (
                not _fills(op)
                and not (_HELD and _HELD[-1] is self)
                and self._overlaps_itself()
                and (op != _SETITEM or _changes_repeat(self, native))
            ):
                raise RuntimeError(
                    f"{op}: unsupported operation: more than one element of the written-to "
                    "tensor refers to a single memory location (it was made by expand()); "
                    "clone() it first, or write into the tensor it was expanded from"
                )
            if op != "fill_" and op in _FILLS and getattr(view[1], "overlapping", False):
                _warn_deprecated_overlap(op)
            # PyTorch's refusal (ops/views.py), where the write would give the view a history
            if (
                len(view) > 3
                and is_grad_enabled()
                and (requires_grad or self.requires_grad)
                and self._dtype.kind in "fc"
            ):
                raise RuntimeError(view[3][0])
        if result.shape != self._shape:
            raise RuntimeError(
                f"{op}: the result has shape {result.shape}, which does not "
                f"match the tensor's shape {self._shape} (in-place ops cannot broadcast self)"
            )
        if native is not result and result.dtype is not self._dtype:  # (bare: of this dtype)
            from tensorweaver.promotion import category

            if category(result.dtype) > category(self._dtype):
                raise RuntimeError(
                    f"{op}: result type {result.dtype.name} can't be cast to "
                    f"the desired output type {self._dtype.name}"
                )
            result = result.to(self._dtype)
            native, node, requires_grad = result.native, result._node, result.requires_grad
        made_by = self._node  # (the node that made the value this write replaces)
        version_before = self._version if made_by is not None else 0
        if (
            view is not None
            and node is not None
            and (GRAD_HOOKS or NODE_PREHOOKS or NODE_POSTHOOKS)
        ):
            # (the view's change reaches its base as PyTorch's CopySlices: not through the
            # hooks of the view's old node)
            bypass_view_hooks(node, made_by)
        linked = self._alias_of is not None or self._view_of is not None
        if linked:
            kept = self._kept_values() if _HOST_SHARED else (self.native, None)
            before = (kept, self._node, self._requires_grad, self._version)
        # (before ``mine`` below: a local holding the array is one more reference to it)
        # (the ids of the windows it wrote into: None where it did not write into memory)
        into = None if self._views is None or refused else self._wrote_into_memory(native)
        mine = self.native
        c_ordered = C_TESTS.get(type(mine))  # (inline: the common case costs one test)
        if (
            into is None
            and self._view_of is None
            and (
                (op == "copy_" and self._views is not None)
                or (not c_ordered(mine) if c_ordered is not None else _out_of_order(self))
            )
            and not (_HOST_SHARED and id(self) in _HOST_SHARED and takes_writes(self.native))
        ):
            # (the write-back of a transposed view copies its values in their layout; a
            # tensor laid out otherwise than in C order, channels-last, keeps its layout, as
            # PyTorch writes into its memory; a host-shared one has the values written into
            # its memory, whatever their layout)
            native = _laid_out_like(self.backend, native, self.native)
        wrote = into is None and self._store(native, op)
        if not refused:
            if node is not None or is_grad_enabled():
                self._node = node
                if made_by is not None and made_by.retained is not None:
                    _move_retention(self, made_by, node)
            # (under no_grad the history stays, as in PyTorch: gradients flow as if the change
            # never happened, and a node that saved this tensor sees its version move)
            if requires_grad and is_grad_enabled():
                self._requires_grad = True
        if not wrote and not _UNCOUNTED[0]:  # (a write into shared memory counted on its
            self._version += 1  # storage: one version; a .data write: none, see _own_counter)
        INPLACE_CHANGES[0] += 1
        if linked or self._views is not None:
            # (a view that does not require grad, nor does its root base, changes its bases
            # unrecorded, as PyTorch's, whose view requires grad through that root: a piece of
            # a leaf that is itself a view, cut before its requires_grad_())
            recorded = view is None or self._requires_grad or _root_requires_grad(self)
            if into is not None:
                _IN_MEMORY.append((self, into))
            try:
                self._pass_on_or_undo(op, recorded, before if linked else None)
            finally:
                if into is not None:
                    _IN_MEMORY.pop()
        if view is not None and node is not None and not _UNCOUNTED[0]:
            _watch_view_result(self, node)
        if made_by is not None:
            if not _UNCOUNTED[0]:
                output_changed(made_by, self, version_before)
            else:  # (a .data write reaching it through a view of it)
                output_rewritten(made_by, mine, self.native)
        elif SAVED_INTEGER_OUTPUTS and not _UNCOUNTED[0]:  # (an index output a node saved)
            integer_output_changed(self, self._version - 1)
        if refused:
            self._refuse_inference_update(op)
        return self

    def _pass_on_or_undo(self, op: str, recorded: bool, before: tuple | None) -> None:
        """:meth:`_pass_on` of ``_assign``'s write ``op``; where a base refuses it (PyTorch's
        overlap error), this tensor is put back as ``before`` (kept values, node, flag,
        version: None where it has no base) and the error raised."""
        filling = op in _FILLS
        if filling:
            _FILLING[0] += 1
        try:
            self._pass_on(recorded)
        except BaseException:
            if before is not None:
                kept, self._node, self._requires_grad, version = before
                self._put_back(kept)
                self._version = version
            raise
        finally:
            if filling:
                _FILLING[0] -= 1

    def _repeats_host_memory(self) -> bool:
        """Whether this tensor writes into host-shared memory where several of its elements
        are one location (a zero stride: NumPy's ``as_strided``, ``broadcast_to``)."""
        layout = getattr(self.backend, "layout", None)
        if layout is None or not (_writes_through(self) or self._is_shared_view()):
            return False
        found = layout(self.native)
        # (an empty tensor repeats nothing, whatever strides the backend gives it)
        shape = self._shape
        return (
            found is not None
            and 0 not in shape
            and any(s == 0 and n > 1 for s, n in zip(found[0], shape))
        )

    def _write_repeated(self, native: Any, op: str | None) -> bool:
        """Write ``native`` into this tensor's host-shared memory where it repeats elements
        (which ``write_into`` refuses): the elements it changes only, so an unchanged copy
        does not put its location's old value back; whether it was written. As PyTorch, the
        in-place method ``op`` may only fill, or ``setitem`` distinct locations (a view's
        write-back, ``op`` None, was checked on the view). Host code: a rare path."""
        import numpy as np

        backend = self.backend
        if not self._repeats_host_memory():
            return False
        self._check_repeated_write(native, op)
        host = backend.host_view(self.native)
        host = None if host is None else _writable(host)
        if host is None or not host.flags.writeable:
            return False
        if _WRITTEN and _WRITTEN[-1] is backend.storage(self.native):
            return True  # a view's write-back: the view wrote its change into it already
        new = backend.to_host(native)
        changed = new != host
        if new.dtype.kind in "fc":  # NaN written over NaN is no change
            changed &= ~(np.isnan(new) & np.isnan(host))
        host[changed] = new[changed]
        return True

    def _check_repeated_write(self, native: Any, op: str | None) -> None:
        """PyTorch's refusal of the in-place method ``op`` writing ``native`` into host memory
        whose elements repeat, unless it only fills, or sets distinct locations (a view's
        write-back, ``op`` None, was checked on the view)."""
        if op is None or (_HELD and _HELD[-1] is self):
            return
        if _fills(op):
            if op != "fill_" and op in _FILLS:
                _warn_deprecated_overlap(op)
        elif op != _SETITEM or _changes_repeat(self, native):
            raise RuntimeError(
                f"{op}: unsupported operation: more than one element of the written-to "
                "tensor refers to a single memory location (its memory, shared with "
                "NumPy, repeats elements: a zero stride); clone() it first"
            )

    def _overlaps_itself(self) -> bool:
        """Whether this view holds one memory location twice, as PyTorch's internal-overlap
        check finds it (a zero stride over more than one element): a view of an ``expand()``
        whose own strides (as the backend lays the view out) repeat an element."""
        t: Tensor = self
        while not getattr(t._view_of[1], "overlapping", False):
            t = t._view_of[0]
            if t._view_of is None:
                return False  # no expand() above it
        if t is self:  # the expand() (or zero-stride as_strided) itself
            return True
        if getattr(self.backend, "layout", None) is None:  # strides unknown: the expand() only
            return False
        # (PyTorch's strides: those of a view whose array is a copy, a diagonal or unfold of
        # the expand, are not its array's)
        shape, strides = self._shape, self._strides()
        return 0 not in shape and any(s == 0 and n > 1 for s, n in zip(strides, shape))

    def _kept_values(self) -> tuple:
        """This tensor's array as it is now, to undo a write with (:meth:`_put_back`): the
        array, and a copy of its values where the write may go into that (host-shared)
        memory."""
        if _HOST_SHARED and (_writes_through(self) or self._is_shared_view()):
            return self.native, _private_copy(self.backend, self.native, self._dtype)
        return self.native, None

    def _put_back(self, kept: tuple) -> None:
        """Undo a write: the values into the memory where the write went there, else the
        array itself again (and its memory sharing, if the write gave it its own array)."""
        native, values = kept
        if values is not None and self.native is native:
            self._store(values)
            return
        if values is not None:
            _set_writes_through(self, True)
        if _WRITES:  # (the caller sets the version)
            version = self._version
            self.native = native
            self._version = version
        else:
            self.native = native

    @staticmethod
    def _filling() -> bool:
        """Whether the write under way is a ``fill_``, which PyTorch lets write one value
        through elements an ``expand()`` repeats."""
        return _FILLING[0] > 0

    def _writable_in_place(self) -> bool:
        """Whether a backend primitive may write into this tensor's array itself (the
        optimizers' foreach updates, ``ops/in_place_writes.py``), as PyTorch's in-place
        kernels write: the backend says no other array uses the memory (``owns_memory``),
        no host array shares it, the tensor is no view and has none, and nothing refers to
        the array but this tensor and the ``detach()`` aliases of one tensor that hold it
        too. A graph that saved the array, another tensor made over it or the user's own
        name for ``.native`` is one more reference, and the caller then rebinds instead."""
        root = self
        while root._alias_of is not None:
            root = root._alias_of
        holders = 0
        todo = [root]
        while todo:  # root and its aliases, and theirs
            t = todo.pop()
            if t._view_of is not None or (_HOST_SHARED and _writes_through(t)):
                return False
            if t.native is self.native:
                holders += 1
            for entry in t._views or ():
                follower = entry[0]()
                if follower is None:
                    continue
                if entry[1] is not None:  # a live view: it holds this memory
                    return False
                if follower._alias_of is t:
                    todo.append(follower)
        return self._held_only_by(holders)

    def _held_only_by(self, holders: int) -> bool:
        """Whether this tensor's array is memory of its own (the backend's ``owns_memory``:
        no other array uses it) that nothing refers to but ``holders`` tensors, this one
        among them: a backend primitive may then write into it."""
        owns = getattr(self.backend, "owns_memory", None)
        if owns is None or not owns(self.native):
            return False
        # (read off the attribute, as _ONE_HOLDER counts: no local holds the array)
        return sys.getrefcount(self.native) == holders + _ONE_HOLDER - 1

    def _wrote_into_memory(self, native: Any) -> set[int] | None:
        """Write ``native``, this tensor's new values, into its own array where its live views
        over that array are many (re-reading each would cost more than the copy): so they
        see the change as PyTorch's views do, and :meth:`_refresh_views` only notes their
        versions and histories. Returns the ids of the views over that memory (the windows)
        where it wrote, else None. Only where nothing else may see the memory change: the
        tensor is no view, alias or host-shared memory, the backend says no array but the
        tensor's and its windows' uses that memory (``memory_users``; else ``owns_memory``
        and NumPy's count of one reference per view), and nothing refers to the array but
        this tensor, its ``detach()`` aliases and the windows, each window's array held by
        its tensor alone (a graph that saved one is one more reference: the tensor is then
        rebound)."""
        backend = self.backend
        mine = self.native
        write = getattr(backend, "write_into", None)
        users = getattr(backend, "memory_users", None)
        owns = None if users is not None else getattr(backend, "owns_memory", None)
        if (
            write is None
            or (users is None and owns is None)
            or "write_into" in backend.__dict__  # (tw.compile records a functional step)
            or native is mine
            or self._view_of is not None
            or self._alias_of is not None
            or self._inference
            or _HELD
            or _UNCOUNTED[0]
            or (_HOST_SHARED and _writes_through(self))
            or (owns is not None and not owns(mine))  # (no scan where it cannot pass)
        ):
            return None
        storage = getattr(backend, "storage", None)
        owner = None if storage is None else storage(mine)
        if owner is None or (_SHARED_STORAGES and id(owner) in _SHARED_STORAGES):
            return None
        holders = live = 0
        windows: set[int] = set()
        arrays = []  # (the windows' arrays, for memory_users)
        todo = [self]
        while todo:
            t = todo.pop()
            for entry in t._views or ():
                view = entry[0]()
                if view is None:
                    continue
                if (view._alias_of if entry[1] is None else (view._view_of or (None,))[0]) is t:
                    live += 1
                    if view.native is mine:
                        holders += 1
                    elif storage(view.native) is owner:
                        if sys.getrefcount(view.native) != _ONE_HOLDER:
                            return None  # (a graph, or host code, holds this view's array)
                        windows.add(id(view))
                        arrays.append(view.native)
                    if view._views is not None:
                        todo.append(view)
        if live * _ELEMENTS_PER_VIEW < self.numel():
            return None
        # (no local may hold the array or its storage: torch counts a live storage object
        # as one more use, and NumPy's owner is the array: the counts are of the attribute)
        mine = owner = None
        if users is None:
            held = len(arrays)  # (NumPy's rule: each view holds its owner in .base)
        else:
            held = users(self.native, arrays)
            if held is None:
                return None
        if sys.getrefcount(self.native) != holders + 1 + held + _ONE_HOLDER - 1:
            return None
        return windows if write(self.native, native) else None

    def _lone_alias_writable(self) -> bool:
        """Whether a backend primitive may write into this tensor's array with no bookkeeping
        but :meth:`_wrote_as_lone_alias`'s (``p.data.add_(p.grad, alpha=-lr)``): this tensor
        is a ``detach()`` alias, with no views or history, of a tensor of its own with no
        history that nothing else follows (a parameter), both over one array that nothing
        else holds (:meth:`_writable_in_place`'s test for these two), none of it host memory
        or an inference tensor's, and no write under way. Else ``_assign`` has more to do:
        its base's views to refresh, a node to tell, host memory to count."""
        base = self._alias_of
        if base is None:
            return False
        if base._alias_of is not None and _unseen(base):
            # (a parameter made of a tensor nobody else holds, nn.Parameter(tw.randn(n)): the
            # link is moot, as the first write's _pass_on finds)
            base._alias_of = None
        if (
            self._views is not None
            or self._node is not None
            or self._view_of is not None
            or self._inference
            or base.native is not self.native
            or base._node is not None
            or base._alias_of is not None
            or base._view_of is not None
            or base._inference
            or _HELD
            or _UNCOUNTED[0]
            or (_HOST_SHARED and (_writes_through(self) or _writes_through(base)))
        ):
            return False
        views = base._views or ()
        mine = None
        for entry in views:  # (self's among them, and the dead ones of past steps)
            follower = entry[0]()
            if follower is self:
                mine = entry
            elif follower is not None:
                return False
        if mine is None:
            return False
        if len(views) > 1:
            base._views = [mine]  # (the dead dropped, as _refresh_views drops them)
        if _SHARED_STORAGES and id(_storage_of(self.backend, self.native)) in _SHARED_STORAGES:
            return False  # (read-only host memory: _store's to handle)
        return self._held_only_by(2)  # (this tensor and its base)

    def _wrote_as_lone_alias(self) -> None:
        """``_assign``'s bookkeeping of a write into this tensor's own array where
        :meth:`_lone_alias_writable` held: its count moves, and its base's too unless this
        is a ``.data`` tensor (a counter of its own); the base has no node to tell and no
        other follower to refresh."""
        if not self._own_counter:
            self._alias_of._version += 1  # (as _take counts the write it is passed)
        self._version += 1
        INPLACE_CHANGES[0] += 1

    def _take(self, native: Any) -> None:
        """Make ``native`` this tensor's value as a change made through a ``detach()`` alias
        of it: no history, a new version, and on into its base and views."""
        version_before = self._version
        counted = not _UNCOUNTED[0]  # (a write through .data is not: see _own_counter)
        old = self.native
        if old is not native:
            if not self._store(native) and counted:
                self._version += 1
        elif counted and not (_HOST_SHARED and _writes_through(self) and not _counts_apart(self)):
            self._version += 1  # (else the alias's write into this memory counted already)
        if self._node is not None:
            if counted:
                output_changed(self._node, self, version_before)
            else:
                output_rewritten(self._node, old, self.native)
        elif SAVED_INTEGER_OUTPUTS and counted:
            integer_output_changed(self, version_before)
        if self._alias_of is None and self._view_of is None and not _HELD:
            # (_pass_on's first case, inline: a tensor of its own, the base of ``p.data``)
            if self._views is not None:
                self._refresh_views()
            return
        self._pass_on(recorded=False)

    def _pass_on(self, recorded: bool) -> None:
        """After a change of this tensor: write it into the tensor it is a ``detach()`` alias
        or a view of (``recorded``: in the graph, as the change itself was), and so on up the
        chain of bases, then bring the views and aliases of each tensor changed up to date
        (top down, each skipping the view that changed it)."""
        if _HELD and _HELD[-1] is self:  # the climb in a caller goes on from here
            _HELD[-1] = (recorded,)
            return
        if self._view_of is None:
            above = self._alias_of
            if above is None:  # a tensor of its own: its views and aliases follow
                if self._views is not None:
                    self._refresh_views()
                return
            if above._alias_of is None and above._view_of is None:
                del above  # (_unseen counts the references to it)
                self._pass_on_to_owner()
                return
        climbed: list[Tensor] = []  # the tensors written into their bases, in order
        pushed: list[bool] = []  # whether each pushed a region onto _REGIONS
        changed: list[tuple] = []  # each base the climb changed, as it was before
        counted: list[Tensor] = []  # the tensors in _COUNTED for this climb
        top: Tensor | None = self
        t = self
        try:
            while t._alias_of is not None or t._view_of is not None:
                if t._alias_of is not None and _unseen(t):
                    t._alias_of = None  # the link to a tensor nobody else can reach is moot
                    if t._view_of is None:
                        break
                climbed.append(t)
                pushed.append(False)
                _WRITING.add(id(t))
                top = None
                base = t._alias_of
                if base is not None and base.shape == t.shape and base.dtype is t.dtype:
                    if t._own_counter:
                        _UNCOUNTED[0] += 1
                        try:
                            base._take(t.native)
                        finally:
                            _UNCOUNTED[0] -= 1
                    else:
                        base._take(t.native)
                if t._view_of is None:
                    break
                viewed, write = t._view_of[0], t._view_of[1]
                if getattr(write, "rereads", False):
                    # the copies of each element follow the base: whatever wrote into them
                    # (t, and the views below it) reads them again
                    for c in climbed:
                        _WRITING.discard(id(c))
                        _COUNTED.add(id(c))
                    counted.extend(climbed)
                region = getattr(write, "region", None)
                if region is not None:  # the base's views outside it need no reread
                    _REGIONS.append((viewed, region))
                    pushed[-1] = True
                before = (viewed, viewed._kept_values(), viewed._node, viewed.requires_grad)
                version = viewed._version
                _HELD.append(viewed)
                _WRITTEN.append(_written_storage(t, viewed) if _HOST_SHARED else None)
                try:
                    if recorded:
                        write(viewed, t)
                    else:
                        with no_grad():  # a change the graph does not see, as the alias's
                            write(viewed, t)
                finally:
                    reached = _HELD.pop()
                    _WRITTEN.pop()
                if reached is viewed:
                    # The write did not change ``viewed`` itself (an empty view), or changed
                    # the memory under it (a write into an expand() goes to its base), which
                    # the views below may hold otherwise: they read it again (each counted
                    # its change already: the reread moves no version of theirs)
                    for c in climbed:
                        _WRITING.discard(id(c))
                        _COUNTED.add(id(c))
                    counted.extend(climbed)
                    t._reread_from(viewed)
                    break
                changed.append((*before, version))
                recorded = recorded and reached[0]
                if recorded:
                    _as_copy_slices(viewed, before[2], t)
                t = top = viewed
            if top is not None and top._views is not None:
                top._refresh_views()
            while climbed:
                t = climbed.pop()
                if pushed.pop():
                    _REGIONS.pop()
                if id(t) in _WRITING:
                    _WRITING.discard(id(t))
                    if t._view_of is not None:
                        t._lay_out_as_view()
                if t._views is not None:
                    t._refresh_views()
        except BaseException:
            for base, kept, node, requires_grad, version in reversed(changed):
                # a base above refused the write (PyTorch's overlap error): undo it
                base._put_back(kept)
                base._node, base._requires_grad, base._version = node, requires_grad, version
            raise
        finally:
            while climbed:
                if pushed.pop():
                    _REGIONS.pop()
                _WRITING.discard(id(climbed.pop()))
            for c in counted:
                _COUNTED.discard(id(c))

    def _pass_on_to_owner(self) -> None:
        """:meth:`_pass_on` of a ``detach()`` alias (no view) of a tensor of its own, the
        commonest climb (``p.data.add_(...)``): the general loop's steps for one level,
        without its bookkeeping lists."""
        # (_unseen's last test first: a base that more than the link holds, the usual case,
        # needs no call)
        if sys.getrefcount(self._alias_of) == _ONE_HOLDER and _unseen(self):
            self._alias_of = None  # the link to a tensor nobody else can reach is moot
        else:
            base = self._alias_of
            key = id(self)
            _WRITING.add(key)  # (the base's refresh skips this alias: it has the change)
            try:
                if base.shape == self._shape and base.dtype is self._dtype:
                    if self._own_counter:
                        _UNCOUNTED[0] += 1
                        try:
                            base._take(self.native)
                        finally:
                            _UNCOUNTED[0] -= 1
                    else:
                        base._take(self.native)
            finally:
                _WRITING.discard(key)
        if self._views is not None:
            self._refresh_views()

    # -- views that follow their base -------------------------------------------------------

    def _follow(
        self, view: Tensor, read: Any, region: tuple | None = None, refused: str | None = None
    ) -> None:
        """Keep ``view`` up to date with this tensor's later in-place changes, as a PyTorch
        view over the same memory is: ``read(self)`` recomputes it (None: ``view`` is a
        ``detach()`` alias, which takes this tensor's array as it is). ``region``: the
        ``(axis, start, stop)`` of this tensor the view holds, where it is such a run;
        ``refused``: PyTorch's error for using the view in autograd once this tensor changed
        (its history is then invalid)."""
        # A view made with grad enabled has a history to regenerate once this tensor gains
        # one (PyTorch's view of memory that has none yet takes it from a later write)
        tracked = refused or view._node is not None or (read is not None and is_grad_enabled())
        entry = (weakref.ref(view), read, tracked, region)
        views = self._views
        if views is None:
            self._views = [entry]
            return
        n = len(views)
        if n >= 16 and n & (n - 1) == 0:  # drop dead views now and then: amortised O(1)
            views[:] = [entry for entry in views if entry[0]() is not None]
        views.append(entry)

    def _refresh_views(self) -> None:
        """Bring this tensor's live views and aliases to its current value (after a change),
        and theirs in turn, except those whose own change is being written back (they have
        it already). A ``.data`` alias reread has a counter of its own, which the change
        leaves alone, as its views' (``counted`` False below it). Where the change went into
        this tensor's memory (:meth:`_wrote_into_memory`), a view over it is not read again.
        """
        # (windows: the views that hold a window on this tensor's memory, found by the scan
        # that wrote its change there: they have it, so no view op reads them again)
        windows = _IN_MEMORY[-1][1] if _IN_MEMORY and _IN_MEMORY[-1][0] is self else None
        todo = [(self, True)]
        while todo:
            t, counted = todo.pop()
            noted = counted and not _UNCOUNTED[0]
            # (a window made with a graph has a history to renew only where t requires grad)
            renews = windows is not None and t.requires_grad
            written = _REGIONS[-1][1] if _REGIONS and _REGIONS[-1][0] is t else None
            alive = []
            for entry in t._views or ():
                view = entry[0]()
                if view is None:
                    continue
                if entry[1] is None:  # an alias
                    if view._alias_of is not t:
                        continue  # its .data was replaced since: other memory
                elif view._view_of is None or view._view_of[0] is not t:
                    continue
                alive.append(entry)
                if id(view) in _WRITING or (written and _apart(written, entry[3])):
                    # its values stand; a view PyTorch cannot regenerate is refused still
                    # (the memory's version moved: PyTorch checks no region)
                    if not counted:
                        continue
                    tracked = entry[2]
                    # (as PyTorch's grad_fn of a view: regenerated, so refused here, where the
                    # view has a history or its root base requires grad)
                    if (
                        tracked.__class__ is str
                        and (view._node is not None or _root_requires_grad(t))
                        and not _UNCOUNTED[0]
                    ):
                        view._lose_history(tracked)
                    if id(view) in _WRITING or (_HOST_SHARED and view._is_shared_view()):
                        continue
                    view._count_apart_write(tracked)
                elif windows is not None and id(view) in windows:
                    if noted:  # its version moves as a reread's; its history is
                        tracked = entry[2]  # _new_history's (a str: PyTorch's refusal)
                        if tracked.__class__ is str or (
                            tracked is True and (renews or view._node.__class__ is Node)
                        ):
                            view._new_history(t, entry[1], tracked, True)
                        if not view._own_counter:
                            view._version += 1
                    if view._views is not None:
                        todo.append((view, counted and not view._own_counter))
                elif view._reread(t, entry[1], entry[2], counted):
                    todo.append((view, counted and not view._own_counter))
            t._views = alive or None

    def _count_apart_write(self, tracked: bool | str) -> None:
        """A write into this view's base that missed this view: its values stand, but
        PyTorch's counter, shared over the memory, moves; so for its own views and aliases.
        Each view made with a graph (``tracked``) is noted stale: PyTorch rebuilds its
        ``grad_fn`` over the base's history when next read (autograd/view_regeneration.py),
        whatever the grad mode of the write; a view of a root that gained a history by the
        write requires grad now, as PyTorch's reads its base's flag."""
        if _UNCOUNTED[0]:
            return  # a write through .data: no counter sees it
        if tracked is True:
            _note_missed(self)
        todo = [self]
        while todo:
            t = todo.pop()
            t._version += 1
            for entry in t._views or ():
                view = entry[0]()
                if view is None or id(view) in _WRITING:
                    continue
                if (view._alias_of if entry[1] is None else (view._view_of or (None,))[0]) is t:
                    todo.append(view)
                    if entry[2] is True and entry[1] is not None:
                        _note_missed(view)

    def _lay_out_as_view(self) -> None:
        """After its change was written into its base: hold the base's view of the new values
        (the same values) instead of the array the change computed, so that this view's
        layout (strides, and whether a reshape of it views or copies) stays PyTorch's. A view
        the change gave a node takes the view op's node on its base's new history instead, as
        PyTorch regenerates a changed view's ``grad_fn`` (retain_grad moving with it)."""
        view = self._view_of
        node = self._node
        regenerate = (
            node is not None
            and node.__class__ is not _InvalidHistory
            and is_grad_enabled()
            and view[0].requires_grad
            and not _UNCOUNTED[0]  # (a .data write is none of autograd's: the node stands)
        )
        if not regenerate and node is not None and node.__class__ is not _InvalidHistory:
            if not _UNCOUNTED[0]:  # (grad off: rebuilt when next read, as PyTorch's)
                mark_stale(self)
        shared = _HOST_SHARED and _writes_through(self)
        if shared and not regenerate:
            return
        with enable_grad() if regenerate else no_grad():
            made = view[2](view[0])
        if regenerate:
            self._take_view_node(made)
        if not shared and made.shape == self._shape and made.dtype is self._dtype:
            if _WRITES:  # the storages' write counts differ: keep the version where it was
                version = self._version
                self.native = made.native
                self._version = version
            else:
                self.native = made.native

    def _take_view_node(self, made: Tensor) -> None:
        """Take ``made``'s node (this view read again from its base with grad enabled) as this
        view's, its retain_grad moving with it: PyTorch's regenerated ``grad_fn``. Where the
        base is a view too, the node is read again from the root of the chain, as PyTorch
        regenerates a view from its ``_base``: the views between stay off its path. A chain
        of views that keep the dtype and conjugation is one ``AsStridedBackward0``, as
        PyTorch's replay of it; over a root that requires no grad (the base a leaf views) it
        has no next function, as PyTorch's, as it has over a base whose history was cut
        (``detach_()``) under a view that had one."""
        node = made._node
        if node is not None or self._node.__class__ is Node:
            reads = []
            plain = True
            t = self
            while t._view_of is not None:
                view = t._view_of
                reads.append(view[2])
                plain = plain and view[0]._dtype is t._dtype and not hasattr(view[1], "conjugates")
                t = view[0]
            root = t
            if len(reads) > 1:
                with enable_grad():
                    for read in reversed(reads):
                        t = read(t)
                if t._node is None and not plain:  # (a root requiring no grad: the base's)
                    t = made
            else:
                t = made
            if plain:
                from tensorweaver.ops.apply import apply, labelled

                if t._node is root._node:  # (a view of all of the root: the read made none)
                    with enable_grad():
                        read, t = t, apply("identity", t.native, t.dtype, (t,))
                    if t._node is None:  # (the root requires no grad: an edge to nothing)
                        t._node = Node("identity", (read,), None)
                        t._requires_grad = True
                labelled(t, "AsStridedBackward0", root)
            node = t._node
        old = self._node
        self._node = node
        if STALE_VIEWS:
            forget(self)
        if old is not None and old.__class__ is not _InvalidHistory and old.retained is not None:
            _move_retention(self, old, node)

    def _lose_history(self, message: str) -> None:
        """Give this view, which PyTorch cannot regenerate after its base's change, an invalid
        history: using it in autograd raises ``message``."""
        self._node = _InvalidHistory(message)
        self._requires_grad = True
        note_invalid_history(self)  # (a node recorded on it raises, as PyTorch)

    def _reread_from(self, base: Tensor) -> None:
        """:meth:`_reread` this view of ``base`` (as ``base``'s follow list has it)."""
        for entry in base._views or ():
            if entry[0]() is self:
                self._reread(base, entry[1], entry[2])
                return

    def _reread(self, base: Tensor, read: Any, tracked: bool | str, counted: bool = True) -> bool:
        """Take the value of this view (or alias: ``read`` None) of ``base`` from ``base``
        again; a view made with a graph (``tracked``) gets the view op's node on ``base``'s
        current history, as PyTorch regenerates a view's ``grad_fn`` after its base changed
        (even under ``no_grad``: an optimizer step must not leave it on a released node); one
        PyTorch cannot regenerate (``tracked`` is its error) gets an invalid history;
        ``counted`` False: the version this view shares (a ``.data`` alias's) stands. Returns
        whether this tensor has views of its own to refresh."""
        if read is None:
            if base.shape != self._shape or base.dtype is not self._dtype:
                return False
            native = base.native
        elif _HOST_SHARED and self._is_shared_view():
            # it views the memory the write went into: its values are there already, so no
            # view op is replayed for them (only where its history needs one)
            self._new_history(base, read, tracked, counted)
            if counted and not (_UNCOUNTED[0] or self._own_counter) and _counts_apart(self):
                self._version += 1  # (a .data tensor's view: the storage did not count it)
            return self._views is not None  # (the write counted on the storage it shares)
        else:
            made = self._new_history(base, read, tracked, counted)
            if made is None:
                with no_grad():
                    made = read(base)
            native = made.native
        if self.native is not native:
            self._store(native)
        elif _HOST_SHARED and (_writes_through(self) or (read is None and base._is_shared_view())):
            if counted and not (_UNCOUNTED[0] or self._own_counter) and _counts_apart(self):
                self._version += 1  # (an alias of a tensor with a counter of its own: as above)
            return self._views is not None  # an alias of host-shared memory, as above
        if _COUNTED and id(self) in _COUNTED:
            return False  # (the write-back refreshes its views itself, after)
        if counted and not (_UNCOUNTED[0] or self._own_counter):
            self._version += 1  # (a .data tensor's counter, or a .data write: see above)
        return self._views is not None

    def _new_history(
        self, base: Tensor, read: Any, tracked: bool | str, counted: bool
    ) -> Tensor | None:
        """:meth:`_reread`'s history steps for this view of ``base``, which changed: one
        PyTorch cannot regenerate (``tracked`` is its error) gets an invalid history; one made
        with a graph gets the view op's node on ``base``'s current history, read again with
        grad enabled (returned: the caller needs no second read), or, written under
        ``no_grad`` (an optimizer's step) or ``inference_mode``, is rebuilt when next read
        (autograd/view_regeneration.py), as PyTorch's."""
        if not counted or _UNCOUNTED[0]:
            return None  # (a write through .data moves no version this view shares)
        if tracked.__class__ is str:
            # (as PyTorch's grad_fn of a view: where it has one or its root base requires grad)
            if self._node is not None or _root_requires_grad(base):
                self._lose_history(tracked)  # type: ignore[arg-type]
        elif tracked and (
            base.requires_grad or (self._node.__class__ is Node and base._view_of is None)
        ):
            # (a view with a history over a base whose history was cut, detach_(), gets a
            # node with no edge, as PyTorch's regenerated grad_fn; not a tensor written
            # through a detach() alias's view, which keeps its own: resize_ tests)
            if is_inference_mode_enabled() or (
                not is_grad_enabled() and self._requires_grad and self._node.__class__ is Node
            ):
                noted = STALE_VIEWS.get(id(self))
                if noted is None or noted[1] is not self._node:
                    mark_stale(self)
            else:
                with enable_grad():
                    made = read(base)
                self._take_view_node(made)
                self._requires_grad = self._node is not None
                return made
        return None

    def _store(self, native: Any, op: str | None = None) -> bool:
        """Make ``native`` this tensor's value; whether it was written into shared memory
        (that write is then its version's change; else the version is the caller's to bump);
        ``op``: the in-place method whose result it is (None: a write-back or a reread).

        A host-shared tensor has ``native`` written into its memory, so NumPy sees it (one more
        write counted on that storage, but for a view's write-back into the memory it wrote
        already); any other tensor is rebound to ``native``, or to a copy of it where ``native``
        is host-shared memory, which a rebound tensor must not alias.
        """
        backend = self.backend
        # (both tests need a host-shared tensor: none, the usual case, is one test)
        if _HOST_SHARED and (_writes_through(self) or self._is_shared_view()):
            if backend.write_into(self.native, native) or self._write_repeated(native, op):
                root = None if _UNCOUNTED[0] else _counter_root(self)
                if root is None:
                    return False  # a .data tensor's write: its own counter's, as PyTorch's
                owner = backend.storage(self.native)
                if not (_WRITTEN and _WRITTEN[-1] is owner):
                    _count_write(owner, root)
                return True
            _set_writes_through(self, False)  # read-only memory: the tensor takes its own array
        if _SHARED_STORAGES:
            mine = _storage_of(backend, self.native)
            if op is not None and mine is not None and id(mine) in _SHARED_STORAGES:
                # read-only host memory: PyTorch writes into it, so refuses as for writable
                layout = getattr(backend, "layout", None)
                found = None if layout is None else layout(self.native)
                strides = () if found is None else found[0]
                if any(s == 0 and n > 1 for s, n in zip(strides, self._shape)):
                    self._check_repeated_write(native, op)
            owner = _storage_of(backend, native)
            if owner is not None and id(owner) in _SHARED_STORAGES:
                native = _private_copy(backend, native, self._dtype)
        if _WRITES:  # the storages' write counts differ: keep the version where it was
            version = self._version
            self.native = native
            self._version = version
        else:
            self.native = native
        return False

    def _is_shared_view(self) -> bool:
        """Whether this is a view (ops/views.py) that still uses the memory of a host-shared
        tensor; it then becomes host-shared itself, so that it writes into that memory and
        goes on seeing its base's changes, as a PyTorch view does."""
        if self._view_of is None or not _HOST_SHARED:
            return False
        chain = [self]  # up to the first host-shared base: a loop, as chains may be long
        base = self._view_of[0]
        while not _writes_through(base):
            if base._view_of is None:
                return False
            chain.append(base)
            base = base._view_of[0]
        for t in reversed(chain):
            base = t._view_of[0]
            if _storage_of(t.backend, t.native) is not _storage_of(base.backend, base.native):
                return False  # the view op copied
            _set_writes_through(t, True)
        return True

    def _inplace_source(self, *operands: Any) -> Tensor:
        """What an in-place method with ``operands`` computes from: a frozen copy when the
        graph needs one (this tensor's history, or its old value saved for an operand's
        gradient: PyTorch saves ``x``'s value before ``x.mul_(w)`` for ``w``)."""
        self._check_inplace()
        if not is_grad_enabled():
            return self
        if self._requires_grad:
            snap = self._snapshot()
            view = self._view_of
            if view is not None and getattr(view[1], "rebases", False):
                with enable_grad():  # re-read from its base, as PyTorch rebases a changed view
                    snap._node = view[2](view[0])._node
            return snap
        for operand in operands:
            if isinstance(operand, Tensor) and operand._requires_grad:
                # (over a copy where the memory is host-shared: the write is about to change it)
                return Tensor(self._unshared_native(), self.backend, self._dtype)
        return self

    def _unshared_native(self) -> Any:
        """This tensor's array, or a copy of it where it is host-shared memory: what a new
        tensor that must not see later writes (``clone``, ``deepcopy``) holds."""
        if _SHARED_STORAGES:
            owner = _storage_of(self.backend, self.native)
            if owner is not None and id(owner) in _SHARED_STORAGES:
                copy = _private_copy(self.backend, self.native, self._dtype)
                return _laid_out_like(self.backend, copy, self.native)
        return self.native

    # -- memory layout ----------------------------------------------------------------------

    def _layout(self) -> tuple:
        """(strides, storage offset, address) as the backend reports them, else C order; a
        view's as PyTorch's over its base's memory where the view holds an array of its own
        (``as_strided``, ``unfold``, ``diagonal``, complex parts; ops/views.py's
        ``view_layout``), and so the views of such a view; a new axis's stride as PyTorch's
        (``unsqueeze``, None indexing)."""
        layout = getattr(self.backend, "layout", None)
        found = None if layout is None else layout(self.native)
        view = self._view_of
        if found is None:
            if layout is None or view is None:
                return _c_strides(self._shape), 0, 0
            found = _c_strides(self._shape), 0, 0  # (an empty array: a view of it may know)
        if view is None and self._alias_of is None:
            return found
        if 0 in self._shape:  # (no element to place it by)
            from tensorweaver.ops.views import empty_view_layout

            found = empty_view_layout(self, found)
        else:
            top = self._own_array_view()
            if top is not None:
                from tensorweaver.ops.views import part_layout, view_layout

                # (an alias, a write gave it an array of its own: laid out as what it aliases)
                laid = view_layout(top) if top._view_of is not None else top._alias_of._layout()
                if laid is not None:
                    found = laid if top is self else part_layout(top, self, laid, found)
        # a new axis (unsqueeze, None indexing): PyTorch's stride for it, not the backend's
        unit = None if view is None else getattr(view[2], "torch_strides", None)
        return found if unit is None else (unit(view[0]), *found[1:])

    def _strides(self) -> tuple:
        """``_layout()[0]``, read without the storage offset and address where the backend
        reads strides apart (its optional ``strides``: NumPy's address costs half of its
        layout) and no view up the chain holds an array of its own."""
        read = getattr(self.backend, "strides", None)
        view = self._view_of
        if read is None or (
            (view is not None or self._alias_of is not None) and self._own_array_view() is not None
        ):
            return self._layout()[0]
        found = read(self.native)
        if found is None:
            found = _c_strides(self._shape)
        unit = None if view is None else getattr(view[2], "torch_strides", None)
        return found if unit is None else unit(view[0])

    def _own_array_view(self) -> Tensor | None:
        """The view up this tensor's chain of bases and aliases over its memory whose array
        is its own (not its base's), or the alias that a write gave one (laid out as what it
        aliases), or None where the chain ends at a tensor of its own."""
        storage = getattr(self.backend, "storage", None)
        if storage is None:
            return None  # (its strides are unknown: C order's, no views of its own)
        mine, t = storage(self.native), self
        while True:
            up = t._view_of[0] if t._view_of is not None else t._alias_of
            if up is None:
                return None
            if storage(up.native) is not mine:
                if t._view_of is not None:
                    return t
                # an alias (``detach()``, ``set_``) that a write gave an array of its own: its
                # memory is still that of the tensor it aliases, laid out as that one is
                same = up._shape == t._shape and up._dtype is t._dtype
                return t if same else None
            t = up

    def stride(self, dim: int | None = None) -> Any:
        """The step in elements between neighbours along each dimension, as the backend's
        array really lays them out (C order where the backend cannot tell). Ops that copy
        where PyTorch returns a view (the NumPy backend's flip, for one) differ from PyTorch's
        strides; views (``t()``, ``permute``, basic slicing, ``expand``, and those whose
        array is a copy: ``as_strided``, ``unfold``, ``diagonal``, ``real``) match them."""
        view = self._view_of
        unit = None if view is None else getattr(view[2], "torch_strides", None)
        strides = self._strides() if unit is None else self._unit_strides(view, unit)
        return strides if dim is None else strides[_axis(dim, len(self._shape), "stride")]

    def _unit_strides(self, view: tuple, unit: Any) -> tuple:
        """The strides of a view with a new axis (``unsqueeze``, None indexing): PyTorch's,
        ``unit(base)``, which reads the base's shape and strides alone; kept with them, so
        that a later call while they stay the same skips recomputing them (unit is a Python
        loop over the base's strides, and the view's own layout need not be read)."""
        base = view[0]
        shape, base_strides = base.shape, base.stride()
        try:
            kept = self._new_axis_strides
        except AttributeError:  # (a slot set on first use: no cost in __init__)
            kept = None
        if kept is not None and kept[0] is view and kept[1] == shape and kept[2] == base_strides:
            return kept[3]
        strides = unit(base)
        self._new_axis_strides = (view, shape, base_strides, strides)
        return strides

    def _dense_order(self) -> tuple[int, ...] | None:
        """:func:`_dense_axis_order` of this tensor's layout."""
        shape = self._shape
        make = getattr(self.backend, "contiguous", None)
        if 0 in shape or (
            make is not None
            and make(self.native) is self.native
            # (a view whose array is a copy, z.real's, is laid out as its strides tell)
            and (
                (self._view_of is None and self._alias_of is None) or self._own_array_view() is None
            )
        ):
            return tuple(range(len(shape)))  # C order, told cheaply (strides cost more)
        return _dense_axis_order(tuple(shape), self._strides())

    def _preserved_order(self) -> tuple[int, ...]:
        """The axes, outermost first, of a new tensor laid out like this one as PyTorch's
        ``preserve_format`` lays it out (:func:`tensorweaver.memory_formats.preserved_order`:
        a dense layout kept, a stepped one's axis order too)."""
        shape = self._shape
        make = getattr(self.backend, "contiguous", None)
        if 0 in shape or make is None or (1 not in shape and make(self.native) is self.native):
            return tuple(range(len(shape)))  # C order, told cheaply (strides cost more)
        return preserved_order(tuple(shape), self._strides())

    def is_contiguous(self, *, memory_format: Any = contiguous_format) -> bool:
        """Whether the elements lie in memory in C order (``memory_format`` the default), or
        in channels-last order (``channels_last`` for 4-d, ``channels_last_3d`` for 5-d)."""
        shape = self._shape
        if memory_format is contiguous_format:  # (the default's without a str())
            name = ""
        elif type(memory_format).__name__ == "memory_format":  # (tw's format objects, or torch's)
            name = str(memory_format).rpartition(".")[2]
        else:
            raise TypeError(
                "is_contiguous(): argument 'memory_format' must be torch.memory_format (such "
                f"as tw.channels_last), not {type(memory_format).__name__}"
            )
        if name in ("channels_last", "channels_last_3d"):
            if len(shape) != (4 if name == "channels_last" else 5):
                return False
            order = (1, *reversed(range(2, len(shape))), 0)  # C fastest, then W, H, (D,) N
        else:
            order = tuple(reversed(range(len(shape))))
        if 0 in shape:
            return True
        strides = self._strides()
        expected = 1
        for d in order:
            if shape[d] != 1 and strides[d] != expected:
                return False
            expected *= shape[d]
        return True

    def as_strided(self, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
        """A view of this tensor's memory with the given sizes, strides and storage offset
        (:func:`tensorweaver.ops.views.as_strided`)."""
        from tensorweaver.ops.views import as_strided

        return as_strided(self, size, stride, storage_offset)

    def as_strided_(self, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
        """This tensor made ``as_strided(size, stride, storage_offset)`` in place."""
        from tensorweaver.ops.inplace_shape import as_strided_

        return as_strided_(self, size, stride, storage_offset)

    def _count_on_shared_counter(self) -> None:
        """Move the versions of the bases, views and ``detach()`` aliases that share this
        tensor's version counter in PyTorch, for a change of this tensor that writes nothing
        back (``set_``, an in-place shape change of a view); this tensor's own is left to
        the caller."""
        root = self
        while not root._own_counter and (root._view_of or root._alias_of) is not None:
            root = root._view_of[0] if root._view_of is not None else root._alias_of
        if root is not self:
            root._version += 1
        sharing = [root]
        while sharing:
            for entry in sharing.pop()._views or ():
                follower = entry[0]()
                if follower is not None and not follower._own_counter:
                    if follower is not self:
                        follower._version += 1
                    sharing.append(follower)

    def set_(
        self, source: Any = None, storage_offset: int = 0, size: Any = None, stride: Any = None
    ) -> Tensor:
        """Make this tensor show ``source``'s memory, as PyTorch's: with its shape, strides
        and offset (``set_(source)``; writes through either reach the other, each keeps its
        own version counter), or ``source``'s memory seen ``as_strided(size, stride,
        storage_offset)`` (strides C order's by default); ``set_()`` makes it empty. It is
        no view of ``source`` (``_base`` is None); its former views keep the old memory."""
        from tensorweaver.ops.creation import empty

        if source is None:
            if size is not None or stride is not None or storage_offset:
                raise TypeError("set_(): size, stride and storage_offset need a source tensor")
            source = empty(0, dtype=self._dtype, device=self.device)
        elif not isinstance(source, Tensor):
            raise TypeError(
                f"set_(): source must be a Tensor, got {type(source).__name__} (PyTorch's "
                "Storage sources are not supported)"
            )
        if source._dtype is not self._dtype or source.backend is not self.backend:
            raise RuntimeError(
                f"Could not set tensor of type {source._dtype.name} on {source.device} to a "
                f"tensor of type {self._dtype.name} on {self.device}; convert it first with "
                ".to(...)"
            )
        if self._inference:
            self._refuse_inference_update("set_")
        graphed = is_grad_enabled()
        if graphed:
            self._check_inplace()  # a leaf that requires grad: PyTorch's error
        if size is not None:
            size = tuple(size)
            stride = _c_strides(size) if stride is None else stride
            with no_grad():  # (the memory is shared, not the graph: PyTorch's set_ has none)
                # (the offset counts from source's own, as PyTorch's)
                offset = source.storage_offset() + storage_offset
                source = source.as_strided(size, stride, offset)
        elif stride is not None or storage_offset:
            raise TypeError("set_(): storage_offset and stride need a size too")
        self._count_on_shared_counter()  # (before the data setter cuts them from this tensor)
        graphed = graphed and (self.requires_grad or source.requires_grad)
        if graphed:
            old = self.detach()  # (the node's input: this tensor before, in the graph)
            old._node, old._requires_grad = self._node, self._requires_grad
        if source is not self:
            Tensor.data.__set__(self, source)  # type: ignore[attr-defined]
        self._version += 1
        if graphed:
            # PyTorch records a node whose backward refuses: set_ has no derivative
            from tensorweaver.autograd.function import Function
            from tensorweaver.ops.apply import labelled

            class SetStorage(Function):
                @staticmethod
                def forward(ctx: Any, old: Tensor, source: Tensor) -> Tensor:
                    return source.detach()

                @staticmethod
                def backward(ctx: Any, grad: Tensor) -> Any:
                    raise RuntimeError("derivative for set_ is not implemented")

            made = labelled(SetStorage.apply(old, source), "NotImplemented", old, source)
            self._node, self._requires_grad = made._node, True
        return self

    def storage_offset(self) -> int:
        """Where the first element lies in the memory the array uses, in elements."""
        return self._layout()[1]

    def data_ptr(self) -> int:
        """The address of the first element (0 where the backend cannot tell)."""
        return self._layout()[2]

    # -- host -------------------------------------------------------------------------------

    def numpy(self, *, force: bool = False) -> Any:
        """The values as a NumPy array that shares this tensor's memory where the backend can
        (NumPy; torch on the CPU, but for bfloat16): writes on either side are seen by the
        other, in-place tensor methods included. Elsewhere (torch on a GPU, cuPyNumeric,
        bfloat16, which arrives as float32) it is a copy. The first call on a tensor that does
        not share its memory yet copies once (see the module docs); later calls do not.
        ``force=True`` allows a tensor that requires grad or has the conjugate or negative bit
        (a copy of its values), as in PyTorch."""
        if self._requires_grad and is_grad_enabled() and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. "
                "Use tensor.detach().numpy() instead."
            )
        if self._dtype.is_complex and self.is_conj():
            if force:  # PyTorch's force resolves the conjugate bit (into a copy)
                return self.detach().resolve_conj().numpy()
            # a conj() view's memory is its base's, unconjugated, as PyTorch's
            raise RuntimeError(
                "Can't call numpy() on Tensor that has conjugate bit set. "
                "Use tensor.resolve_conj().numpy() instead."
            )
        if (self._view_of is not None or self._alias_of is not None) and self.is_neg():
            if force:  # (into a copy, as PyTorch's force)
                return self.detach().resolve_neg().numpy()
            # z.conj().imag: its memory holds the imaginary parts of z, unnegated
            raise RuntimeError(
                "Can't call numpy() on Tensor that has negative bit set. "
                "Use tensor.resolve_neg().numpy() instead."
            )
        backend = self.backend
        if not _shares_host(backend) or self._dtype is bfloat16:
            return backend.to_host(self.native)
        if _writes_through(self):
            view = backend.host_view(self.native)
            if view is not None:
                return _writable(view)
        if self._view_of is not None and self._own_array_view() is not None:
            from tensorweaver.ops.host_strided_views import share_with_host

            host = share_with_host(self)  # (its base's memory, with its strides)
            if host is not None:
                return host
        return self._share_with_host()

    def _share_with_host(self) -> Any:
        """Move this tensor into memory shared with the host, where in-place methods write
        (``numpy()``, ``__dlpack__``); the host array. First a fresh array, since the graph or
        other tensors may hold the current one and must not see the host's writes. A view
        moves the tensor whose memory it uses (with its views), and shows its part of it."""
        backend = self.backend
        root = self._memory_root()
        if root is not self:
            root._share_with_host()
            if self._is_shared_view():
                view = backend.host_view(self.native)
                if view is not None:
                    return _writable(view)
        host = backend.to_host(self.native)
        native = backend.wrap_host(host)
        if native is not None:
            self._move_to(native)
        return host

    def _move_to(self, native: Any) -> None:
        """Hold ``native`` (the same values, in host-shared memory) from now on, and so do the
        tensors this one was detached from and their ``detach()`` aliases (``nn.Parameter(t)``
        included) that hold the same array: PyTorch's share one memory."""
        old = self.native
        todo = [self]
        while todo[-1]._alias_of is not None and todo[-1]._alias_of.native is old:
            todo.append(todo[-1]._alias_of)
        while todo:
            t = todo.pop()
            if t.native is not old:
                continue  # moved already
            version = t._version
            t.native = native
            t._version = version  # same values: no change for autograd
            _mark_shared(t)
            for entry in t._views or ():
                alias = entry[0]() if entry[1] is None else None
                if alias is not None and alias._alias_of is t and alias.native is old:
                    todo.append(alias)
            t._move_views(_storage_of(t.backend, old))

    def _move_views(self, storage: Any) -> None:
        """After this tensor moved to host-shared memory: its live views that used its old
        memory (``storage``) view the new one, and so on down (they see the host's writes, as
        PyTorch's views of one memory do); a view whose array is a copy laid out in that
        memory (a diagonal, ``as_strided``, a complex part) holds that part of the new memory
        (ops/host_strided_views.py); views that copied otherwise keep their arrays."""
        todo = [self]
        while todo:
            t = todo.pop()
            for entry in t._views or ():
                view = entry[0]()
                if view is None or entry[1] is None or view._view_of is None:
                    continue
                if view._view_of[0] is not t:
                    continue
                held = _storage_of(view.backend, view.native)
                if held is not storage:
                    if held is not None and not _writes_through(view):
                        from tensorweaver.ops.host_strided_views import share_with_host

                        share_with_host(view)
                    continue
                with no_grad():
                    made = entry[1](t)
                version = view._version
                view.native = made.native
                view._version = version  # same values: no change for autograd
                todo.append(view)

    def _memory_root(self) -> Tensor:
        """The tensor up this view's or alias's chain of bases (``detach()``, ``.data``)
        whose memory it uses (itself where it is neither, or a copy: a view op the backend
        copied)."""
        t, storage = self, _storage_of(self.backend, self.native)
        while storage is not None:
            base = t._alias_of
            if base is None:
                if t._view_of is None:
                    break
                base = t._view_of[0]
            if _storage_of(base.backend, base.native) is not storage:
                break
            t = base
        return t

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any:
        """The values as a NumPy array (``np.asarray(t)``): a copy, except that ``copy=False``
        gives a read-only view of the tensor's memory where the backend shares host memory
        (NumPy; torch on the CPU), and raises ValueError where that needs a copy, as NumPy 2
        expects. Refused as ``numpy()`` refuses (a tensor requiring grad, a conjugate or
        negative view), as PyTorch's ``__array__`` calls it."""
        if (self.requires_grad and is_grad_enabled()) or (
            (self._view_of is not None or self._alias_of is not None)
            and (self.is_conj() or self.is_neg())
        ):
            self.numpy()  # raises (its checks, not repeated here)
        if copy is False:
            return self._host_view_of(dtype)
        host = self.backend.to_host(self.native)
        return host if dtype is None else host.astype(dtype, copy=False)

    def _host_view_of(self, dtype: Any) -> Any:
        import numpy as np

        host_view = getattr(self.backend, "host_view", None)
        if isinstance(self.native, np.generic):  # a 0-d NumPy result: immutable, no memory
            view = np.asarray(self.native)
        else:
            view = None if host_view is None else host_view(self.native)
        if view is None or (dtype is not None and np.dtype(dtype) != view.dtype):
            wanted = self._dtype.name if dtype is None else np.dtype(dtype).name
            raise ValueError(
                f"__array__: copy=False, but a {self._dtype.name} tensor on {self.device.name} "
                f"cannot be seen as a NumPy {wanted} array without a copy; use "
                "np.asarray(t) (copy=None) or t.numpy()"
            )
        view.flags.writeable = False  # the tensor's array is never written through NumPy
        return view

    def __array_wrap__(self, array: Any, context: Any = None, return_scalar: bool = False) -> Any:
        """A NumPy ufunc's result on this tensor (``np.exp(t)``, ``np.add(t, 1)``) as a tensor
        over the result array (``from_numpy``; a 0-d one too), as PyTorch's; a bool result as
        uint8, as PyTorch's. An input that requires grad (while grad mode is on) or is
        bfloat16 raises, as PyTorch's (its gradient would be lost; NumPy has no bfloat16):
        checked here, not in ``__array__``, which internal reads use."""
        from tensorweaver.ops.creation import from_numpy

        global _REFUSED_WRAP
        if context is None:
            # NumPy calls again without context when this raises TypeError: then refuse
            # again what the call with context refused (maybe another input than self)
            refused, _REFUSED_WRAP = _REFUSED_WRAP, None
            if refused is not None and refused[0] is array:
                raise refused[1]
        for arg in (self,) if context is None else context[1]:
            if isinstance(arg, Tensor) and arg.requires_grad and is_grad_enabled():
                raise RuntimeError(
                    "Can't call numpy() on Tensor that requires grad. Use "
                    "tensor.detach().numpy() instead (a NumPy ufunc of a tensor)."
                )
            if isinstance(arg, Tensor) and arg.dtype is bfloat16:
                error = TypeError(
                    "Got unsupported ScalarType BFloat16 (a NumPy ufunc of a bfloat16 "
                    "tensor; NumPy has no bfloat16): convert first, e.g. t.float()"
                )
                _REFUSED_WRAP = None if context is None else (array, error)
                raise error
        if array.dtype == bool:
            array = array.astype("uint8")
        return from_numpy(array)

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        """The array API standard namespace of tensors, :mod:`tensorweaver.array_api`."""
        from tensorweaver import array_api

        if api_version is not None and api_version not in array_api.API_VERSIONS:
            raise ValueError(
                f"__array_namespace__: array API version {api_version!r} is not supported; "
                f"use one of {', '.join(array_api.API_VERSIONS)} (or None: the latest)"
            )
        return array_api

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """This tensor on ``device`` (a ``tw.device`` or spec), as the array API standard's
        ``to_device``; ``stream`` is accepted and unused (transfers are synchronous)."""
        return self.to(device)

    def item(self) -> Any:
        if VMAPPED.depth:
            _refuse_read_in_vmap(self, "calling .item() on a Tensor")
        if self.numel() != 1:
            raise RuntimeError(
                f"item(): a tensor with {self.numel()} elements cannot be converted to a "
                "Python scalar (it needs exactly one element)"
            )
        return self.backend.to_host(self.native).reshape(()).item()

    def tolist(self) -> Any:
        if VMAPPED.depth:
            _refuse_read_in_vmap(self, "calling .tolist() on a Tensor")
        return self.backend.to_host(self.native).tolist()

    def _python_number(self, kind: str) -> Any:
        """The one element, for ``float()``/``int()``/``complex()`` (``kind``): a ValueError
        for any other number of elements, and a RuntimeError for a complex value with an
        imaginary part made real, as PyTorch."""
        if self._shape and self.numel() != 1:  # (a 0-d tensor, the common case, skips numel)
            raise ValueError(
                f"{kind}(): only one element tensors can be converted to Python scalars, this "
                f"one has shape {tuple(self._shape)}; use .tolist() or index one element"
            )
        value = self.item()
        if kind != "complex" and isinstance(value, complex):
            if value.imag != 0:
                raise RuntimeError(
                    f"{kind}(): the complex value {value} cannot be converted to a real number "
                    "without losing its imaginary part; convert .real or .abs() instead"
                )
            value = value.real
        return value

    def __float__(self) -> float:
        if VMAPPED.depth:
            _refuse_read_in_vmap(self, "calling .item() on a Tensor")
        return float(self._python_number("float"))

    def __int__(self) -> int:
        if VMAPPED.depth:
            _refuse_read_in_vmap(self, "calling .item() on a Tensor")
        return int(self._python_number("int"))

    def __index__(self) -> int:
        if self._dtype.kind not in "iu" or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if VMAPPED.depth:
            _refuse_read_in_vmap(
                self, "attempting to use a Tensor in some data-dependent control flow"
            )
        if self.numel() != 1:
            raise RuntimeError(
                f"the truth value of a tensor with {self.numel()} elements is ambiguous; "
                "use .any() or .all()"
            )
        return bool(self.item())

    def __iter__(self) -> Any:
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._shape[0]))

    def __repr__(self) -> str:
        from tensorweaver.printing import tensor_repr

        return tensor_repr(self)

    def __format__(self, format_spec: str) -> str:
        # As PyTorch: a 0-d tensor formats its value (f"{loss:.4f}"); any other tensor takes
        # only an empty spec (a non-empty one is a TypeError).
        if not self._shape:
            return format(self.item(), format_spec)
        return object.__format__(self, format_spec)

    @property
    def persistent(self) -> bool:
        """Whether the module that registers this tensor (made by ``nn.Buffer(t,
        persistent=)``) keeps it in ``state_dict``; AttributeError for a tensor no Buffer made,
        as PyTorch's attribute."""
        from tensorweaver.nn.parameter import persistent_of

        return persistent_of(self)

    @persistent.setter
    def persistent(self, value: bool) -> None:
        from tensorweaver.nn.parameter import set_persistent

        set_persistent(self, value)

    def __deepcopy__(self, memo: dict) -> Tensor:
        """A copy that shares no state (native arrays are written only when shared with the
        host, so it shares the array itself unless that is host memory)."""
        if self._node is not None:
            raise RuntimeError(
                "only tensors created explicitly by the user (graph leaves) support "
                "deepcopy; .detach() it first"
            )
        import copy

        from tensorweaver.nn.parameter import copy_buffer_flags

        out = Tensor(self._unshared_native(), self.backend, self._dtype)
        out._requires_grad = self._requires_grad
        copy_buffer_flags(self, out)
        memo[id(self)] = out
        if self.grad is not None:
            out.grad = copy.deepcopy(self.grad, memo)
        return out

    def __reduce__(self) -> Any:
        raise TypeError(
            "TensorWeaver tensors are not picklable (loading a pickle can run code); "
            "save them with tw.save(...) (safetensors)"
        )

    def __dlpack__(
        self,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule over this tensor's memory (``copy=True``: over a copy; a
        ``dl_device`` other than the tensor's: over a copy there, where the backend can)."""
        native = self._dlpack_native()
        given = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
        # Older producers take fewer keywords: pass only those given.
        return native.__dlpack__(**{k: v for k, v in given.items() if v is not None})

    def __dlpack_device__(self) -> tuple[int, int]:
        """The DLPack ``(device type, index)`` of this tensor's memory."""
        return self._dlpack_native().__dlpack_device__()

    def _dlpack_native(self) -> Any:
        import numpy as np

        if self._dtype.is_complex and self.is_conj():  # (its array is not its base's memory)
            raise BufferError(
                "__dlpack__: cannot export a tensor with the conjugate bit set (a conj() "
                "view); call t.resolve_conj() first (a new tensor)"
            )
        if _shares_host(self.backend) and self._dtype is not bfloat16 and not _writes_through(self):
            # the consumer shares this memory, as torch's: later in-place changes reach it
            self._share_with_host()
        native = self.native
        if isinstance(native, np.generic):  # a 0-d NumPy result: a scalar has no DLPack
            return np.asarray(native)
        if str(native.dtype).rsplit(".", 1)[-1] != self._dtype.name:
            raise BufferError(
                f"__dlpack__: this backend keeps {self._dtype.name} as {native.dtype}, which "
                f"DLPack would mislabel; convert first (t.float()) or use the torch backend"
            )
        return native


class Size(tuple):
    """A shape, as ``tensor.shape`` and ``tensor.size()`` are (a tuple of ints); as PyTorch's
    ``torch.Size``, ``+`` and ``*`` give a ``Size``.

    Differs from PyTorch: slicing a ``Size`` gives a plain tuple (a Python ``__getitem__``
    would slow every ``shape[i]`` the core reads: 17 to 117 ns, indexing ops by 12-20%)."""

    # No attributes, as torch.Size: tensors of one shape share one Size (``_SIZES``).
    __slots__ = ()

    def __add__(self, other: tuple) -> Size:
        return Size(tuple.__add__(self, other))

    def __radd__(self, other: tuple) -> Any:
        # NotImplemented for a list, so that ``a_list += shape`` extends it, as PyTorch's
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, times: int) -> Size:
        return Size(tuple.__mul__(self, times))

    __rmul__ = __mul__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n

    def __repr__(self) -> str:
        return f"tensorweaver.Size({list(self)})"


#: One ``Size`` per shape seen (keyed by the backend's own shape, which compares and hashes as
#: a tuple): building a tuple subclass from ``torch.Size`` was a fifth of the result tensor's
#: construction (1.2k of 6.2k instructions), and a program meets few distinct shapes.
_SIZES: dict[tuple, Size] = {}
_SIZES_KEPT = 4096


def _size_of(shape: tuple) -> Size:
    """The ``Size`` of a shape not in ``_SIZES`` yet, added to it (which starts over when
    full: a program that keeps meeting new shapes only pays the construction)."""
    size = Size([operator.index(n) for n in shape])
    if len(_SIZES) >= _SIZES_KEPT:
        _SIZES.clear()
    _SIZES[size] = size
    return size


def index_argument(value: Any, op: str, name: str) -> int:
    """An int argument (a size, a dim) as PyTorch takes it: a Python or NumPy int or an
    integer tensor of one element; bools, floats and None are a TypeError."""
    if type(value) is int:
        return value
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"{op}(): argument '{name}' must be int, not {type(value).__name__}")


def _axis(dim: int, ndim: int, op: str) -> int:
    """``dim`` made non-negative, or an IndexError that names the op and the valid range (a
    TypeError for a dim that is not an integer)."""
    if type(dim) is not int:
        dim = index_argument(dim, op, "dim")
    ndim1 = max(ndim, 1)
    if not -ndim1 <= dim < ndim1:
        raise IndexError(
            f"{op}: dimension out of range (expected to be in range of "
            f"[{-ndim1}, {ndim1 - 1}], but got {dim})"
        )
    return dim + ndim1 if dim < 0 else dim


# Autograd's version counter is the ``_version`` slot until the first write into host-shared
# memory; from then on it is a property that adds the writes into the tensor's storage, as
# PyTorch's counter is shared by the tensors over one storage. Programs that never share
# memory with the host keep the plain slot on the hot path (a node reads it per input).
_VERSION_SLOT = Tensor.__dict__["_own_version"]
Tensor._version = _VERSION_SLOT  # the slot itself, under its public name: no extra cost


def _counted_version(t: Tensor) -> int:
    """``t``'s own in-place changes plus the writes into its memory through any tensor."""
    return _VERSION_SLOT.__get__(t) + _writes_into(t)


def _set_counted_version(t: Tensor, value: int) -> None:
    _VERSION_SLOT.__set__(t, value - _writes_into(t))


def _count_versions_per_storage() -> None:
    Tensor._version = property(_counted_version, _set_counted_version)
