"""Session 34: the order in which an index is checked, and several Ellipses, as torch 2.13.

PyTorch counts the dimensions an index reads first (too many: IndexError), then applies its
entries in turn (an int out of range or a float: IndexError; a slice's zero or negative
step: ValueError), and checks index tensors and lists only after all of them. Before, tw
checked every slice's step first (``x[1, 3::-1, 0]`` of a 2-d tensor: ValueError where torch
raises IndexError for too many indices; ``x[9, ::-1]``: ValueError for IndexError). PyTorch
moves on at each Ellipsis by the dimensions no other entry reads, so ``x[..., 1, ...]`` is
``x[:, 1]``; tw refused a second Ellipsis."""

from __future__ import annotations

from typing import Any

import numpy as np
from snippet_outcomes import grid, leaf, same_each, walk

#: name -> an index of a (3, 4) tensor (m: the module, for index tensors)
INDICES = {
    "x[1, 3::-1, 0]": lambda m: (1, slice(3, None, -1), 0),
    "x[::-1, ::-1, ::-1]": lambda m: (slice(None, None, -1),) * 3,
    "x[9, ::-1]": lambda m: (9, slice(None, None, -1)),
    "x[::-1, 9]": lambda m: (slice(None, None, -1), 9),
    "x[-9, ::0]": lambda m: (-9, slice(None, None, 0)),
    "x[1.5, ::-1]": lambda m: (1.5, slice(None, None, -1)),
    "x[::-1, 1.5]": lambda m: (slice(None, None, -1), 1.5),
    "x[tensor(9), ::-1]": lambda m: (m.tensor(9), slice(None, None, -1)),
    "x[int64(9), ::-1]": lambda m: (np.int64(9), slice(None, None, -1)),
    "x[tensor([0, 7]), ::-1]": lambda m: (m.tensor([0, 7]), slice(None, None, -1)),
    "x[[0, 9], ::-1]": lambda m: ([0, 9], slice(None, None, -1)),
    "x[mask(3), ::-1]": lambda m: (m.tensor([True, False, True]), slice(None, None, -1)),
    "x[mask(3, 4), ::-1]": lambda m: (m.ones(3, 4, dtype=m.bool), slice(None, None, -1)),
    "x[None, 9, ::-1]": lambda m: (None, 9, slice(None, None, -1)),
    "x[..., 9, ::-1]": lambda m: (Ellipsis, 9, slice(None, None, -1)),
    "x[..., ...]": lambda m: (Ellipsis, Ellipsis),
    "x[..., 1, ...]": lambda m: (Ellipsis, 1, Ellipsis),
    "x[..., ..., 1]": lambda m: (Ellipsis, Ellipsis, 1),
    "x[..., ..., 0:1]": lambda m: (Ellipsis, Ellipsis, slice(0, 1)),
    "x[..., ..., None]": lambda m: (Ellipsis, Ellipsis, None),
    "x[..., True, ...]": lambda m: (Ellipsis, True, Ellipsis),
    "x[..., tensor([0, 2]), ...]": lambda m: (Ellipsis, m.tensor([0, 2]), Ellipsis),
    "x[1:, ..., ..., ::-1]": lambda m: (slice(1, None), Ellipsis, Ellipsis, slice(None, None, -1)),
}


def _read(index: Any) -> Any:
    def program(m: Any) -> Any:
        x = leaf(m, 3, 4)
        y = x[index(m)]
        (y * grid(m, *y.shape)).sum().backward()
        return y, x.grad

    return program


def _written(index: Any) -> Any:
    def program(m: Any) -> Any:
        x = grid(m, 3, 4)
        x[index(m)] = -1.0
        return x

    return program


def test_index_checks_in_torchs_order(spec: str) -> None:
    programs = {f"{name} read": _read(index) for name, index in INDICES.items()}
    programs.update({f"{name} written": _written(index) for name, index in INDICES.items()})
    same_each(programs, spec, decimals=None)


def test_several_ellipses_of_a_3d_tensor(spec: str) -> None:
    def program(m: Any) -> Any:
        x = grid(m, 2, 3, 4)
        return x[..., None, ...], x[..., 1:, ...], x[0, ..., ..., :], x[..., 1, ...].stride()

    same_each({"several ellipses": program}, spec, decimals=None)


#: name -> an advanced pick of a (3, 4, 5) tensor: IndexBackward0's saved sizes and indices
ADVANCED = {
    "x[t, 1]": lambda m, x: x[m.tensor([0, 2]), 1],
    "x[:, t]": lambda m, x: x[:, m.tensor([0, -1])],
    "x[1:, int32]": lambda m, x: x[1:, m.tensor([0, -1], dtype=m.int32)],
    "x[mask]": lambda m, x: x[m.tensor([True, False, True])],
    "x[:, mask(4, 5)]": lambda m, x: x[:, m.ones(4, 5, dtype=m.bool)],
    "x[uint8]": lambda m, x: x[m.tensor([1, 0, 1], dtype=m.uint8)],
    "x[:, [0, 1], t]": lambda m, x: x[:, [0, 1], m.tensor([0, 2])],
    "x[t, None, t]": lambda m, x: x[m.tensor([0, 2]), None, m.tensor([1, 3])],
    "x[..., t]": lambda m, x: x[..., m.tensor([0, 2])],
    "x[t, ..., t]": lambda m, x: x[m.tensor([0, 2]), ..., m.tensor([1, 3])],
    "x[True, t]": lambda m, x: x[True, m.tensor([1])],
    "x[False, t]": lambda m, x: x[False, m.tensor([1])],
    "x[t, ::2]": lambda m, x: x[m.tensor([0, 2]), ::2],
    "x[t2d]": lambda m, x: x[m.tensor([[0, 1], [2, 0]])],
}


def _index_saved(pick: Any) -> Any:
    def program(m: Any) -> Any:
        x = leaf(m, 3, 4, 5)
        t = m.tensor([1, 0])
        fn = pick(m, x).grad_fn
        given = x[t, 2:].grad_fn._saved_indices[0] is t
        y = pick(m, x)
        y.sum().backward(retain_graph=True)
        kept = y.grad_fn._saved_indices
        y.sum().backward()
        sizes = fn._saved_self_sym_sizes  # (a tuple in torch, not a Size)
        return fn.name(), sizes, type(sizes).__name__, fn._saved_indices, given, kept, y.grad_fn

    return program


def _freed(m: Any) -> Any:
    x = leaf(m, 3, 4, 5)
    y = x[m.tensor([[0, 1], [2, 0]])]
    y.sum().backward()
    return y.grad_fn._saved_self_sym_sizes, y.grad_fn._saved_indices


def test_index_node_saves_torchs_sizes_and_indices(spec: str) -> None:
    programs = {name: _index_saved(pick) for name, pick in ADVANCED.items()}
    programs["freed"] = _freed
    same_each(programs, spec, decimals=None)


#: name -> a pick of a (3, 4, 5) tensor whose create_graph gradient's node torch names
#: SelectBackwardBackward0, SliceBackwardBackward0 or IndexPutImplBackward0
PICKS = {
    "x[1, 1:]": lambda m, x: x[1, 1:],
    "x[:, 1]": lambda m, x: x[:, 1],
    "x[1:]": lambda m, x: x[1:],
    "x[::2]": lambda m, x: x[::2],
    "x[:, 1:3, ::2]": lambda m, x: x[:, 1:3, ::2],
    "x[..., -1]": lambda m, x: x[..., -1],
    "select": lambda m, x: x.select(2, -1),
    "narrow": lambda m, x: x.narrow(1, 1, 2),
    "x[t]": lambda m, x: x[m.tensor([0, 2])],
    "x[1, t]": lambda m, x: x[1, m.tensor([0, 2])],
    "x[mask]": lambda m, x: x[m.tensor([True, False, True])],
}
_DOUBLE_SAVED = (*(f"_saved_{a}" for a in ("dim", "index", "start", "end", "step", "indices")),)


def _double(pick: Any) -> Any:
    def program(m: Any) -> Any:
        x = leaf(m, 3, 4, 5)
        (g,) = m.autograd.grad(pick(m, x).exp().sum(), x, create_graph=True)
        fn = g.grad_fn
        saved = {a: getattr(fn, a) for a in (*_DOUBLE_SAVED, "_saved_accumulate") if hasattr(fn, a)}
        (gg,) = m.autograd.grad((g * grid(m, 3, 4, 5)).sum(), x)
        return walk(fn, 3), saved, g, gg

    return program


def test_create_graph_gradient_nodes_of_picks(spec: str) -> None:
    same_each({name: _double(pick) for name, pick in PICKS.items()}, spec, decimals=None)


def _put(case: str) -> Any:
    def program(m: Any) -> Any:
        value = m.tensor(2.0, dtype=m.float64)
        if case == "uint8 mask, one value":
            x, index = grid(m, 3, 4), (m.tensor([1, 0, 1], dtype=m.uint8),)
        elif case == "uint8 mask, one value, accumulate":
            x, index = grid(m, 3, 4), (m.tensor([1, 0, 1], dtype=m.uint8),)
            return x.index_put_(index, value, accumulate=True)
        elif case == "0-d mask of a 0-d tensor":
            x, index = m.tensor(5.0, dtype=m.float64), (m.tensor(True),)
        elif case == "two 0-d masks of a vector":
            x, index = grid(m, 3), (m.tensor(True), m.tensor(True))
        else:  # a 0-d mask of a matrix: computes
            x, index = grid(m, 3, 4), (m.tensor(True),)
        return x.index_put_(index, value), x.index_put(index, value)

    return program


def test_index_put_refuses_as_torch() -> None:
    """Before: tw wrote where torch refuses a uint8 mask with one value (masked_fill_'s
    RuntimeError) and counts a 0-d mask as an index of a dimension (IndexError)."""
    cases = (
        "uint8 mask, one value",
        "uint8 mask, one value, accumulate",
        "0-d mask of a 0-d tensor",
        "two 0-d masks of a vector",
        "0-d mask of a matrix",
    )
    for spec in ("numpy", "torch:cpu"):
        same_each({case: _put(case) for case in cases}, spec, decimals=None)
