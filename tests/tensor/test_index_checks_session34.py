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
import pytest
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


#: Session 35: index kinds as PyTorch converts them (m: the module). Before, a string was an
#: IndexError (torch: TypeError), a float list or array and a 0-d float array an IndexError
#: (torch truncates them to int64 positions), a 0-d int8/int16 tensor an IndexError (torch
#: reads it as an int), a NumPy bool scalar a new axis (torch: IndexError).
KINDS = {
    "str": lambda m: "a",
    "bytes": lambda m: b"a",
    "list with str": lambda m: [0, "a"],
    "complex list": lambda m: [1j],
    "dict": lambda m: {0: 1},
    "object": lambda m: object(),
    "set": lambda m: {0, 1},
    "float": lambda m: 1.5,
    "float list": lambda m: [1.7, -1.2],
    "nested float list": lambda m: [[0, 1.5]],
    "bool and float list": lambda m: [True, 0.5],
    "nan list": lambda m: [float("nan")],
    "bool list": lambda m: [True, False, True],
    "short bool list": lambda m: [True, False],
    "float array": lambda m: np.array([1.5, -1.0]),
    "0-d float array": lambda m: np.array(1.7),
    "0-d bool array": lambda m: np.array(True),
    "bool array": lambda m: np.array([True, False, True]),
    "int8 array": lambda m: np.array([1, 0], dtype=np.int8),
    "NumPy float": lambda m: np.float64(1.0),
    "NumPy bool": lambda m: np.bool_(True),
    "range": lambda m: range(2),
    **{
        f"0-d {name}": (lambda m, name=name: m.tensor(1, dtype=getattr(m, name)))
        for name in ("int8", "int16", "int32", "uint8", "bool", "float32")
    },
    "0-d int16, int": lambda m: (m.tensor(-1, dtype=m.int16), 1),
    "1-d int8": lambda m: m.tensor([1, 0], dtype=m.int8),
}


def _kind_read(kind: Any) -> Any:
    def program(m: Any) -> Any:
        x = leaf(m, 3, 4)
        y = x[kind(m)]
        (y * grid(m, *y.shape)).sum().backward()
        return y, x.grad

    return program


def _kind_written(kind: Any) -> Any:
    def program(m: Any) -> Any:
        x = grid(m, 3, 4)
        x[kind(m)] = -1.0
        return x

    return program


def test_index_kinds_as_torch_converts_them(spec: str) -> None:
    programs = {f"{name} read": _kind_read(kind) for name, kind in KINDS.items()}
    programs.update({f"{name} written": _kind_written(kind) for name, kind in KINDS.items()})
    same_each(programs, spec, decimals=None)


def _put_kind(case: str) -> Any:
    def program(m: Any) -> Any:
        x, value = grid(m, 3, 4), m.tensor(2.0, dtype=m.float64)
        index = {
            "no index": (),
            "0-d int8": (m.tensor(1, dtype=m.int8),),
            "1-d int16": (m.tensor([1], dtype=m.int16),),
            "int32": (m.tensor([1, -1], dtype=m.int32),),
        }[case]
        return x.index_put_(index, value)

    return program


def _take_along_flat(case: str) -> Any:
    def program(m: Any) -> Any:
        x = leaf(m, 3, 4)
        index = m.tensor([[0, 5], [11, 5]])
        y = {
            "contiguous": lambda: m.take_along_dim(x, index),
            "transposed input": lambda: m.take_along_dim(x.t(), index),
            "transposed indices": lambda: m.take_along_dim(x, index.t()),
        }[case]()
        y.sum().backward()
        return y, walk(y.grad_fn, 3), x.grad

    return program


def test_index_put_and_take_along_dim_as_torch(spec: str) -> None:
    """Before: ``index_put_(())`` wrote every element and a 0-d int8 index read as an int
    (torch: RuntimeError, IndexError); ``take_along_dim`` without dim flattened a
    non-contiguous input or indices, which torch's ``view(-1)`` refuses."""
    programs = {f"index_put_ {c}": _put_kind(c) for c in ("no index", "0-d int8", "1-d int16")}
    programs["index_put_ int32"] = _put_kind("int32")
    programs.update(
        {
            f"take_along_dim {c}": _take_along_flat(c)
            for c in ("contiguous", "transposed input", "transposed indices")
        }
    )
    same_each(programs, spec, decimals=None)


def _packed(pick: Any, raw: bool = False) -> Any:
    def program(m: Any) -> Any:
        x, packed = leaf(m, 3, 4, 5), []

        def pack(t: Any) -> Any:
            packed.append((tuple(t.shape), t.dtype))
            return t

        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = pick(m, x)
        (y * grid(m, *y.shape)).sum().backward()
        return (len(y.grad_fn._raw_saved_indices),) if raw else (packed, x.grad)

    return program


#: name -> an advanced pick of a (3, 4, 5) tensor whose index tensors torch's node packs
PACKED = {
    "list": lambda m, x: x[[0, 2]],
    "None, t": lambda m, x: x[None, m.tensor([0, 2])],
    "True, t": lambda m, x: x[True, m.tensor([1])],
    ":, [0, 1], t": lambda m, x: x[:, [0, 1], m.tensor([0, 2])],
    "array": lambda m, x: x[np.array([0, 2])],
    "mask, t": lambda m, x: x[m.tensor([True, False, True]), m.tensor([1, 3])],
}


def _unpacked_flipped(pick: Any) -> Any:
    def program(m: Any) -> Any:
        x = leaf(m, 3, 4, 5)

        def unpack(t: Any) -> Any:
            return t.flip(0) if t.dtype == m.int64 else t

        with m.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
            y = pick(m, x)
        (y * grid(m, *y.shape)).sum().backward()
        return x.grad

    return program


def test_index_node_packs_as_torch(spec: str) -> None:
    """Before: IndexBackward0 packed only the index tensors given as tensors with a shape:
    not a list's or array's tensor, nor a bool's new-axis positions (torch packs each), and
    backward read the list, not what unpack gave for its tensor."""
    programs = {name: _packed(pick) for name, pick in PACKED.items()}
    unpacked = ("list", "True, t", ":, [0, 1], t", "mask, t")
    programs.update({f"{n} unpacked": _unpacked_flipped(PACKED[n]) for n in unpacked})
    same_each(programs, spec, decimals=None)


def test_index_node_raw_saved_indices(spec: str) -> None:
    same_each({name: _packed(pick, raw=True) for name, pick in PACKED.items()}, spec)


def _double_2d(m: Any) -> Any:
    x = leaf(m, 3, 4, 5)
    (g,) = m.autograd.grad(x[m.tensor([[0, 1], [2, 0]])].exp().sum(), x, create_graph=True)
    return walk(g.grad_fn, 3)


@pytest.mark.xfail(
    strict=True,
    reason="x[t] of a 2-d t: the create_graph gradient is ScatterAddBackward0 over "
    "ViewBackward0 where PyTorch's is one IndexPutImplBackward0 over the incoming gradient. "
    "Cause: ops/index.py _advanced labels the reshape after the take IndexBackward0, so the "
    "take node's rule (autograd/gradients.py _take) sees no label and g arrives reshaped. "
    "Fix: in _take, where the take's consumer is that labelled reshape (note it on the take "
    "node in _advanced), reshape g without recording and label the scatter "
    "IndexPutImplBackward0 with the reshape's incoming gradient as its input",
)
def test_index_2d_double_backward_node(spec: str) -> None:
    same_each({"2-d index double backward": _double_2d}, spec, decimals=None)


def _int8_pick_written(m: Any) -> Any:
    x = grid(m, 3, 4)
    y = x[m.tensor(1, dtype=m.int8)]
    y.mul_(2)
    return x, y, y._base is x


def test_int8_pick_is_a_view(spec: str) -> None:
    same_each({"0-d int8 pick written": _int8_pick_written}, spec, decimals=None)


def _fill_negative(m: Any) -> Any:
    x, value = leaf(m, 3, 4), m.tensor(3.0, dtype=m.float64, requires_grad=True)
    x.index_fill(1, m.tensor([1, -1]), value).sum().backward()
    return x.grad, value.grad


def test_index_fill_negative_index_value_gradient(spec: str) -> None:
    same_each({"index_fill negative, value grad": _fill_negative}, spec, decimals=None)
