"""``retain_grad()``, hooks and ``grad_fn`` names of a view whose history an in-place change
regenerates (a change of the view, of its base, of a view between), gradients retained across
a shape change (``t_``), and ``resize_`` that grows memory under a tensor requiring grad, each
compared with torch 2.13 running the same program (:mod:`snippet_outcomes`).

torch's grown elements are uninitialised: each program writes them before it reads them.
"""

from __future__ import annotations

from typing import Any

from snippet_outcomes import leaf as _leaf
from snippet_outcomes import same_each, walk

# -- a view's regenerated history ---------------------------------------------------------


def _hooked_view(m: Any, loss_through_view: bool) -> tuple:
    """A hook registered on a view after its in-place change: on its regenerated node, which
    the base's loss does not reach."""
    x = _leaf(m, 2, 3)
    y = x * 1
    v = y[0]
    v.mul_(5)
    seen: list = []
    v.register_hook(lambda g: seen.append(g.clone()))
    ((v * y[0]) if loss_through_view else (y * 2)).sum().backward()
    return seen, x.grad


def _chain(m: Any, change: str, loss: str) -> tuple:
    """``w`` a view of the view ``v`` of ``y``: ``change`` one in place, the loss reading
    ``loss``; each retains its gradient (torch regenerates a view from its root base, so the
    views between are off the regenerated view's path)."""
    x = _leaf(m, 2, 3)
    y = x * 1
    v = y[1:]
    w = v[0, 1:]
    for t in (y, v, w):
        t.retain_grad()
    {"y": y, "v": v, "w": w}[change].mul_(3)
    (lambda t: t * t)({"y": y, "v": v, "w": w}[loss]).sum().backward()
    return y.grad, v.grad, w.grad, x.grad


def _two_backwards(m: Any) -> tuple:
    x = _leaf(m, 4)
    y = x * 2
    v = y[1:3]
    v.retain_grad()
    v.mul_(3)
    (v * v + y[1:3]).sum().backward(retain_graph=True)
    first = v.grad.clone()
    (v * 2).sum().backward()
    return first, v.grad, x.grad


def _base_changed_under_no_grad(m: Any) -> tuple:
    x = _leaf(m, 2, 3)
    y = x * 1
    v = y[0]
    v.retain_grad()
    with m.no_grad():
        y.mul_(2)
    (v * v).sum().backward()
    return v.grad, x.grad


def _saved_output_view(m: Any) -> tuple:
    """exp_ of a view saves its result: backward through the base and the view's new node."""
    x = _leaf(m, 2, 3)
    y = x * 0.1
    v = y[1]
    v.retain_grad()
    v.exp_()
    (y * v.sum()).sum().backward()
    return v.grad, x.grad


def _twice_changed(m: Any) -> tuple:
    x = _leaf(m, 4)
    y = x * 2
    v = y[1:3]
    v.retain_grad()
    v.mul_(3)
    v.add_(1)
    (v * v).sum().backward()
    return v.grad, x.grad, v.retains_grad


def _second_order(m: Any) -> tuple:
    x = _leaf(m, 3)
    y = x * x
    v = y[:2]
    v.retain_grad()
    v.mul_(x[:2])
    (g,) = m.autograd.grad((v * v).sum(), x, create_graph=True)
    g.sum().backward()
    return x.grad, v.grad


REGENERATED = {
    # before: the hook ran (tw's view kept the in-place op's node, on the base's path)
    "hook after the change, loss through the base": lambda m: _hooked_view(m, False),
    "hook after the change, loss through the view": lambda m: _hooked_view(m, True),
    # before: w.grad and v.grad wrong or None (the retention left on a node off the path)
    "chain, w changed, loss y": lambda m: _chain(m, "w", "y"),
    "chain, w changed, loss w": lambda m: _chain(m, "w", "w"),
    "chain, v changed, loss w": lambda m: _chain(m, "v", "w"),
    "chain, y changed, loss w": lambda m: _chain(m, "y", "w"),
    "chain, y changed, loss v": lambda m: _chain(m, "y", "v"),
    "two backwards": _two_backwards,
    "base changed under no_grad": _base_changed_under_no_grad,
    "exp_ of a view": _saved_output_view,
    # matched before: kept as guards of the regenerated node's gradients
    "changed twice": _twice_changed,
    "second order": _second_order,
}


def test_retained_gradients_of_regenerated_views(spec: str) -> None:
    same_each(REGENERATED, spec)


VIEWS = {
    "select": lambda y: y[0],
    "slice": lambda y: y[1:],
    "t": lambda y: y.t(),
    "diagonal": lambda y: y.diagonal(),
    "unfold": lambda y: y.unfold(0, 2, 1),
    "expand": lambda y: y[0:1].expand(3, 4),
    "view": lambda y: y.view(16),
    "narrow": lambda y: y.narrow(0, 0, 2),
    "chain": lambda y: y[1:][0],
}


def _regenerated_names(m: Any, view: Any, changed: str) -> Any:
    """The view's grad_fn after an in-place change of its base (two levels: PyTorch's
    AsStridedBackward0 on the base's new node), or of the view itself (its own name)."""
    x = m.ones(4, 4, dtype=m.float64, requires_grad=True)
    y = x * 1
    v = view(y)
    (y if changed == "base" else v).mul_(2)
    return walk(v.grad_fn, 2) if changed == "base" else type(v.grad_fn).__name__


def test_regenerated_view_names(spec: str) -> None:
    # before: the view op's own name (SliceBackward0, ...), or the in-place op's (MulBackward0)
    same_each(
        {
            f"{name}, {changed} changed": lambda m, f=f, c=changed: _regenerated_names(m, f, c)
            for name, f in VIEWS.items()
            for changed in ("base", "view")
        },
        spec,
    )


def _transposed_retained(m: Any) -> tuple:
    """retain_grad() then t_(): the gradient of the value before the change (its old shape),
    accumulated over two backward passes."""
    x = _leaf(m, 2, 3)
    y = x * 2
    y.retain_grad()
    y.t_()
    (y * y).sum().backward(retain_graph=True)
    (y * 3).sum().backward()
    return y.grad, x.grad


def test_retained_gradient_across_t_(spec: str) -> None:
    # before: RuntimeError (the engine stored it through the size-checked .grad setter)
    same_each({"t_ then two backwards": _transposed_retained}, spec)


def test_hook_registered_before_a_view_changes(spec: str) -> None:
    def hooked(m: Any) -> tuple:
        x = _leaf(m, 2, 3)
        y = x * 1
        v = y[0]
        seen: list = []
        v.register_hook(lambda g: seen.append(g.clone()))
        v.mul_(5)
        (y * 2).sum().backward()
        return seen, x.grad

    same_each({"hook before the change": hooked}, spec)


# -- resize_ growing memory under a tensor that requires grad ----------------------------


def _row_grown(m: Any) -> tuple:
    x = _leaf(m, 2, 3)
    row = x.detach()[1].resize_(8)
    row[3:] = 0.0
    row[0] = -2.0
    (x * x).sum().backward()
    return x, x.grad, x.is_leaf, row


def _data_grown(m: Any) -> tuple:
    x = _leaf(m, 3)
    x.data[1:].resize_(9).fill_(2.0)
    (x * x).sum().backward()
    return x, x.grad


def _grown_then_stepped(m: Any) -> tuple:
    x = _leaf(m, 3)
    alias = x.detach()[1:]
    alias.resize_(6)
    alias[2:] = 0.0
    (x * x).sum().backward()
    with m.no_grad():
        x.sub_(x.grad)
    return x, alias, x.is_leaf, x.requires_grad


def _non_leaf_grown(m: Any) -> tuple:
    x = _leaf(m, 3)
    y = x * 2
    y.detach()[1:].resize_(9).zero_()
    y.mul_(2)
    (y * y).sum().backward()
    return y, x.grad


def _leaf_in_place_refused(m: Any) -> Any:
    x = _leaf(m, 3)
    x.detach()[1:].resize_(9)
    x.mul_(2)


GROWN = {
    # before: RuntimeError (_grows refused memory whose tensor requires grad)
    "a row of a leaf": _row_grown,
    "through .data": _data_grown,
    "then an optimizer-like step": _grown_then_stepped,
    "under a non-leaf, then changed": _non_leaf_grown,
    "leaf still refuses in-place": _leaf_in_place_refused,
}


def test_resize_grows_memory_under_a_tensor_requiring_grad(spec: str) -> None:
    same_each(GROWN, spec)
