"""Which values inside ``vmap`` are batched: the per-element slices and what is made of them.

``vmap`` here calls the function once per element on plain tensors, where PyTorch's holds
a batched tensor for each mapped input and for each op result that depends on one. A read
of a Python value (``.item()``, ``bool()``, ``.tolist()``) is refused for those only
(tensor.py ``_refuse_read_in_vmap``); a tensor made inside the function from unmapped
values alone, or an argument with ``in_dims=None``, reads as usual.

While a vmap call is under way, the backend objects' methods are shadowed by instance
attributes that mark a result batched when one of its arguments is (and, under
``randomness="different"``, a draw from the backend's own stream). The marks are the
natives' ids in the thread's ``VMAPPED.batched`` (each with a weak reference that tells
it from a later native at the same id), so another thread's ops pass unmarked and the
shadows cost nothing once removed.
Values the core computes on host copies (a host fallback) lose the mark: their reads pass.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Callable

from tensorweaver import registry
from tensorweaver.tensor import VMAPPED

#: Guards installing and removing the shadows (one set for all threads' vmap calls).
_LOCK = threading.Lock()
#: How many vmap calls, over all threads, have the shadows installed.
_USERS = [0]
#: backend id -> (backend, {name: shadow of its class's method}), made once per backend
#: (building them costs more than a vmap call of a small function).
_SHADOWS: dict[int, tuple[Any, dict[str, Callable]]] = {}
#: The backends whose methods are shadowed now.
_SHADOWED: list = []


class _State(threading.local):
    """This thread's levels (bits, as :func:`level_bit`) of vmap calls that give each
    element its own draws."""

    different = 0


_STATE = _State()
#: Marks of dead natives are swept each time the count of marks reaches a multiple of this.
_SWEEP_EVERY = 4096


class _Held:
    """A strong hold on a native that cannot be weakly referenced (called like a weakref)."""

    __slots__ = ("native",)

    def __init__(self, native: Any) -> None:
        self.native = native

    def __call__(self) -> Any:
        return self.native


def level_bit() -> int:
    """The bit of a vmap call starting now in this thread: one per nesting level, so that
    an inner vmap's outputs stop being batched at its level and stay so at outer ones."""
    return 1 << VMAPPED.depth


def levels_of(native: Any) -> int:
    """The levels (bits) at which ``native`` is batched; 0: not batched."""
    entry = VMAPPED.batched.get(id(native))
    return 0 if entry is None or entry[0]() is not native else entry[1]


def mark(native: Any, levels: int) -> None:
    """Mark ``native`` (a backend array, or a tuple or list of them) batched at ``levels``
    (0: not batched)."""
    _mark(VMAPPED.batched, native, levels)


def _mark(batched: dict, native: Any, levels: int) -> None:
    if native.__class__ is tuple or native.__class__ is list:
        for part in native:
            _mark(batched, part, levels)
        return
    if not hasattr(native, "shape"):
        return
    if not levels:
        batched.pop(id(native), None)
        return
    # a weak reference without a callback (the cheapest): an entry whose native died stays
    # until a sweep, and is told from a new native at the same id by the reference
    try:
        holder: Any = weakref.ref(native)
    except TypeError:
        holder = _Held(native)  # (held until the outermost vmap ends)
    batched[id(native)] = (holder, levels)
    if not len(batched) % _SWEEP_EVERY:
        for key in [k for k, (ref, _) in batched.items() if ref() is None]:
            del batched[key]


def _levels(batched: dict, values: Any) -> int:
    """The levels of ``values`` (natives, and tuples or lists of them), together."""
    levels = 0
    get = batched.get
    for v in values:
        entry = get(id(v))
        if entry is not None:
            if entry[0]() is v:
                levels |= entry[1]
        elif v.__class__ is tuple or v.__class__ is list:  # (a loop: shapes are tuples too)
            for part in v:
                entry = get(id(part))
                if entry is not None and entry[0]() is part:
                    levels |= entry[1]
    return levels


def _shadow(real: Callable, name: str) -> Callable:
    """``real`` (a bound backend method), marking its result batched where it should be."""
    from tensorweaver.compiler.draws import is_random  # (the compiler imports func)

    draws = is_random(name)

    def call(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        batched = VMAPPED.batched
        levels = _STATE.different if draws else 0
        if batched:
            levels |= _levels(batched, args)
            if kwargs:
                levels |= _levels(batched, kwargs.values())
        if levels:
            _mark(batched, result, levels)
        return result

    call._tw_vmap_shadow = 1  # type: ignore[attr-defined]
    return call


def _class_method(backend: Any, name: str) -> Callable:
    """``backend.name`` as its class defines it (not as an instance attribute shadows it)."""
    klass = type(backend)
    for owner in klass.__mro__:
        if name in owner.__dict__:
            return owner.__dict__[name].__get__(backend, klass)
    raise AttributeError(name)


def _shadows(backend: Any) -> dict[str, Callable]:
    """The shadows of ``backend``'s methods (of its class's: an instance attribute that
    shadows one already, a recorder's, is shadowed in turn when installing)."""
    found = _SHADOWS.get(id(backend))
    if found is None:
        from tensorweaver.compiler.recorder import HOST_READS, PASSTHROUGH

        shadows = {}
        for name in dir(type(backend)):
            if name.startswith("_") or name in PASSTHROUGH or name in HOST_READS:
                continue
            real = getattr(type(backend), name)
            if callable(real) and not isinstance(real, type):
                shadows[name] = _shadow(_class_method(backend, name), name)
        found = _SHADOWS[id(backend)] = (backend, shadows)
    return found[1]


def _install() -> None:
    for backend in registry.created_backends():
        if not hasattr(backend, "__dict__"):
            continue
        own = vars(backend)
        shadows = _shadows(backend)
        previous = {name: own[name] for name in shadows.keys() & own.keys()}
        if previous:  # (a recorder's wrappers: they go on recording, and come back after)
            shadows = {**shadows, **{n: _shadow(f, n) for n, f in previous.items()}}
        own.update(shadows)
        _SHADOWED.append((backend, shadows, previous))


def _remove() -> None:
    for backend, shadows, previous in _SHADOWED:
        own = vars(backend)
        for name, shadow in shadows.items():
            # (a recorder opened meanwhile wraps the shadow: it stays, and only passes on)
            if own.get(name) is shadow:
                del own[name]
        own.update(previous)
    _SHADOWED.clear()


@contextlib.contextmanager
def marking(randomness: str, bit: int) -> Iterator[None]:
    """Mark batched values during the block (one vmap call at level ``bit``, with
    ``randomness``)."""
    with _LOCK:
        if _USERS[0] == 0:
            _install()
        _USERS[0] += 1
    different = _STATE.different
    if randomness == "different":
        _STATE.different |= bit
    try:
        yield
    finally:
        _STATE.different = different
        with _LOCK:
            _USERS[0] -= 1
            if _USERS[0] == 0:
                _remove()
        if VMAPPED.depth == 0:
            VMAPPED.batched.clear()
