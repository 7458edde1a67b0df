"""``tw.autograd.forward_ad``: PyTorch's forward-mode AD API (``dual_level``, ``make_dual``,
``unpack_dual``) on the core's reverse-mode autograd.

There are no per-op forward rules: a dual tensor records a graph from a private entry that
stands for its primal (a leaf alias of it, or a copy when the primal requires grad, so that
backward still reaches the primal), and ``unpack_dual(y)`` computes y's tangent by the
double-vjp trick: ``u -> u J`` is linear in ``u``, so its vjp with the tangents gives ``J t``,
summed over the duals y depends on. Each tangent is computed once per value of y (cached
until y changes in place); leaving the level drops every tangent.

Differences from PyTorch that follow from the design: a dual tensor and what is computed from
it report ``requires_grad=True`` and are not leaves (they carry the graph the tangents are
read from); a level records graphs even when entered under ``no_grad()``, but ops in a
``no_grad()`` block opened inside the level record nothing and so pass no tangent on; a custom
``autograd.Function`` needs a ``jvp`` as in PyTorch, but its tangents come from its
``backward``; complex duals are not supported.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, NamedTuple, Optional

from tensorweaver.autograd.engine import grad as autograd_grad
from tensorweaver.autograd.mode import _restore, _switched, enable_grad, is_grad_enabled
from tensorweaver.ops.creation import zeros_like
from tensorweaver.tensor import Tensor

__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
]

#: The level now open (PyTorch's module attribute of that name): -1 when none is.
_current_level = -1


class UnpackedDualTensor(NamedTuple):
    """What :func:`unpack_dual` returns: the primal and its tangent (None where none)."""

    primal: Tensor
    tangent: Optional[Tensor]


class _Entry:
    """One dual's private graph entry: the tensor gradients are taken with respect to, the
    graph object (leaf tensor or node) that marks it in a graph, and its tangent."""

    def __init__(self, entry: Tensor, tangent: Tensor) -> None:
        self.entry = entry
        self.mark = entry if entry._node is None else entry._node
        self.tangent = tangent


class _Level:
    """The open level's duals and the tangents computed so far. Under ``no_grad()`` the
    level records graphs anyway (they carry the tangents) but keeps them from backward."""

    def __init__(self) -> None:
        self.backward_wanted = is_grad_enabled()
        self.tokens = None if self.backward_wanted else _switched(True)
        self.entries: dict[int, _Entry] = {}  # by id of the mark (kept alive by the entry)
        # id(tensor) -> (weak reference, node, version, tangent) of the value it was computed for
        self.tangents: dict[int, tuple] = {}

    def remember(self, t: Tensor, tangent: Tensor | None) -> None:
        key = id(t)
        self.tangents[key] = (weakref.ref(t), t._node, t._version, tangent)
        weakref.finalize(t, self.tangents.pop, key, None)

    def known(self, t: Tensor) -> tuple[bool, Tensor | None]:
        found = self.tangents.get(id(t))
        if found is None:
            return False, None
        ref, node, version, tangent = found
        if ref() is not t or t._node is not node or t._version != version:
            return False, None  # (changed in place since, or another tensor with that id)
        return True, tangent

    def reached(self, t: Tensor) -> tuple[list[_Entry], bool]:
        """The duals ``t``'s graph starts from, and whether it also reaches a tensor requiring
        grad that is no dual's leaf entry (a primal that requires grad, a parameter)."""
        found: list[_Entry] = []
        outside = False
        # per graph object: whether a dual lies behind it (set when its parents are done)
        behind: dict[int, bool] = {}
        stack: list = [(t._node if t._node is not None else t, False)]
        while stack:
            item, parents_done = stack.pop()
            parents = () if isinstance(item, Tensor) or item.parents is None else item.parents
            parents = [p for p in parents if p is not None]
            if parents_done:
                if any(behind[id(p)] for p in parents):
                    behind[id(item)] = True
                    _check_custom_function(item)
                continue
            if id(item) in behind:
                continue
            entry = self.entries.get(id(item))
            is_entry = entry is not None and entry.mark is item
            behind[id(item)] = is_entry
            if is_entry:
                found.append(entry)
            if isinstance(item, Tensor):
                outside = outside or not is_entry
                continue
            # (walked past an entry too: a primal that requires grad lies behind it)
            stack.append((item, True))
            stack.extend((p, False) for p in parents)
        return found, outside


def _check_custom_function(node: Any) -> None:
    """PyTorch's error for a dual through a user's ``autograd.Function`` without ``jvp``
    (the core's own Functions are differentiated twice instead)."""
    if node.op != "function" or not node.saved:  # (saved is dropped by a backward pass)
        return
    cls = node.saved[0]
    if getattr(cls, "jvp", None) is None and not cls.__module__.startswith("tensorweaver."):
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with "
            "forward mode AD."
        )


_LEVEL: list[_Level | None] = [None]


def enter_dual_level() -> int:
    """Open a forward AD level and return it (0: PyTorch supports one level at a time)."""
    global _current_level
    if _current_level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _current_level = 0
    _LEVEL[0] = _Level()
    return _current_level


def exit_dual_level(*, level: int | None = None) -> None:
    """Close the forward AD level ``level`` (the open one by default); its tangents are gone."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    state = _LEVEL[0]
    _current_level = -1
    _LEVEL[0] = None
    if state is None:
        return
    # (tensors made in the level keep the level alive through their cache finalizers)
    state.entries.clear()
    state.tangents.clear()
    if state.tokens is not None:
        try:
            _restore(state.tokens)
        except ValueError:  # entered in another context: switch back instead
            _switched(False)


class dual_level(contextlib.ContextDecorator):
    """Context manager (or decorator) for a forward AD level: every dual made inside belongs
    to it, and their tangents are dropped on exit. ``with dual_level() as level:`` gives 0."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level()


def _check_floating(what: str, t: Tensor) -> None:
    if not (t.dtype.is_floating_point or t.dtype.is_complex):
        raise ValueError(f"Expected {what} to be floating point or complex, but got: {t.dtype}")


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A tensor with ``tensor``'s value whose tangent (forward gradient) at ``level`` is
    ``tangent``; what is computed from it has tangents that :func:`unpack_dual` reads.
    Backward through the result still reaches ``tensor`` when it requires grad."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    _check_floating("primal", tensor)
    _check_floating("tangent", tangent)
    state = _LEVEL[0]
    if level != _current_level or state is None:
        raise RuntimeError("Invalid level given to _make_dual")
    if tensor.shape != tangent.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}."
        )
    if tensor.is_complex() or tangent.is_complex():
        raise NotImplementedError(
            f"make_dual: complex tensors ({tensor.dtype}, tangent {tangent.dtype}) are not "
            "supported by TensorWeaver's forward AD; use real and imaginary parts as two real "
            "duals"
        )
    if tensor.requires_grad and _has_tangent(state, tensor):
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the "
            f"same level {level} is not supported."
        )
    with enable_grad():
        # a copy keeps the primal's own graph; a leaf alias costs nothing otherwise
        entry = tensor.clone() if tensor.requires_grad else tensor.detach().requires_grad_()
        dual = entry.clone()
    record = _Entry(entry, tangent)
    state.entries[id(record.mark)] = record
    state.remember(dual, tangent)
    return dual


def _has_tangent(state: _Level, t: Tensor) -> bool:
    return bool(state.known(t)[1] is not None or state.reached(t)[0])


def _jvp(y: Tensor, entries: list[_Entry], outside: bool) -> Tensor:
    """``J t`` of ``y`` summed over ``entries`` by the double-vjp trick."""
    tangents = [e.tangent.to(e.entry.dtype) for e in entries]
    create = is_grad_enabled() and (outside or any(t.requires_grad for t in tangents))
    with enable_grad():
        dummy = zeros_like(y).detach().requires_grad_()
        entry_tensors = [e.entry for e in entries]
        vjps = autograd_grad(
            [y], entry_tensors, [dummy], retain_graph=True, create_graph=True, allow_unused=True
        )
        pairs = [(v, t) for v, t in zip(vjps, tangents) if v is not None and v.requires_grad]
        if not pairs:
            return zeros_like(y).detach()
        (found,) = autograd_grad(
            [v for v, _ in pairs],
            [dummy],
            [t for _, t in pairs],
            retain_graph=create,
            create_graph=create,
            allow_unused=True,
        )
    return zeros_like(y).detach() if found is None else found


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of ``tensor`` at ``level`` (the open one by default): the
    tangent is None when ``tensor`` does not depend on a dual of that level or is not
    floating point, or when no level is open."""
    if not isinstance(tensor, Tensor):
        raise TypeError(
            "_unpack_dual(): argument 'dual' (position 1) must be Tensor, not "
            f"{type(tensor).__name__}"
        )
    if level is None:
        level = _current_level
    state = _LEVEL[0]
    if level < 0 or state is None or not tensor.requires_grad:
        return UnpackedDualTensor(tensor, None)
    entries, outside = state.reached(tensor)
    if entries and level != _current_level:
        raise RuntimeError("Invalid level given to _fw_primal")
    outside = outside and state.backward_wanted
    # the primal keeps the graph only for backward to tensors the caller marked
    primal = tensor.view_as(tensor) if outside else tensor.detach()
    if not entries or not (tensor.dtype.is_floating_point or tensor.dtype.is_complex):
        return UnpackedDualTensor(primal, None)
    known, tangent = state.known(tensor)
    if not known:
        tangent = _jvp(tensor, entries, outside)
        state.remember(tensor, tangent)
    return UnpackedDualTensor(primal, tangent)
