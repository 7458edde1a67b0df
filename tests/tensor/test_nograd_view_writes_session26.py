"""In-place writes into views PyTorch cannot record a history for (made under ``no_grad``, or
one of several views ``split``/``chunk``/``unbind`` return, and views of those) of a base
that does not require grad: refused only where the write would give the view a history
(the written value requires grad, or the view does), each compared with torch 2.13 running
the same program (:mod:`snippet_outcomes`), error messages included.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

import pytest
from snippet_outcomes import grid, leaf, same_each


def _outcome(m: Any, base: Callable, view: Callable, write: Callable) -> Any:
    """The base, the view's flag and the leaf's gradient after ``write(m, v, w)`` into the view
    ``v = view(m, b)`` of ``b = base(m)`` and a backward through the base, or the error's
    message where the write or the backward raises."""
    w = leaf(m, 2)
    b = base(m)
    v = view(m, b)
    try:
        write(m, v, w)
        flag = v.requires_grad
        if b.requires_grad:
            (b * grid(m, *b.shape)).sum().backward()
    except RuntimeError as e:  # (the refusals' words; another error's class)
        return str(e) if "view" in str(e) else "RuntimeError"
    return b, flag, w.grad


def _zeros(m: Any) -> Any:
    return m.zeros(4, 2, dtype=m.float64)


def _no_grad(m: Any, b: Any, take: Callable = lambda b: b[0]) -> Any:
    with m.no_grad():
        return take(b)


VIEWS: dict[str, Callable] = {
    "no_grad_row": _no_grad,
    "no_grad_row_of_flat": partial(_no_grad, take=lambda b: b.view(8)[2:4]),
    "view_of_no_grad_row": lambda m, b: _no_grad(m, b)[0:2],
    "no_grad_split_row": lambda m, b: _no_grad(m, b, lambda b: b.split(2)[1])[0],
    "split_row": lambda m, b: b.split(2)[1][0],
    "chunk_row": lambda m, b: b.chunk(2)[0][1],
    "unbind": lambda m, b: b.unbind()[2],
    "view_of_unbind": lambda m, b: b.unbind()[2][0:2],
    "split_of_no_grad_row": lambda m, b: _no_grad(m, b).split(2)[0],
    "detach_row": lambda m, b: b.detach()[1],
    "row": lambda m, b: b[1],
}

WRITES: dict[str, Callable] = {
    "copy_": lambda m, v, w: v.copy_(w),
    "add_": lambda m, v, w: v.add_(w),
    "addcmul_": lambda m, v, w: v.addcmul_(w, w),
    "setitem": lambda m, v, w: v.__setitem__(0, w[1]),
    "mul_2": lambda m, v, w: v.mul_(2),
    "add_plain": lambda m, v, w: v.add_(w.detach()),
    "copy_no_grad": lambda m, v, w: _under_no_grad(m, lambda: v.copy_(w)),
}


def _under_no_grad(m: Any, write: Callable) -> None:
    with m.no_grad():
        write()


def test_writes_into_views_of_a_base_without_grad(spec: str) -> None:
    same_each(
        {
            f"{view}_{write}": partial(_outcome, base=_zeros, view=VIEWS[view], write=WRITES[write])
            for view in VIEWS
            for write in WRITES
        },
        spec,
    )


def _leaf_view(m: Any) -> Any:
    """A leaf that requires grad, itself a view of a tensor that does not."""
    return _zeros(m)[1:3].requires_grad_()


def _inference(m: Any) -> Any:
    with m.inference_mode():
        return _zeros(m)


def _graph(m: Any) -> Any:
    return leaf(m, 4, 2) * 1


@pytest.mark.parametrize("write", ["copy_", "mul_2", "add_plain"])
def test_writes_into_no_grad_views_of_other_bases(spec: str, write: str) -> None:
    """A leaf that is a view of a base without grad (its view under no_grad does not require
    grad), a base with a graph (its view under no_grad does), an inference tensor (its pieces
    are no views for autograd), an integer base."""
    same_each(
        {
            "leaf_view": partial(_outcome, base=_leaf_view, view=_no_grad, write=WRITES[write]),
            "graph": partial(_outcome, base=_graph, view=_no_grad, write=WRITES[write]),
            "inference_piece": partial(
                _outcome, base=_inference, view=lambda m, b: b.unbind()[1], write=WRITES[write]
            ),
            "int": partial(
                _outcome,
                base=lambda m: m.zeros(4, 2, dtype=m.int64),
                view=_no_grad,
                write=WRITES[write],
            ),
        },
        spec,
    )


def _base_changed(m: Any, view: Callable) -> Any:
    """The view's use in autograd after its base took a value that requires grad."""
    b = _zeros(m)
    v = view(m, b)
    b.copy_(leaf(m, 4, 2))
    try:
        return (v * 2).sum(), v.requires_grad
    except RuntimeError as e:
        return str(e)


def test_use_after_the_base_took_a_history(spec: str) -> None:
    same_each({name: partial(_base_changed, view=VIEWS[name]) for name in VIEWS}, spec)
