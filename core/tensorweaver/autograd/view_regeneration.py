"""Lazy regeneration of the ``grad_fn`` of views that an in-place write into their base missed.

PyTorch's views share one version counter with their base. A write into the base (or through
another view) moves it for every view, and a view whose recorded version no longer matches
rebuilds its ``grad_fn`` the next time it is read (``VariableHooks::grad_fn``): the view op
replayed over the base's current history (``AsStridedBackward0``), whatever the grad mode of
the write was. Rebuilding each live view at every write costs a view op per view per write
(quadratic in a program that keeps many row views and writes them in turn); so a write only
notes the views it missed here (tensor.py ``_count_apart_write``: a dict entry each), and
:func:`regenerate` rebuilds one when its node is next read: its ``grad_fn``, ``is_leaf``,
``output_nr``, a hook or ``retain_grad`` on it, a backward from it. (PyTorch's in-place check
reads the node as it is: a view of a base that gained a history since is refused as a leaf.)
The readers of a node's inputs (``Node.__init__``'s edges, the engine's roots and inputs)
call autograd/node.py ``regenerate_inputs`` while there is a stale view.
"""

from __future__ import annotations

import weakref
from typing import Any

from tensorweaver.autograd.mode import enable_grad, is_inference_mode_enabled
from tensorweaver.autograd.node import STALE_VIEWS, Node

# STALE_VIEWS (autograd/node.py, which tests it at each node): an entry whose view holds
# another node by then is moot; a view given a rebuilt node by a write that changed it leaves
# (:func:`forget`), so an entry holds no node its view does not.


def _forget(ref: weakref.ref, key: int) -> None:
    entry = STALE_VIEWS.get(key)
    if entry is not None and entry[0] is ref:
        del STALE_VIEWS[key]


def mark_stale(view: Any) -> None:
    """Note that a write into ``view``'s base missed ``view``: its node is rebuilt when next
    needed (one whose history is invalid keeps it: using it raises). The caller skips a view
    noted already with the node it holds (``STALE_VIEWS[id(view)][1] is view._node``): that
    test, inline, is all a write pays for each view it missed again."""
    node = view._node
    if node is not None and node.__class__ is not Node:
        return
    key = id(view)
    STALE_VIEWS[key] = (weakref.ref(view, lambda r, key=key: _forget(r, key)), node)


def forget(view: Any) -> None:
    """``view`` got a rebuilt node otherwise (a write that changed it): not stale."""
    entry = STALE_VIEWS.get(id(view))
    if entry is not None and entry[0]() is view:
        del STALE_VIEWS[id(view)]


def regenerate(view: Any) -> None:
    """Rebuild ``view``'s node if a write missed it since it got it: the view op replayed
    (grad enabled, as PyTorch's) over its root base's current history, named
    ``AsStridedBackward0`` (tensor.py ``_take_view_node``), its ``retain_grad`` moving with it.
    A view with no node of a root that requires no grad keeps none, as PyTorch's. Inside
    ``inference_mode()`` nothing can be recorded: the view stays noted."""
    key = id(view)
    entry = STALE_VIEWS.get(key)
    if entry is None or entry[0]() is not view:
        return
    if is_inference_mode_enabled():
        return
    del STALE_VIEWS[key]
    if view._node is not entry[1] or view._view_of is None:
        return  # (moot: it got another node since, or it is a view no longer)
    base, _, read = view._view_of[:3]
    with enable_grad():
        made = read(base)
    if made._node is None and view._node is None:
        return  # (nothing above it requires grad)
    view._take_view_node(made)
    if made._requires_grad:
        view._requires_grad = True
