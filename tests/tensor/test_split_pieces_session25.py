"""The pieces of split, chunk and unbind and of their unsafe forms, compared with torch 2.13
(:mod:`snippet_outcomes`): a piece used after its base changed in place, the unsafe
pieces' in-place changes (they share the input's memory but not its history nor its version
counter), and the arguments these ops refuse."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from snippet_outcomes import grid as _grid
from snippet_outcomes import same_each

Program = Callable[[Any], Any]

UNSAFE = ("unsafe_split", "unsafe_chunk", "unsafe_split_with_sizes")


def _rows(m: Any, op: str, x: Any) -> tuple:
    """``x`` (2 rows) cut into its rows by the unsafe op ``op``."""
    args = {"unsafe_split": 1, "unsafe_chunk": 2, "unsafe_split_with_sizes": [1, 1]}[op]
    return getattr(m, op)(x, args)


def _name(t: Any) -> Any:
    return None if t.grad_fn is None else t.grad_fn.name()


# -- unsafe pieces changed in place -----------------------------------------------------------


def _piece_changed_with_grad(m: Any, op: str) -> Any:
    a = _grid(m, 2, 3).requires_grad_()
    b = a * 1
    p = _rows(m, op, b)
    p[0].mul_(2)
    of_pieces = m.autograd.grad(p[0].sum() + p[1].sum(), a, retain_graph=True)
    of_base = m.autograd.grad(b.sum(), a)
    return p[0], b, _name(p[0]), _name(b), of_pieces, of_base


def _base_changed_then_piece_used(m: Any, op: str) -> Any:
    a = _grid(m, 2, 3).requires_grad_()
    b = a * 1
    p = _rows(m, op, b)
    b.add_(1)
    y = p[0] * 2
    y.sum().backward()
    return y, _name(p[0]), a.grad


def _versions(m: Any, op: str) -> Any:
    b = _grid(m, 2, 3).requires_grad_() * 1
    p = _rows(m, op, b)
    seen = [(b._version, p[0]._version, p[1]._version)]
    p[0].mul_(2)
    seen.append((b._version, p[0]._version, p[1]._version))
    b.add_(1)
    seen.append((b._version, p[0]._version, p[1]._version))
    return seen


def _saved_piece(m: Any, op: str) -> Any:
    """A node that saved one piece, backward after changes of the input and of another
    piece: torch's counter of the piece sees neither (its gradient reads the new values)."""
    a = _grid(m, 2, 3).requires_grad_()
    b = a * 1
    p = _rows(m, op, b)
    y = p[1] * p[1]
    p[0].mul_(2)
    b.add_(1)
    return m.autograd.grad(y.sum(), a)


def _saved_input(m: Any, op: str) -> Any:
    """A node that saved the input, backward after a change of a piece: torch's counter of
    the input does not see it."""
    a = _grid(m, 2, 3).requires_grad_()
    b = a * 1
    p = _rows(m, op, b)
    z = b * b
    p[1].add_(1)
    return m.autograd.grad(z.sum(), a)


def _leaf_piece(m: Any, op: str) -> Any:
    leaf = m.zeros(2, 3, dtype=m.float64, requires_grad=True)
    p = _rows(m, op, leaf)
    p[0].add_(1)
    return leaf, p[0], _name(p[0]), leaf.is_leaf


def _view_of_piece_written(m: Any, op: str) -> Any:
    a = _grid(m, 2, 3).requires_grad_()
    b = a * 1
    p = _rows(m, op, b)
    p[0][0, 0:2].mul_(10)
    p[0].sum().backward()
    return p[0], b, _name(p[0]), _name(b), a.grad


def _pieces_without_grad(m: Any, op: str) -> Any:
    b = _grid(m, 2, 3).requires_grad_() * 1
    with m.no_grad():
        p = _rows(m, op, b)
    p[0].add_(1)
    return b, p[0], p[0].requires_grad, _name(p[0])


def _pieces_of_a_view(m: Any, op: str) -> Any:
    a = _grid(m, 2, 2, 3).requires_grad_()
    b = a * 1
    p = _rows(m, op, b[1])
    p[1].mul_(-1)
    b.sum().backward()
    return b, p[1], _name(b), a.grad


def _changes_both_ways(m: Any, op: str) -> Any:
    """Changes of pieces and input in turn, then a gradient through both."""
    a = _grid(m, 2, 3).requires_grad_()
    b = a * 1
    p = _rows(m, op, b)
    p[0].mul_(2)
    b.mul_(3)
    p[1].sub_(1)
    p[0].detach().add_(1)  # (an alias of a piece writes into the input too)
    return p[0], p[1], b, m.autograd.grad((p[0] * p[1]).sum() + b.sum(), a)


def _with_each_op(program: Callable[[Any, str], Any]) -> dict[str, Program]:
    return {op: lambda m, op=op: program(m, op) for op in UNSAFE}


@pytest.mark.parametrize(
    "program",
    [
        _piece_changed_with_grad,
        _base_changed_then_piece_used,
        _versions,
        _saved_piece,
        _saved_input,
        _leaf_piece,
        _view_of_piece_written,
        _pieces_without_grad,
        _pieces_of_a_view,
        _changes_both_ways,
    ],
)
def test_unsafe_pieces_share_memory_not_history(spec: str, program: Callable) -> None:
    same_each(_with_each_op(program), spec)


# -- arguments --------------------------------------------------------------------------------

UNSAFE_ARGUMENTS: dict[str, Program] = {
    "split_numpy_int": lambda m: m.unsafe_split(_grid(m, 6), np.int64(2)),
    "split_0d_tensor": lambda m: m.unsafe_split(_grid(m, 6), m.tensor(2)),
    "split_bool": lambda m: m.unsafe_split(_grid(m, 6), True),
    "split_float": lambda m: m.unsafe_split(_grid(m, 6), 2.0),
    "split_list": lambda m: m.unsafe_split(_grid(m, 6), [2, 4]),
    "split_tuple_method": lambda m: _grid(m, 6).unsafe_split((2, 4)),
    "sizes_list": lambda m: m.unsafe_split_with_sizes(_grid(m, 6), [2, 4]),
    "sizes_numpy_items": lambda m: m.unsafe_split_with_sizes(_grid(m, 6), [np.int64(2), 4]),
    "sizes_ndarray": lambda m: m.unsafe_split_with_sizes(_grid(m, 6), np.array([2, 4])),
    "sizes_ndarray_method": lambda m: _grid(m, 6).unsafe_split_with_sizes(np.array([2, 4])),
    "sizes_tensor": lambda m: m.unsafe_split_with_sizes(_grid(m, 6), m.tensor([2, 4])),
    "sizes_generator": lambda m: m.unsafe_split_with_sizes(_grid(m, 6), (k for k in (2, 4))),
    "sizes_int": lambda m: m.unsafe_split_with_sizes(_grid(m, 6), 2),
    "chunk_numpy_int": lambda m: m.unsafe_chunk(_grid(m, 6), np.int64(2)),
    "chunk_bool": lambda m: m.unsafe_chunk(_grid(m, 6), True),
    "chunk_float": lambda m: m.unsafe_chunk(_grid(m, 6), 2.0),
    "chunk_1d_tensor": lambda m: m.unsafe_chunk(_grid(m, 6), m.tensor([2])),
    "split_dim_and_axis": lambda m: m.unsafe_split(_grid(m, 2, 3), 1, dim=0, axis=1),
    "chunk_dim_and_axis": lambda m: m.unsafe_chunk(_grid(m, 2, 3), 2, 0, axis=1),
    "chunk_axis": lambda m: m.unsafe_chunk(_grid(m, 2, 3), 2, axis=1),
    "split_dim_keyword": lambda m: _grid(m, 2, 3).unsafe_split(2, dim=1),
    "chunk_empty_names": lambda m: [
        _name(p) for p in m.unsafe_chunk(m.zeros(0, 2, requires_grad=True) * 1, 2)
    ],
    "split_0d": lambda m: m.unsafe_split(m.tensor(1.0), 1),
}


def test_unsafe_split_arguments(spec: str) -> None:
    same_each(UNSAFE_ARGUMENTS, spec)


# -- a piece used after its base changed in place ---------------------------------------------


def _changed_piece(m: Any, cut: str) -> Any:
    """The first piece of ``cut`` (split, chunk, unbind, or a view taken under no_grad) of a
    tensor with a history, that tensor changed in place after the cut."""
    b = _grid(m, 6).requires_grad_() * 1
    if cut == "no_grad_view":
        with m.no_grad():
            piece = b[0:2]
    else:
        piece = {"split": b.split(2), "chunk": b.chunk(3), "unbind": b.unbind()}[cut][0]
    b.add_(1)
    return piece


CUTS = ("split", "chunk", "unbind", "no_grad_view")

#: Uses that torch refuses (any op that records a node on the piece) ...
REFUSED_USES: dict[str, Callable[[Any, Any], Any]] = {
    "mul_number": lambda m, p: p * 2,
    "mul_tensor": lambda m, p: p * m.ones_like(p),
    "sum": lambda m, p: p.sum(),
    "exp": lambda m, p: p.exp(),
    "clone": lambda m, p: p.clone(),
    "view": lambda m, p: p.view(-1),
    "cat": lambda m, p: m.cat([p.reshape(-1)]),
    "to_float32": lambda m, p: p.float(),
}

#: ... and those it allows (no node: printing, shape, detach, comparisons, no_grad).
ALLOWED_USES: dict[str, Callable[[Any, Any], Any]] = {
    "values": lambda m, p: p.detach(),
    "shape": lambda m, p: p.shape,
    "requires_grad": lambda m, p: p.requires_grad,
    "printed_grad_fn": lambda m, p: repr(p).split("grad_fn=")[-1],
    "tolist": lambda m, p: p.tolist(),
    "eq": lambda m, p: p == 2,
    "same_dtype": lambda m, p: p.double().detach(),
    "under_no_grad": lambda m, p: _without_grad(m, lambda: p * 2),
}


def _without_grad(m: Any, fn: Callable[[], Any]) -> Any:
    with m.no_grad():
        return fn()


def _uses(uses: dict[str, Callable[[Any, Any], Any]]) -> dict[str, Program]:
    return {
        f"{cut}_{name}": lambda m, cut=cut, use=use: use(m, _changed_piece(m, cut))
        for cut in CUTS
        for name, use in uses.items()
    }


def test_piece_used_after_its_base_changed_is_refused(spec: str) -> None:
    same_each(_uses(REFUSED_USES), spec)


def test_piece_after_its_base_changed_allows_what_torch_allows(spec: str) -> None:
    same_each(_uses(ALLOWED_USES), spec)


#: Autograd attributes of such a piece, which torch refuses with the same RuntimeError.
REFUSED_ATTRIBUTES: dict[str, Callable[[Any, Any], Any]] = {
    "is_leaf": lambda m, p: p.is_leaf,
    "retain_grad": lambda m, p: p.retain_grad(),
    "register_hook": lambda m, p: p.register_hook(lambda g: g),
}


def test_autograd_attributes_of_a_piece_after_its_base_changed(spec: str) -> None:
    same_each(_uses(REFUSED_ATTRIBUTES), spec)


#: Ops without a gradient that tw computes through recorded internal steps: torch records
#: nothing, so allows them (a check made where nodes are recorded must not refuse them).
UNRECORDED_USES: dict[str, Callable[[Any, Any], Any]] = {
    "argmax": lambda m, p: p.argmax(),
    "argmin": lambda m, p: p.argmin(),
    "argmax_dim": lambda m, p: p.argmax(-1),
    "bucketize": lambda m, p: m.bucketize(p, m.tensor([2.5, 4.5], dtype=m.float64)),
    "searchsorted": lambda m, p: m.searchsorted(m.tensor([2.5, 4.5], dtype=m.float64), p),
    "allclose": lambda m, p: m.allclose(p, p),
    "isnan": lambda m, p: p.isnan(),
    "nonzero": lambda m, p: p.nonzero(),
}


def test_piece_after_its_base_changed_in_ops_without_gradient(spec: str) -> None:
    same_each(_uses(UNRECORDED_USES), spec)


# -- arguments refused by torch, taken by ops in files of others -----------------------------


def test_tensor_split_dim_and_axis(spec: str) -> None:
    same_each(
        {
            "function": lambda m: m.tensor_split(_grid(m, 2, 3), 2, dim=0, axis=1),
            "positional_dim": lambda m: m.tensor_split(_grid(m, 2, 3), 2, 0, axis=0),
            "method": lambda m: _grid(m, 2, 3).tensor_split(2, dim=0, axis=1),
        },
        spec,
    )


def test_split_with_sizes_of_an_array(spec: str) -> None:
    same_each(
        {
            "ndarray": lambda m: m.split_with_sizes(_grid(m, 6), np.array([2, 4])),
            "ndarray_method": lambda m: _grid(m, 6).split_with_sizes(np.array([2, 4])),
            "tensor_method": lambda m: _grid(m, 6).split_with_sizes(m.tensor([2, 4])),
        },
        spec,
    )


def test_narrow_copy_of_a_bool_length(spec: str) -> None:
    same_each(
        {
            "function": lambda m: m.narrow_copy(_grid(m, 6), 0, 0, True),
            "method": lambda m: _grid(m, 6).narrow_copy(0, 0, True),
        },
        spec,
    )
