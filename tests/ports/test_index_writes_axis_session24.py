"""Corners next to reader A's session-24 findings (tests/ports/test_review_session24_reader_a.py)
that the fixes of index writes, ``axis=`` and unsafe splits touch: each snippet runs on torch
2.13 and on tensorweaver with only the module changed (:mod:`snippet_outcomes`)."""

from __future__ import annotations

from typing import Any, Callable

from snippet_outcomes import grid as _grid
from snippet_outcomes import same_each

Snippet = Callable[[Any], Any]


def _done(x: Any, write: Callable[[Any], Any]) -> Any:
    write(x)
    return x


def _set(x: Any, index: Any, value: Any) -> None:
    x[index] = value


#: Index writes whose values are the written tensor itself, or whose one value PyTorch
#: takes as masked_fill_'s / repeats (no check), or that overlap nothing.
INDEX_WRITES: dict[str, Snippet] = {
    "index_put_itself": lambda m: _done(
        _grid(m, 4), lambda x: x.index_put_((m.tensor([0, 1, 2, 3]),), x)
    ),
    "put_itself": lambda m: _done(_grid(m, 4), lambda x: x.put_(m.tensor([0, 1, 2, 3]), x)),
    "setitem_itself": lambda m: _done(_grid(m, 4), lambda x: _set(x, m.tensor([0, 1, 2, 3]), x)),
    "setitem_whole_slice_itself": lambda m: _done(_grid(m, 4), lambda x: _set(x, slice(None), x)),
    "copy_itself": lambda m: _done(_grid(m, 4), lambda x: x.copy_(x)),
    "index_put_mask_values": lambda m: _done(
        _grid(m, 4), lambda x: x.index_put_((m.tensor([True, False, True, False]),), x[1:3])
    ),
    "index_put_mask_0d_value": lambda m: _done(
        _grid(m, 4), lambda x: x.index_put_((m.tensor([True, False, True, False]),), x[0])
    ),
    "index_put_expanded_value": lambda m: _done(
        _grid(m, 4), lambda x: x.index_put_((m.tensor([1, 2]),), x[0].expand(2))
    ),
    "index_put_apart": lambda m: _done(
        _grid(m, 4), lambda x: x[:2].index_put_((m.tensor([0, 1]),), x[2:])
    ),
    "put_0d_source_count": lambda m: _done(_grid(m, 4), lambda x: x.put_(m.tensor([1, 2]), x[0])),
}


def test_index_writes_as_torch(spec: str) -> None:
    same_each(INDEX_WRITES, spec)


#: axis= for dim= in the function forms, the unsafe splits, and the errors around it.
AXIS: dict[str, Snippet] = {
    "softmax_fn": lambda m: m.softmax(_grid(m, 2, 3), axis=1),
    "log_softmax_fn": lambda m: m.log_softmax(_grid(m, 2, 3), axis=0),
    "softmax_fn_no_dim": lambda m: m.softmax(_grid(m, 2, 3)),
    "functional_softmax_refuses": lambda m: m.nn.functional.softmax(_grid(m, 2, 3), axis=1),
    "squeeze_fn_tuple": lambda m: m.squeeze(_grid(m, 1, 3), axis=(0,)),
    "unsqueeze_fn": lambda m: m.unsqueeze(_grid(m, 3), axis=1),
    "unsqueeze_no_dim": lambda m: _grid(m, 3).unsqueeze(),
    "unsqueeze_both": lambda m: _grid(m, 3).unsqueeze(0, axis=0),
    "unsqueeze_other_keyword": lambda m: _grid(m, 3).unsqueeze(0, keepdims=True),
    "narrow_no_length": lambda m: _grid(m, 2, 3).narrow(1, 0),
    "select_fn": lambda m: m.select(_grid(m, 2, 3), axis=1, index=2),
    "index_select_fn": lambda m: m.index_select(_grid(m, 2, 3), axis=1, index=m.tensor([2, 0])),
    "gather_no_index": lambda m: _grid(m, 2, 3).gather(1),
    "chunk_both": lambda m: _grid(m, 2, 3).chunk(3, 1, axis=1),
    "diff_fn": lambda m: m.diff(_grid(m, 2, 3), axis=0),
    "repeat_interleave_fn": lambda m: m.repeat_interleave(_grid(m, 2, 3), 2, axis=0),
    "renorm_no_maxnorm": lambda m: _grid(m, 2, 3).renorm(2, 0),
    "split_refuses": lambda m: _grid(m, 2, 3).split(1, axis=1),
    "unsafe_chunk": lambda m: _grid(m, 2, 3).unsafe_chunk(3, axis=1),
    "unsafe_split": lambda m: _grid(m, 2, 3).unsafe_split(2, axis=1),
    "unsafe_split_with_sizes": lambda m: _grid(m, 2, 3).unsafe_split_with_sizes([1, 2], axis=1),
}


def test_axis_as_torch(spec: str) -> None:
    same_each(AXIS, spec)


def _names(m: Any, split: Callable[[Any], Any]) -> tuple:
    x = _grid(m, 2, 3).requires_grad_()
    pieces = split(x)
    return tuple(type(p.grad_fn).__name__ for p in pieces)


def test_unsafe_split_names_as_torch(spec: str) -> None:
    splits = {
        "unsafe_chunk_2": lambda x: x.unsafe_chunk(2, 1),
        "unsafe_split_with_sizes_2": lambda x: x.unsafe_split_with_sizes([1, 2], 1),
        "unsafe_split_fn": lambda x: type(x).unsafe_split(x, 1),
        "split_unchanged": lambda x: x.split(1),
        "chunk_unchanged": lambda x: x.chunk(2, 1),
    }
    same_each({k: lambda m, s=s: _names(m, s) for k, s in splits.items()}, spec)
