"""Session 32: a basic index whose last cutting entry is an int, on a tensor that requires
grad (``x[1, 2]``, ``x[:, 1, 0]``, ``x[1:3, 1]``), records PyTorch's chain of nodes, one per
entry that cuts (SelectBackward0 per int, SliceBackward0 per slice), each saving its own
arguments; before, one slice node and a reshape named SelectBackward0 over the leaf. Its
graph, saved arguments, gradients and views against torch 2.13; gradients by finite
differences in float64."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorweaver as tw
from gradcheck import gradcheck
from snippet_outcomes import grid, leaf, same_each, walk

#: name -> the pick of a (4, 3, 2) tensor
PICKS = {
    "x[1, 2]": lambda x: x[1, 2],
    "x[-1, -2]": lambda x: x[-1, -2],
    "x[:, 1, 0]": lambda x: x[:, 1, 0],
    "x[1, 2, 1]": lambda x: x[1, 2, 1],
    "x[1:3, 1]": lambda x: x[1:3, 1],
    "x[::2, -1, :]": lambda x: x[::2, -1, :],
}


def _saved(fn: Any) -> Any:
    """Each select or slice node's saved arguments, down the chain."""
    found = []
    while fn.name() in ("SelectBackward0", "SliceBackward0"):
        if fn.name() == "SelectBackward0":
            found.append((fn._saved_dim, fn._saved_index, fn._saved_self_sym_sizes))
        else:
            found.append((fn._saved_dim, fn._saved_start, fn._saved_end, fn._saved_step))
        fn = fn.next_functions[0][0]
    return found


def _chain(pick: Any) -> Any:
    def run(m: Any) -> Any:
        x = leaf(m, 4, 3, 2)
        y = pick(x * 2)
        fn = y.grad_fn
        graph = walk(fn, 4), _saved(fn)
        (y * grid(m, *y.shape)).sum().backward()
        return graph, x.grad

    return run


def _written(m: Any) -> Any:
    """A write through the pick reaches its base and its graph, as torch's."""
    x = leaf(m, 4, 3, 2)
    base = x * 1
    y = base[1, 2]
    y.mul_(3)
    z = base[2:, -1]
    z.add_(1)
    versions = base._version, y._version, z._version
    graphs = [walk(t.grad_fn, 3) for t in (base, y, z)]
    (base * grid(m, 4, 3, 2)).sum().backward()
    return base, y, z, versions, graphs, x.grad


def _followed(m: Any) -> Any:
    """A pick taken before a write into its base sees it."""
    x = leaf(m, 4, 3, 2)
    base = x * 1
    y = base[1, 2]
    base.mul_(2)
    y.sum().backward()
    return y, x.grad, walk(y.grad_fn, 3)


def _retained(m: Any) -> Any:
    x = leaf(m, 4, 3, 2)
    y = x[3, 0]
    y.retain_grad()
    (y * y).sum().backward()
    return y.grad, x.grad, y.is_leaf


def _under_no_grad(m: Any) -> Any:
    x = leaf(m, 4, 3, 2)
    with m.no_grad():
        y = x[1, 2]
    return y, y.requires_grad, y.grad_fn


PROGRAMS = {
    **{f"chain {k}": _chain(p) for k, p in PICKS.items()},
    "written": _written,
    "followed": _followed,
    "retained": _retained,
    "no_grad": _under_no_grad,
}


def test_an_index_ending_in_an_int_is_torchs_chain(spec: str) -> None:
    same_each(PROGRAMS, spec, decimals=None)


def test_gradients_by_finite_differences() -> None:
    a = np.random.default_rng(0).standard_normal((4, 3, 2))

    def picks(x: Any) -> Any:
        return tw.cat([x[1, 2] * x[-1, -2], x[:, 1, 0] * x[1:3, 1].sum(), x[0, 1, 1:]])

    gradcheck(picks, a)


def _slice_last(m: Any) -> Any:
    x = leaf(m, 4, 3, 2)
    return walk(x[1, 1:].grad_fn, 3), walk(x[1:3, 0, ::2].grad_fn, 4)


def test_an_index_ending_in_a_slice_is_torchs_chain(spec: str) -> None:
    same_each({"slice last": _slice_last}, spec)
