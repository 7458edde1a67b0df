"""In-place shape changes: ``squeeze_``, ``unsqueeze_``, ``t_``, ``transpose_``,
``swapaxes_``, ``swapdims_``, ``as_strided_``, ``resize_`` and ``resize_as_`` (and the deprecated
out-of-place ``resize``/``resize_as``, which only reshape).

PyTorch changes only the tensor's sizes and strides; its memory stays, so the tensor goes on
sharing it with its base (if it is a view), its views, and NumPy (``from_numpy``). Here a
tensor holds its own array (ops/views.py), so a changed tensor whose memory is linked to
another becomes a view, made by the matching view op, of a new tensor object that takes its
old place among those links: writes through either still reach the others. An unlinked
tensor just takes the op's result. In the graph the change is the view op, as PyTorch's
``TBackward``, ``SqueezeBackward``, ....

``resize_`` of a tensor that shares its memory (a view, a base with views, a ``detach()``
alias, NumPy memory) that grows or is not contiguous lays the new shape out C-contiguous
from its storage offset in that memory, as PyTorch's. One that reaches beyond the end of
that memory grows it, as PyTorch grows the shared storage: a new memory holds the old
elements first, and the tensor and the one that held the old memory become views of it.
Differs from PyTorch: that is done only where that memory is a contiguous tensor's own (else
it raises). A ``resize_`` that grows fills the new elements with zeros (PyTorch's are
uninitialised).
"""

from __future__ import annotations

import math
import operator
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from tensorweaver.autograd.mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
)
from tensorweaver.autograd.node import INPLACE_CHANGES, Node, output_changed
from tensorweaver.autograd.view_regeneration import mark_stale
from tensorweaver.ops import creation as cr
from tensorweaver.ops import movement as mv
from tensorweaver.ops import views as vw
from tensorweaver.ops.apply import all_inference, apply, labelled
from tensorweaver.tensor import (
    Tensor,
    _c_strides,
    _root_requires_grad,
    _set_writes_through,
    _writes_through,
    note_shape_change,
)


def _linked(x: Tensor) -> bool:
    """Whether ``x``'s memory is another tensor's or NumPy's too."""
    if x._alias_of is not None or x._view_of is not None or _writes_through(x):
        return True
    return any(entry[0]() is not None for entry in x._views or ())


def _repoint(views: list | None, old: Tensor, new: Tensor) -> list | None:
    """``views`` (a tensor's follow list) with the entry for ``old`` made one for ``new``."""
    if not views:
        return views
    return [(weakref.ref(new), *e[1:]) if e[0]() is old else e for e in views]


def _hand_over(x: Tensor) -> Tensor:
    """A new tensor object over ``x``'s array that takes ``x``'s place in the graph and among
    the tensors ``x`` shares memory with; ``x`` is left unlinked."""
    old = Tensor(x.native, x.backend, x.dtype)
    old._requires_grad, old._node, old._version = x.requires_grad, x._node, x._version
    old._views, x._views = x._views, None
    for entry in old._views or ():
        view = entry[0]()
        if view is None:
            continue
        if view._alias_of is x:
            view._alias_of = old
        if view._view_of is not None and view._view_of[0] is x:
            view._view_of = (old, *view._view_of[1:])
    old._alias_of, old._view_of = x._alias_of, x._view_of
    old._inference = x._inference  # (made in inference_mode or not, it is what x was)
    x._alias_of = x._view_of = None
    for base in (old._alias_of, old._view_of[0] if old._view_of else None):
        if base is not None:
            base._views = _repoint(base._views, x, old)
    if _writes_through(x):
        _set_writes_through(old, True)
        _set_writes_through(x, False)
    return old


def _check_not_view_of_leaf(x: Tensor) -> None:
    """PyTorch's error for an in-place change of a view of a leaf that requires grad (a
    change of the view's values is refused by the base's write-back; a shape change writes
    nothing back, so it is checked here)."""
    if not (x.requires_grad and is_grad_enabled()):
        return
    base = x._view_of[0] if x._view_of is not None else None
    while base is not None:
        if base.requires_grad and base._node is None:
            raise RuntimeError(
                "a view of a leaf Variable that requires grad is being used in an in-place "
                f"operation (a shape change of a view of shape {tuple(x.shape)}); change "
                "the shape of a .clone() of it, or do it under `with tw.no_grad():`"
            )
        base = base._view_of[0] if base._view_of is not None else None


def _change_shape(
    op: str,
    x: Tensor,
    compute: Callable[[Tensor], Tensor],
    view: Callable[[Tensor], Tensor],
    grad_fn: str | None = None,
) -> Tensor:
    """Make ``x`` hold ``compute(x)`` (a movement op), as the view ``view(x)`` of its old
    self where its memory is linked to other tensors; its node is named ``grad_fn``
    (PyTorch's name for the in-place form: ``TBackward1``, not t's ``TBackward0``; none for
    ``resize_``, which records none)."""
    if not (x.requires_grad and x._inference and all_inference((x,))):
        # (PyTorch's autograd, whose checks these are, skips an inference tensor)
        x._check_inplace()  # a leaf that requires grad: PyTorch's error
        _check_not_view_of_leaf(x)
    out = compute(x)
    # (after compute: PyTorch checks the dims first; it makes the change, a no-op too, then
    # refuses it in its version bump)
    refused = x._inference and x._refuses_inference_update()
    if x._node is not None:  # (its version moves: a node that saved x refuses backward, exp's)
        output_changed(x._node, x, x._version, follow=out is x)
    # (a view with a history: PyTorch's changes its version, so its grad_fn is regenerated;
    # under no_grad when next read, as PyTorch's: AsStridedBackward0 over the root base in the
    # view's new geometry, with no edge where the root requires no grad)
    regenerated = (
        x._view_of is not None
        and x._node.__class__ is Node
        and not is_grad_enabled()
        and _READ_BACKS.get(id(x._view_of[0])) is not x._view_of[0]  # (not x's own hand-over)
    )
    if out is x:  # the shape stays
        if refused:
            x._refuse_inference_update(op)
        if grad_fn is not None and x.requires_grad and is_grad_enabled():
            # (PyTorch records the in-place node, a no-op too: TBackward1 of a 1-D tensor)
            x._node = labelled(apply("identity", x.native, x.dtype, (x,)), grad_fn, x)._node
        x._count_on_shared_counter()  # (its base, views and aliases: PyTorch's one counter)
        x._version += 1
        INPLACE_CHANGES[0] += 1
        if regenerated:
            mark_stale(x)
        return x
    old = x
    if x.requires_grad:  # (a graph recorded before may hold x: its backward needs the shape)
        note_shape_change(x)
    if _linked(x):
        x._count_on_shared_counter()  # (before the hand-over cuts x from those it counts with)
        old = _hand_over(x)
        out = view(old)
        base = old if out._view_of is None else out._view_of[0]  # (as_strided: old's base)
        base._views = _repoint(base._views, out, x)
        # (how x was made stays: a view made with grad is no no_grad view for a shape change
        # under no_grad, as PyTorch's creation meta; such a leaf keeps its accumulator)
        made = out._view_of
        x._view_of = made if made is None else (*made[:3], *(old._view_of or ())[3:])
        if out._view_of is None:  # the backend copied: the result shares nothing
            x._views, old._views = old._views, None
    if out._node is not None and grad_fn is not None:
        labelled(out, grad_fn, old)
    x.native, x._shape = out.native, out.shape
    if out._node is not None or is_grad_enabled():
        x._node = out._node
    x._version += 1
    INPLACE_CHANGES[0] += 1
    if refused:
        x._refuse_inference_update(op)
    made = x._view_of
    if made is not None and len(made) > 3 and not is_grad_enabled():
        # (one of several views an op returned, or a view made under no_grad: as a value
        # write through it, PyTorch refuses its later use in autograd)
        if x._node is not None or _root_requires_grad(x):
            x._lose_history(made[3][1])
    elif regenerated:
        mark_stale(x)
    elif old is not x and op != "as_strided_" and x._node.__class__ is Node:
        _base_in_new_geometry(x, old, compute)
    return x


#: The hand-overs :func:`_base_in_new_geometry` gave a node reading their tensor back, by id
#: (a WeakSet cannot hold tensors: ``in`` would compare them elementwise).
_READ_BACKS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _base_in_new_geometry(x: Tensor, old: Tensor, compute: Callable[[Tensor], Tensor]) -> None:
    """After a shape change of ``x``, a tensor with a history and views, under no_grad: its
    views (now of ``old``, which holds its memory in its old shape) reach its history through
    ``x`` in its new shape, as PyTorch regenerates a view over its base as it is now; so the
    engine sums their gradient into the shape ``x``'s node made, or refuses it where it cannot
    (AsStridedBackward0's "invalid gradient"). ``old``'s node: ``x`` read back into the old
    shape (the change again where it is its own inverse, t_ and transpose_; else a reshape)."""
    if is_grad_enabled():
        return
    with enable_grad():
        back = compute(x)
        if back.shape != old.shape:
            back = mv.reshape(x, tuple(old.shape))
    old._node = back._node
    _READ_BACKS[id(old)] = old
    todo = [old]
    earlier = old._view_of[0] if old._view_of is not None else None
    while earlier is not None and _READ_BACKS.get(id(earlier)) is earlier:
        # (an earlier change's hand-over: its read-back went through x's former shape)
        with enable_grad():
            shape, stride = earlier.shape, earlier.stride()
            earlier._node = vw.as_strided(x, shape, stride, earlier.storage_offset())._node
        todo.append(earlier)
        earlier = earlier._view_of[0] if earlier._view_of is not None else None
    while todo:  # (their grad_fn is rebuilt when next read: autograd/view_regeneration.py)
        for entry in todo.pop()._views or ():
            view = entry[0]()
            if view is not None and view is not x and entry[1] is not None:
                if entry[2] is True and view._node.__class__ is Node:
                    mark_stale(view)
                todo.append(view)


def squeeze_(self: Tensor, dim: Any = None) -> Tensor:
    # (PyTorch's three overloads: no dim, one dim, several)
    n = 3 if dim is None else 5 if isinstance(dim, (tuple, list)) else 4
    return _change_shape(
        "squeeze_",
        self,
        lambda x: mv.squeeze(x, dim),
        lambda x: vw.squeeze(x, dim),
        f"SqueezeBackward{n}",
    )


def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    return _change_shape(
        "unsqueeze_",
        self,
        lambda x: mv.unsqueeze(x, dim),
        lambda x: vw.unsqueeze(x, dim),
        "UnsqueezeBackward1",
    )


def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    return _change_shape(
        "transpose_",
        self,
        lambda x: mv.transpose(x, dim0, dim1),
        lambda x: vw.transpose(x, dim0, dim1),
        "TransposeBackward1",
    )


def swapaxes_(self: Tensor, axis0: int, axis1: int) -> Tensor:
    return transpose_(self, axis0, axis1)


swapdims_ = transpose_  # (PyTorch names its arguments dim0, dim1, as transpose_)


def t_(self: Tensor) -> Tensor:
    return _change_shape("t_", self, mv.t, vw.t, "TBackward1")


def as_strided_(self: Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> Tensor:
    """``self`` made ``self.as_strided(size, stride, storage_offset)``: the same memory."""

    def compute(x: Tensor) -> Tensor:
        view = vw.as_strided(x, size, stride, storage_offset)
        out = Tensor(view.native, view.backend, view.dtype)  # no view: x links nothing
        out._node, out._requires_grad = view._node, view.requires_grad
        return out

    return _change_shape(
        "as_strided_",
        self,
        compute,
        lambda x: vw.as_strided(x, size, stride, storage_offset),
        "AsStridedBackward1",
    )


def resize_(self: Tensor, *sizes: Any, memory_format: Any = None) -> Tensor:
    """Give ``self`` the shape ``sizes``: its first elements (row-major) where it had as many
    or more, else all of them followed by zeros."""
    try:
        if any(isinstance(n, bool) for n in _sizes(sizes)):
            raise TypeError
        shape = tuple(operator.index(n) for n in _sizes(sizes))
    except TypeError:
        raise TypeError(
            f"resize_(): sizes must be ints, got {list(_sizes(sizes))} (for a tensor of "
            f"shape {tuple(self.shape)})"
        ) from None
    if any(n < 0 for n in shape):
        raise RuntimeError(
            f"resize_(): sizes must be non-negative, got {list(shape)} "
            f"(for a tensor of shape {tuple(self.shape)})"
        )
    if self._inference and tuple(self.shape) != shape and self._refuses_inference_update():
        # (PyTorch lets a no-op resize_ be; else it resizes, then refuses in its version bump)
        try:
            with inference_mode():
                resize_(self, shape)
        finally:
            self._refuse_inference_update("resize_")
    # (PyTorch's autograd, which refuses, skips an inference tensor and all in inference mode)
    if self.requires_grad and not (self._inference or is_inference_mode_enabled()):
        raise RuntimeError(
            "cannot resize variables that require grad (resize_ of a tensor of shape "
            f"{tuple(self.shape)} to {list(shape)}); resize a .detach()ed copy instead"
        )
    n, have = math.prod(shape), self.numel()
    if tuple(self.shape) != shape and _linked(self) and (n > have or not self.is_contiguous()):
        # PyTorch's resize_ keeps the storage the tensor shares: the new shape, C-contiguous,
        # from the same storage offset, an as_strided_ of that memory. One that outgrows the
        # memory would grow the storage, elements no tensor here holds: refused rather than
        # give other values or lose the link.
        memory = vw.Memory(self)
        if memory.x_strides is not None and memory.start + n <= memory.extent:
            return as_strided_(self, shape, _c_strides(shape), memory.start)
        if _grows(self, shape, memory):
            return self
        raise RuntimeError(
            f"resize_(): resizing a tensor of shape {tuple(self.shape)} to {list(shape)} while "
            "it shares memory with other tensors (a view, a base with views, a detach() alias "
            "or NumPy memory) is supported beyond the end of that memory only where it is the "
            "memory of a contiguous tensor (not part of another's); resize a .clone() instead"
        )
    if n > have:  # new memory, as PyTorch's reallocation
        flat = mv.reshape(self, (have,))
        grown = mv.reshape(mv.cat([flat, cr.zeros(n - have, dtype=self.dtype, device=self)]), shape)
        grown._inference = self._inference  # (self's memory: made in inference_mode or not)
        self.data = grown
        return self
    if tuple(self.shape) == shape:
        return self

    def first(x: Tensor, read: Callable[..., Tensor]) -> Tensor:
        flat = read(x, (have,))
        return read(flat[:n] if n < have else flat, shape)

    return _change_shape(
        "resize_", self, lambda x: first(x, mv.reshape), lambda x: first(x, vw.reshape)
    )


def _grows(x: Tensor, shape: tuple, memory: vw.Memory) -> bool:
    """Whether ``x`` was given the contiguous ``shape``, reaching past the end of its shared
    ``memory``, as PyTorch grows a storage: a new memory holds the old elements first, then
    zeros, and ``x`` (from its storage offset) and the tensor whose memory it was (from the
    start) become views of it, so that each sees the other's later writes. A ``detach()``
    alias stands for the tensor it aliases (its memory, its offset there); a tensor whose
    own memory it is (a base with views) hands that memory over to a new tensor, which its
    views go on seeing. Only where that memory is a contiguous tensor's own (no view's or
    NumPy's, whose memory PyTorch cannot grow either). The growth is no op of the graph: a
    tensor that requires grad keeps its history (a leaf stays one)."""
    source = x
    while source._alias_of is not None and source._view_of is None:
        source = source._alias_of  # (an alias: the memory, and offset, of what it aliases)
    if source is not x:
        memory = vw.Memory(source)
    owner = memory.base
    while True:
        if owner._alias_of is not None and owner._view_of is None:
            owner = owner._alias_of  # (its aliases follow it)
            continue
        whole = None if owner._view_of is None else vw.Memory(owner)
        if whole is None or whole.base is owner or whole.start or whole.extent != owner.numel():
            break
        owner = whole.base  # (a view of all of a tensor's memory, a reshape: that tensor's)
    if not owner.is_contiguous() or owner._view_of is not None or _writes_through(owner):
        return False
    n, extent = math.prod(shape), owner.numel()
    with no_grad():  # (new memory, no op of the graph: a leaf that requires grad stays one)
        old = mv.reshape(owner, (extent,))
        grown = mv.cat([old, cr.zeros(memory.start + n - extent, dtype=x.dtype, device=x)])
    x._count_on_shared_counter()  # (before the hand-over cuts x from those it counts with)
    # (x's old place among its memory's tensors: a tensor no one holds, or, where that
    # memory was x's own, the tensor that now owns it)
    held = _hand_over(x)
    owner = held if owner is x else owner
    for t, view in (
        (x, vw.reshape(vw.narrow(grown, 0, memory.start, n), shape)),
        (owner, vw.reshape(vw.narrow(grown, 0, 0, extent), tuple(owner.shape))),
    ):
        # t becomes that view, in its place among the views of the view's base
        parent = view._view_of[0]
        parent._views = _repoint(parent._views, view, t)
        t.native, t._shape, t._view_of = view.native, view.shape, view._view_of
    x._version += 1
    INPLACE_CHANGES[0] += 1
    return True


def resize_as_(input: Tensor, the_template: Tensor, *, memory_format: Any = None) -> Tensor:
    return resize_(input, tuple(the_template.shape))


def _sizes(sizes: tuple) -> tuple:
    return tuple(sizes[0]) if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)) else sizes


def resize(self: Tensor, *sizes: Any) -> Tensor:
    """PyTorch's deprecated out-of-place ``resize``: a view of ``self`` with the shape
    ``sizes``, which must hold as many elements (differentiable, as ``reshape``)."""
    shape = _sizes(sizes)
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    if math.prod(shape) != self.numel():
        raise RuntimeError(
            f"requested resize to {'x'.join(map(str, shape))} ({math.prod(shape)} elements in "
            f"total), but the given tensor has a size of "
            f"{'x'.join(map(str, self.shape))} ({self.numel()} elements). autograd's resize "
            "can only change the shape of a given tensor, while preserving the number of "
            "elements. Use resize_ on a .detach()ed tensor to change it."
        )
    return vw.reshape(self, shape)


def resize_as(self: Tensor, the_template: Tensor) -> Tensor:
    return resize(self, tuple(the_template.shape))
