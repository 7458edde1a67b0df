"""Optimizer updates written into the parameters' own memory, as PyTorch's in-place kernels do.

The core's in-place methods compute a new array and rebind the tensor to it (the IR is
functional). For a step's updates of large tensors that costs an allocation and a write to
cold memory per tensor: on torch:cpu, ``clip_grad_norm_``'s scaling and the SGD update of a
word-LM's 1000 x 200 decoder took 183 and 118 us out of place, 18 and 51 in place. Where the
backend has ``foreach_inplace`` (API 2.7) and a tensor's array is its own
(:meth:`Tensor._writable_in_place`), the update goes into that memory; the bookkeeping
(version, aliases, the base of a ``p.data`` alias) is the in-place method's, and the values
are the out-of-place primitive's, bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from math import prod
from typing import Any, Callable

from tensorweaver.tensor import Tensor


def natives(tensors: list[Tensor]) -> list[Any]:
    return [t.native for t in tensors]


def assign(tensors: list[Tensor], values: list[Any], op: str) -> None:
    """Rebind each tensor to its new array, as the in-place method ``op`` does."""
    for t, v in zip(tensors, values):
        t._assign(v, op)  # (a bare array: Tensor._assign takes one)


#: Tensors of fewer elements are rebound as before: a new array of them costs about what
#: the check that an array may be written costs (2-3 us; torch:cpu, one thread: 9 us out of
#: place and 6 in place at 40,000 float32 elements, 84 and 53 at 100,000).
SMALLEST = 1 << 16


def large(tensors: list[Tensor]) -> list[int]:
    """The indices of ``tensors`` of at least :data:`SMALLEST` elements."""
    return [i for i, t in enumerate(tensors) if prod(t.shape) >= SMALLEST]


def foreach_update(
    tensors: list[Tensor], name: str, args: tuple, op: str, sizes: list[int] | None = None
) -> list[Any]:
    """Make each of ``tensors`` (one backend, which has ``foreach_<name>``) the result of
    ``foreach_<name>(their arrays, *args)``, as the in-place method ``op`` (``"add_"``)
    would: written into the arrays of at least :data:`SMALLEST` elements that allow it, the
    others rebound to new arrays. A list or tuple in ``args`` has one entry per tensor.
    ``sizes``: ``large(tensors)`` if the caller has it (an optimizer's state tensors have
    their parameters' shapes: one count a step, 3-5 us for ten tensors, not one a call).
    Returns the tensors' arrays after the update.

    The caller must hold none of the tensors' arrays (each reference counts against
    writing in place). An array in ``args`` of another shape than its tensor (an optimizer's
    state loaded for another model) raises PyTorch's RuntimeError. Within :func:`in_order`,
    the tensors are updated one after another."""
    try:
        if _REBOUND:
            return _update_in_order(tensors, name, args, op)
        return _update(tensors, name, args, op, sizes)
    except Exception as error:  # (checked only then: a step pays nothing for the check)
        mismatch = _shape_mismatch(tensors, args, op)
        if mismatch is None:
            raise
        raise mismatch from error


#: One entry a block of :func:`in_order`: its ``involved``, and the id of each array that
#: :func:`foreach_update` replaced in a tensor -> (that array, the tensor).
_REBOUND: list[tuple[Callable[[], Iterable[Tensor]], dict[int, tuple[Any, Tensor]]]] = []


@contextmanager
def in_order(involved: Callable[[], Iterable[Tensor]]) -> Iterator[None]:
    """Within the block, :func:`foreach_update` updates its tensors one after another, as
    PyTorch's foreach kernels do on a CPU, each reading its operands then: an operand array
    that a tensor held before an update gave it another (read by the caller earlier: ``g``
    of ``q.grad = p.data``, or of ``p.grad = buf``) stands for that tensor's array now,
    unless one of the tensors ``involved()`` lists holds it still (a clone of the tensor,
    which shares its array until either changes). For steps whose tensors share memory (an
    optimizer's ``_aliased_grads``)."""
    _REBOUND.append((involved, {}))
    try:
        yield
    finally:
        _REBOUND.pop()


def _update_in_order(tensors: list[Tensor], name: str, args: tuple, op: str) -> list[Any]:
    involved, rebound = _REBOUND[-1]
    # How many of the involved tensors hold each array (by id), kept current as updates
    # rebind them: asking involved() again after each update made a step quadratic
    members = {id(y): y for y in involved()}
    held: dict[int, int] = {}
    for y in members.values():
        held[id(y.native)] = held.get(id(y.native), 0) + 1
    for i, t in enumerate(tensors):
        own = tuple([_now(a[i], rebound)] if type(a) in _PER_TENSOR else a for a in args)
        arrays = [(x, x.native) for x in _sharing_memory(t)]
        _update([t], name, own, op, None)
        changed = {id(x): (x, before) for x, before in arrays if x.native is not before}
        for key, (x, before) in changed.items():
            if key in members:
                held[id(before)] -= 1
                held[id(x.native)] = held.get(id(x.native), 0) + 1
        for x, before in changed.values():
            if not held.get(id(before)):
                rebound[id(before)] = (before, x)
    return natives(tensors)


def memory_owner(t: Tensor) -> Tensor:
    """The tensor whose memory ``t`` is: up the chain of what it is a view or alias of."""
    while t._view_of is not None or t._alias_of is not None:
        t = t._alias_of if t._view_of is None else t._view_of[0]
    return t


def _sharing_memory(t: Tensor) -> list[Tensor]:
    """``t`` and the tensors over its memory: its :func:`memory_owner` and every view and
    alias of that, and of theirs; a write into ``t`` may give each a new array (``q.grad``
    of ``q.grad = p.data.t()`` when ``p`` is written)."""
    found, todo = [], [memory_owner(t)]
    while todo:
        x = todo.pop()
        found.append(x)
        for entry in x._views or ():
            follower = entry[0]()
            if follower is not None and (
                follower._alias_of is x
                or (follower._view_of is not None and follower._view_of[0] is x)
            ):
                todo.append(follower)
    return found


def _now(value: Any, rebound: dict[int, tuple]) -> Any:
    """``value``, or the array now of the tensor that held it before an update."""
    entry = rebound.get(id(value))
    return value if entry is None or entry[0] is not value else entry[1].native


def _shape_mismatch(tensors: list[Tensor], args: tuple, op: str) -> RuntimeError | None:
    """PyTorch's error for the first array in ``args`` whose shape is not its tensor's."""
    for arg in args:
        if type(arg) not in _PER_TENSOR:
            continue
        for t, value in zip(tensors, arg):
            shape = getattr(value, "shape", None)
            if shape is not None and tuple(shape) != t.shape:
                return RuntimeError(
                    f"{op}: the size of tensor a ({list(t.shape)}) must match the size of "
                    f"tensor b ({list(shape)}); an optimizer's state (load_state_dict) must "
                    "have its parameter's shape"
                )
    return None


def _update(
    tensors: list[Tensor], name: str, args: tuple, op: str, sizes: list[int] | None
) -> list[Any]:
    backend = tensors[0].backend
    own = large(tensors) if sizes is None else sizes
    if own:
        write = _writer(backend)
        own = None if write is None else [i for i in own if tensors[i]._writable_in_place()]
    if not own:
        _rebind(backend, tensors, name, args, op)
        return natives(tensors)
    whole = len(own) == len(tensors)
    chosen = tensors if whole else [tensors[i] for i in own]
    if not write(name, natives(chosen), *(args if whole else _pick(args, own))):
        _rebind(backend, tensors, name, args, op)  # (a name the backend does not write)
        return natives(tensors)
    for t in chosen:
        t._assign(t.native, op)
    if not whole:
        written = set(own)
        rest = [i for i in range(len(tensors)) if i not in written]
        _rebind(backend, [tensors[i] for i in rest], name, _pick(args, rest), op)
    return natives(tensors)


def _writer(backend: Any) -> Any:
    """The backend's ``foreach_inplace``, or None where it has none or records."""
    write = getattr(backend, "foreach_inplace", None)
    # (tw.compile's recorder shadows the backend's methods with instance attributes: its
    # graph of the step is functional, so it records the out-of-place primitive)
    return None if write is None or "foreach_inplace" in backend.__dict__ else write


def addable(x: Tensor, y: Any) -> bool:
    """Whether ``x += y * alpha`` is one ``foreach_add`` (:func:`add_scaled`): floating-point
    tensors of one shape, dtype and backend, which has the primitive."""
    # (the slots, not the properties: once a parameter a step, and a gradient accumulated)
    return (
        type(y) is Tensor
        and y.backend is x.backend
        and y._dtype is x._dtype
        and x._dtype.kind == "f"
        and y._shape == x._shape
        and getattr(x.backend, "foreach_add", None) is not None
    )


def add_scaled(x: Tensor, y: Tensor, alpha: float, op: str) -> None:
    """``x += y * alpha`` as the in-place method ``op`` (``addable(x, y)``; outside autograd):
    into x's memory where it can be, else x rebound to ``foreach_add``'s new array."""
    backend = x.backend
    # (_writer's test inline, once, as both ways in below need it: a call saved a
    # parameter update, ~0.15 us of the core's ~5)
    write = getattr(backend, "foreach_inplace", None)
    if write is not None and "foreach_inplace" not in backend.__dict__:
        if x._alias_of is not None and x._lone_alias_writable():
            # ``p.data.add_(p.grad, alpha=-lr)``: into the parameter's memory whatever its
            # size, as torch's add_, where the write needs no bookkeeping beyond the count (an
            # alias with a base to write back into costs 4-5 us a call more, rebound or not)
            if write("add", [x.native], [y.native], alpha):
                x._wrote_as_lone_alias()
                return
        elif (
            # (_update's steps for one tensor of y's shape, inline: no lists of indices, no
            # shape check; Python run right after the kernel is slow, its data evicted)
            prod(x._shape) >= SMALLEST  # (x.numel(), without a Python call)
            and x._writable_in_place()
            and write("add", [x.native], [y.native], alpha)
        ):
            x._assign(x.native, op)
            return
    (native,) = backend.foreach_add([x.native], [y.native], alpha)  # (no list work)
    x._assign(native, op)


def _rebind(backend: Any, tensors: list[Tensor], name: str, args: tuple, op: str) -> None:
    assign(tensors, getattr(backend, "foreach_" + name)(natives(tensors), *args), op)


def _pick(args: tuple, indices: list[int]) -> tuple:
    """``args`` for the tensors at ``indices``: each list or tuple cut to their entries."""
    return tuple([a[i] for i in indices] if type(a) in _PER_TENSOR else a for a in args)


_PER_TENSOR = (list, tuple)
