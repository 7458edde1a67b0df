"""Index ops' result layouts and graphs, compared with torch 2.13 (:mod:`snippet_outcomes`):
``masked_fill``, ``index_reduce`` and ``gather`` lay their results out contiguously whatever
the input's (or the index's) layout, ``put`` and ``index_put`` as their input
(``preserve_format``); ``put``/``index_put`` (in place too) and ``index_reduce`` show torch's
one node with edges to the input and the source, and ``x[True]`` / ``x[None, i]`` index an
``UnsqueezeBackward0``. Values and gradients are compared alongside."""

from __future__ import annotations

from functools import partial
from typing import Any, Callable

from snippet_outcomes import grid, leaf, same_each, walk

Program = Callable[[Any], Any]


def _t(m: Any) -> Any:
    """A (3, 4) tensor with strides (1, 3)."""
    return grid(m, 4, 3).t()


def _laid(t: Any) -> tuple:
    return t, t.stride()


def _stepped(m: Any) -> Any:
    """A (3, 2) tensor with strides (1, 6) (of a permuted, stepped base)."""
    return grid(m, 4, 3)[::2].t()


LAYOUTS: dict[str, Program] = {
    "masked_fill_number": lambda m: _laid(_t(m).masked_fill(_t(m) > 3, 0.0)),
    "masked_fill_tensor": lambda m: _laid(_t(m).masked_fill(_t(m) > 3, m.tensor(-1.0))),
    "masked_fill_int": lambda m: _laid(_t(m).long().masked_fill(_t(m) > 3, 7)),
    "masked_fill_broadcast_mask": lambda m: _laid(
        _t(m).masked_fill(m.tensor([True, False, True, False]), 2.0)
    ),
    "masked_fill_row": lambda m: _laid(grid(m, 3, 1).t().masked_fill(m.tensor(True), 1.0)),
    "masked_fill_contiguous": lambda m: _laid(grid(m, 3, 4).masked_fill(grid(m, 3, 4) > 5, 0.0)),
    "index_reduce_prod": lambda m: _laid(
        _t(m).index_reduce(0, m.tensor([0, 2]), grid(m, 2, 4), "prod")
    ),
    "index_reduce_amax_dim1": lambda m: _laid(
        _t(m).index_reduce(1, m.tensor([3, 0]), grid(m, 3, 2), "amax", include_self=False)
    ),
    "index_reduce_mean_empty": lambda m: _laid(
        _t(m).index_reduce(0, m.tensor([], dtype=m.int64), grid(m, 0, 4), "mean")
    ),
    "put": lambda m: _laid(_t(m).put(m.tensor([0, 3]), grid(m, 2))),
    "put_accumulate": lambda m: _laid(_t(m).put(m.tensor([0, -1]), grid(m, 2), accumulate=True)),
    "put_stepped": lambda m: _laid(_stepped(m).put(m.tensor([1]), grid(m, 1))),
    "put_contiguous": lambda m: _laid(grid(m, 3, 4).put(m.tensor([1]), grid(m, 1))),
    "index_put": lambda m: _laid(_t(m).index_put((m.tensor([0, 2]),), grid(m, 4))),
    "index_put_accumulate": lambda m: _laid(
        _t(m).index_put((m.tensor([0, 0]), m.tensor([1, 1])), grid(m, 2), accumulate=True)
    ),
    "index_put_stepped": lambda m: _laid(_stepped(m).index_put((m.tensor([2]),), grid(m, 2))),
    "index_put_3d_permuted": lambda m: _laid(
        grid(m, 2, 3, 4).permute(2, 0, 1).index_put((m.tensor([1]),), grid(m, 3))
    ),
    "gather_transposed_index": lambda m: _laid(
        grid(m, 3, 4).gather(0, m.tensor([[0, 1, 2], [2, 1, 0], [1, 1, 1], [0, 0, 0]]).t())
    ),
    "gather_0d": lambda m: _laid(m.tensor(2.0).gather(0, m.tensor(0))),
    "gather_transposed_input": lambda m: _laid(_t(m).gather(1, m.tensor([[0, 3], [1, 1], [2, 0]]))),
    "take_along_dim_transposed_index": lambda m: _laid(
        m.take_along_dim(grid(m, 3, 4), m.tensor([[0, 1, 2], [2, 1, 0]]).t(), 1)
    ),
}


def test_index_result_layouts(spec: str) -> None:
    same_each(LAYOUTS, spec)


def _graph_and_grads(m: Any, op: Callable[[Any, Any, Any], Any], shape: tuple) -> tuple:
    x, src = leaf(m, 3, 4), leaf(m, *shape)
    out = op(m, x / 7, src)
    (out * grid(m, *out.shape)).sum().backward()
    return walk(out.grad_fn, 2), x.grad, src.grad


GRAPHS: dict[str, Program] = {
    "put": lambda m: _graph_and_grads(m, lambda m, y, s: y.put(m.tensor([0, 5]), s), (2,)),
    "put_accumulate": lambda m: _graph_and_grads(
        m, lambda m, y, s: y.put(m.tensor([0, 0]), s, accumulate=True), (2,)
    ),
    "put_in_place": lambda m: _graph_and_grads(
        m, lambda m, y, s: (y * 1).put_(m.tensor([-1, 5]), s), (2,)
    ),
    "index_put": lambda m: _graph_and_grads(
        m, lambda m, y, s: y.index_put((m.tensor([0, 2]),), s), (4,)
    ),
    "index_put_accumulate": lambda m: _graph_and_grads(
        m, lambda m, y, s: y.index_put((m.tensor([1, 1]), m.tensor([0, 3])), s, True), (2,)
    ),
    "index_put_in_place": lambda m: _graph_and_grads(
        m, lambda m, y, s: (y * 1).index_put_((m.tensor([0, 2]),), s), (1, 4)
    ),
    "index_reduce_prod": lambda m: _graph_and_grads(
        m, lambda m, y, s: y.index_reduce(0, m.tensor([0, 2]), s, "prod"), (2, 4)
    ),
    "index_reduce_mean": lambda m: _graph_and_grads(
        m,
        lambda m, y, s: y.index_reduce(1, m.tensor([1, 1]), s, "mean", include_self=False),
        (3, 2),
    ),
    "getitem_0d_true": lambda m: _graph_and_grads(m, lambda m, y, s: y[m.tensor(True)] * s, (1,)),
    "getitem_true": lambda m: _graph_and_grads(m, lambda m, y, s: y[True] * s, (1,)),
    "getitem_none_list": lambda m: _graph_and_grads(m, lambda m, y, s: y[None, [0, 2]] * s, (1,)),
    "getitem_list_none": lambda m: _graph_and_grads(m, lambda m, y, s: y[[0, 2], None] * s, (1,)),
}


def test_index_write_graphs(spec: str) -> None:
    same_each(GRAPHS, spec)


def _hooked(m: Any, make: Callable[[Any, Any, Any], Any]) -> tuple:
    """What a hook on the op's node sees (its gradients in and out), and the leaves' grads."""
    x, src = leaf(m, 3, 4), leaf(m, 2)
    out = make(m, x * 2, src)
    seen = []
    out.grad_fn.register_hook(lambda gi, go: seen.append((gi, go)))
    (out * grid(m, 3, 4)).sum().backward()
    return seen, x.grad, src.grad


def test_hooks_on_put_nodes(spec: str) -> None:
    same_each(
        {
            "put": lambda m: _hooked(m, lambda m, y, s: y.put(m.tensor([0, 5]), s)),
            "index_put": lambda m: _hooked(
                m, lambda m, y, s: y.index_put((m.tensor([0, 2]), m.tensor([1, 1])), s)
            ),
        },
        spec,
    )


def _in_place(m: Any, write: Callable[[Any], Any]) -> tuple:
    """An in-place index write into a transposed tensor: it keeps its layout, as torch's."""
    t = _t(m)
    write(t)
    return t, t.stride()


def test_in_place_index_writes_keep_the_layout(spec: str) -> None:
    same_each(
        {
            "masked_fill_": lambda m: _in_place(m, lambda t: t.masked_fill_(t > 3, 0.0)),
            "setitem_mask": lambda m: _in_place(m, lambda t: t.__setitem__(t > 3, -1.0)),
            "index_reduce_": lambda m: _in_place(
                m, lambda t: t.index_reduce_(0, m.tensor([0, 2]), grid(m, 2, 4), "prod")
            ),
            "index_put_": lambda m: _in_place(
                m, lambda t: t.index_put_((m.tensor([2]),), grid(m, 4))
            ),
            "put_": lambda m: _in_place(m, lambda t: t.put_(m.tensor([1, 4]), grid(m, 2))),
        },
        spec,
    )


def _through_a_view(m: Any, kind: str) -> tuple:
    """A write into a row of a non-leaf: the base's and the row's graphs, grads, layout."""
    x, s = leaf(m, 3, 4), leaf(m, 2)
    b = x * 1
    row = b[1]
    if kind == "put_":
        row.put_(m.tensor([0, 3]), s)
    elif kind == "index_put_":
        row.index_put_((m.tensor([0, 3]),), s)
    elif kind == "index_put_accumulate":
        row.index_put_((m.tensor([0, 0]),), s, accumulate=True)
    else:  # put_ into a transposed view
        b.t().put_(m.tensor([0, 3]), s)
    (b * grid(m, 3, 4)).sum().backward()
    return walk(b.grad_fn, 3), walk(row.grad_fn, 3), x.grad, s.grad, b.stride()


def test_index_writes_through_views(spec: str) -> None:
    same_each(
        {
            kind: partial(_through_a_view, kind=kind)
            for kind in ("put_", "index_put_", "index_put_accumulate", "transposed_put_")
        },
        spec,
    )
