"""View ops that leave their input's shape and order as they are (``expand`` to the same
shape, ``transpose(d, d)``, an identity ``permute``/``movedim``, ``t()`` of a 0-d or 1-d
tensor, ``squeeze`` of no size-1 dim), each compared with torch 2.13 running the same
program (:mod:`snippet_outcomes`): a new view tensor with a node of its own, PyTorch's name
for it, writes that reach the base, and gradients through it.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import pytest
from snippet_outcomes import grid as _grid
from snippet_outcomes import leaf as _leaf
from snippet_outcomes import same_each, walk

#: Each no-op view, by the rank of the tensor it is taken of.
_VIEWS: dict[str, tuple[int, Callable[[Any, Any], Any]]] = {
    "torch_t": (1, lambda m, x: m.t(x)),
    "t_of_0d": (0, lambda m, x: x.t()),
    "transpose_of_0d": (0, lambda m, x: x.transpose(0, -1)),
    "torch_transpose": (2, lambda m, x: m.transpose(x, -1, 1)),
    "swapdims": (2, lambda m, x: x.swapdims(0, -2)),
    "permute_of_1d": (1, lambda m, x: x.permute(0)),
    "permute_of_0d": (0, lambda m, x: x.permute(())),
    "torch_permute": (2, lambda m, x: m.permute(x, (0, 1))),
    "moveaxis": (2, lambda m, x: x.moveaxis(0, 0)),
    "movedim_lists": (2, lambda m, x: m.movedim(x, (0, 1), (0, 1))),
    "expand_of_0d": (0, lambda m, x: x.expand(())),
    "torch_broadcast_to": (2, lambda m, x: m.broadcast_to(x, (2, 2))),
    "squeeze_of_0d": (0, lambda m, x: x.squeeze()),
    "squeeze_dim_of_0d": (0, lambda m, x: x.squeeze(0)),
    "squeeze_dims_of_0d": (0, lambda m, x: x.squeeze((0,))),
    "torch_squeeze_dim": (2, lambda m, x: m.squeeze(x, -1)),
}


def _of(m: Any, view: str, x: Any) -> Any:
    return _VIEWS[view][1](m, x)


def _shape(view: str) -> tuple:
    return (2,) * _VIEWS[view][0]


def _graph(m: Any, view: str) -> Any:
    """Its node (and that node's edges), and the gradients through it, its own and its
    base's, where the base has another use too."""
    x = _leaf(m, *_shape(view))
    b = x * 1
    y = _of(m, view, b)
    y.retain_grad()
    (y * 2 + b).sum().backward()
    return y is b, walk(y.grad_fn, 2), y.is_leaf, y.grad, x.grad


def _write_through(m: Any, view: str) -> Any:
    """A write through it reaches its base (and bumps the one version they share); a later
    change of the base reaches it."""
    b = _grid(m, *_shape(view))
    y = _of(m, view, b)
    y.mul_(10)
    seen = b.clone(), b._version, y._version
    b.add_(1)
    return seen, y, y._version


def _own_flags(m: Any, view: str) -> Any:
    """Its flags are its own: ``requires_grad_()`` and ``.data =`` leave the base alone."""
    b = _grid(m, *_shape(view))
    y = _of(m, view, b)
    y.requires_grad_()
    c = _grid(m, *_shape(view))
    z = _of(m, view, c)
    z.data = m.zeros_like(z)
    return b.requires_grad, y.requires_grad, y.is_leaf, c, z


def _made_under_no_grad(m: Any, view: str) -> Any:
    """Made under no_grad of a leaf that requires grad: PyTorch's refusal of an in-place
    change of it with grad enabled."""
    x = _leaf(m, *_shape(view))
    with m.no_grad():
        y = _of(m, view, x)
    try:
        y.mul_(2)
    except RuntimeError as e:
        return "refused", "no_grad mode" in str(e), y.requires_grad
    return "written", x


@pytest.mark.parametrize(
    "check", [_graph, _write_through, _own_flags, _made_under_no_grad], ids=lambda f: f.__name__
)
def test_no_op_views_as_torch(spec: str, check: Callable) -> None:
    same_each({view: partial(check, view=view) for view in _VIEWS}, spec)


def _write_into_unfolded(m: Any, view: Callable[[Any], Any]) -> Any:
    b = _leaf(m, 2, 4) * 1
    u = b.unfold(0, 1, 2)
    v = view(u)
    v[0] = m.full(v[0].shape, 7.0, dtype=m.float64)
    b.sum().backward()
    return b, u


def test_writes_through_a_no_op_view_of_an_unfold(spec: str) -> None:
    # (the write-back of a view of unfold's own array once refused as copy_'s overlap)
    same_each(
        {
            name: partial(_write_into_unfolded, view=view)
            for name, view in (
                ("view_same_shape", lambda u: u.view(u.shape)),
                ("permute_identity", lambda u: u.permute(0, 1, 2)),
                ("transpose_d_d", lambda u: u.transpose(2, 2)),
                ("expand_same", lambda u: u.expand(u.shape)),
            )
        },
        spec,
    )


def _copy_that_changes_nothing(m: Any, op: Callable[[Any], Any], rank: int) -> Any:
    """A flip of no dims or a roll by whole turns is a new tensor (not a view), as
    PyTorch's: an in-place change of it leaves its input alone."""
    b = _leaf(m, *(2,) * rank) * 1
    y = op(b)
    name = walk(y.grad_fn, 1)
    y.add_(1)
    (y * b).sum().backward()
    return y is b, name, b


@pytest.mark.parametrize("rank", [0, 2])
def test_copies_that_change_nothing(spec: str, rank: int) -> None:
    same_each(
        {
            name: partial(_copy_that_changes_nothing, op=op, rank=rank)
            for name, op in (
                ("flip_no_dims", lambda t: t.flip(())),
                ("flip_of_0d", lambda t: t.flip(0) if t.ndim == 0 else t.flip([])),
                ("roll_by_zero", lambda t: t.roll(0, 0) if t.ndim else t.roll(0)),
                ("roll_whole_turn", lambda t: t.roll(2, 0) if t.ndim else t.roll(1)),
                ("roll_flat_whole_turn", lambda t: t.roll(t.numel())),
            )
        },
        spec,
    )


def _broadcast_tensors(m: Any) -> Any:
    x = _leaf(m, 2) * 1
    y, z = _grid(m, 2), _grid(m, 3, 2)
    a, b, c = m.broadcast_tensors(x, y, z)
    return a is x, b is y, c is z, walk(a.grad_fn, 1)


def test_broadcast_tensors_returns_inputs_of_the_shape(spec: str) -> None:
    same_each({"broadcast_tensors": _broadcast_tensors}, spec)
