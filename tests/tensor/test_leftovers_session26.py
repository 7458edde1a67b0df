"""Corners of the session-26 leftovers, each program run on torch 2.13 and on tensorweaver
(:mod:`snippet_outcomes`): running ops of a 0-d tensor make a new tensor with torch's node,
``searchsorted``/``bucketize`` results are C-ordered whatever the operands' layouts,
``embedding`` of any index ends in torch's one node, and ``embedding_bag`` refuses backward
once an operand its node saves changed in place."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import grid, leaf, refused_in_place, same_each, walk

Program = Callable[[Any], Any]


def _new_of_0d(op: Callable[[Any], Any], dtype: str = "float64") -> Program:
    """Whether ``op`` of a 0-d x is x itself, what a write into the result leaves in x, and
    the result's node (of a leaf that requires grad, where the dtype can)."""

    def program(m: Any) -> Any:
        x = m.tensor(2, dtype=getattr(m, dtype))
        y = op(x)
        y = y[0] if isinstance(y, tuple) else y
        same, _ = y is x, y.add_(1)
        if dtype != "float64":
            return same, x, y
        z = op(m.tensor(2.0, dtype=m.float64, requires_grad=True))
        z = z[0] if isinstance(z, tuple) else z
        return same, x, y, walk(z.grad_fn, 1)

    return program


RUNNING_0D: dict[str, Program] = {
    "cumsum": _new_of_0d(lambda x: x.cumsum(0)),
    "cumsum_dim_minus_1": _new_of_0d(lambda x: x.cumsum(-1)),
    "cumsum_to_float32": _new_of_0d(lambda x: x.cumsum(0, dtype=x.new_tensor(0.0).float().dtype)),
    "cumsum_int": _new_of_0d(lambda x: x.cumsum(0), "int64"),
    "cumsum_int32_to_int64": _new_of_0d(lambda x: x.cumsum(0), "int32"),
    "cumprod": _new_of_0d(lambda x: x.cumprod(0)),
    "cummax": _new_of_0d(lambda x: x.cummax(0)),
    "cummin": _new_of_0d(lambda x: x.cummin(0)),
    "logcumsumexp": _new_of_0d(lambda x: x.logcumsumexp(0)),
    "cumsum_dim_out_of_range": _new_of_0d(lambda x: x.cumsum(1)),
}


def test_running_ops_of_a_0d_tensor(backend: str) -> None:
    same_each(RUNNING_0D, backend)


def _laid(t: Any) -> Any:
    return t, t.stride(), t.is_contiguous()


def _transposed(m: Any, dtype: Any = None) -> Any:
    """A (3, 4) tensor laid out transposed, of values 0-4 with ties."""
    return (grid(m, 4, 3, dtype=dtype) % 5).t()


SEARCHES: dict[str, Program] = {
    "int32_out": lambda m: _laid(m.searchsorted(grid(m, 3, 4), _transposed(m), out_int32=True)),
    "right": lambda m: _laid(m.searchsorted(grid(m, 4, 3).t(), _transposed(m), right=True)),
    "side_right_1d_seq": lambda m: _laid(m.searchsorted(grid(m, 5), _transposed(m), side="right")),
    "sorter": lambda m: _laid(
        m.searchsorted(
            grid(m, 3, 4).flip(1), _transposed(m), sorter=m.arange(3, -1, -1).expand(3, 4)
        )
    ),
    "nan_in_sequence": lambda m: _laid(
        m.searchsorted(m.tensor([[1.0, 2, float("nan")]] * 3), _transposed(m))
    ),
    "int_values": lambda m: _laid(m.searchsorted(grid(m, 5), _transposed(m, m.int64))),
    "permuted_3d": lambda m: _laid(
        m.searchsorted(grid(m, 6), (grid(m, 2, 3, 4) % 7).permute(2, 0, 1))
    ),
    "bucketize": lambda m: _laid(m.bucketize(_transposed(m), grid(m, 4))),
    "already_contiguous": lambda m: _laid(m.searchsorted(grid(m, 3, 4), grid(m, 3, 2) % 5)),
}


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_searchsorted_results_are_c_ordered(spec: str) -> None:
    same_each(SEARCHES, spec)


@pytest.mark.cunumeric
def test_searchsorted_results_are_c_ordered_on_cunumeric() -> None:
    same_each({k: SEARCHES[k] for k in ("right", "bucketize")}, "cunumeric")


def _embedding(m: Any, index: Any, **options: Any) -> Any:
    w = leaf(m, 4, 3)
    e = m.nn.functional.embedding(index(m), w, **options)
    (e * 1.5).sum().backward()
    return e, w.grad, walk(e.grad_fn, 2)


EMBEDDINGS: dict[str, Program] = {
    "0d_index": lambda m: _embedding(m, lambda m: m.tensor(2)),
    "1d_index": lambda m: _embedding(m, lambda m: m.tensor([2, 0, 2])),
    "int32_2d_index": lambda m: _embedding(m, lambda m: m.tensor([[2], [3]], dtype=m.int32)),
    "3d_index_scaled": lambda m: _embedding(
        m, lambda m: m.tensor([[[2, 0]], [[2, 2]]]), scale_grad_by_freq=True
    ),
    "2d_index_padding": lambda m: _embedding(
        m, lambda m: m.tensor([[1, 0], [1, 3]]), padding_idx=1
    ),
    "2d_index_sparse": lambda m: _embedding(m, lambda m: m.tensor([[1, 0], [1, 3]]), sparse=True),
    "2d_index_max_norm": lambda m: _embedding(
        m, lambda m: m.tensor([[1, 0], [1, 3]]), max_norm=4.0
    ),
    "transposed_index": lambda m: _embedding(m, lambda m: m.tensor([[1, 0], [2, 3]]).t()),
    "weight_not_a_leaf": lambda m: walk(
        m.nn.functional.embedding(m.tensor([[1, 0]]), leaf(m, 4, 3) * 2).grad_fn, 2
    ),
    "module": lambda m: walk(m.nn.Embedding(4, 3)(m.tensor([[1, 0]])).grad_fn, 2),
    "index_changed_in_place": lambda m: _index_changed(m),
}


def _index_changed(m: Any) -> Any:
    """A 2-d index changed in place between forward and backward (torch's node saves it)."""
    w, i = leaf(m, 4, 3), m.tensor([[2, 0], [1, 1]])
    e = m.nn.functional.embedding(i, w)
    i.add_(0)
    return refused_in_place(lambda: e.sum().backward()), w.grad


def test_embedding_nodes(backend: str) -> None:
    same_each(EMBEDDINGS, backend)


def _bag(
    m: Any, change: str, mode: str = "sum", two_d: bool = False, psw_grad: bool = False
) -> Any:
    """embedding_bag's outcome where ``change`` (an operand, or "none") changed in place
    between forward and backward."""
    w = leaf(m, 4, 3)
    i = m.tensor([[2, 0], [3, 2]]) if two_d else m.tensor([2, 0, 3, 2])
    offsets = None if two_d else m.tensor([0, 2])
    psw = None
    if mode == "sum":
        psw = m.tensor([[1.0, 2], [3, 4]] if two_d else [1.0, 2, 3, 4], dtype=m.float64)
        psw.requires_grad_(psw_grad)
    e = m.nn.functional.embedding_bag(i, w, offsets, mode=mode, per_sample_weights=psw)
    changed = {"input": i, "offsets": offsets, "psw": psw}.get(change)
    if changed is not None:
        with m.no_grad():
            changed.mul_(1)
    refused = refused_in_place(lambda: e.sum().backward())
    return e, refused, w.grad, None if psw is None else psw.grad


BAGS: dict[str, Program] = {
    "none_sum": lambda m: _bag(m, "none"),
    "none_max": lambda m: _bag(m, "none", "max"),
    "input_2d_mean": lambda m: _bag(m, "input", "mean", two_d=True),
    "input_2d_sum_psw": lambda m: _bag(m, "input", two_d=True),
    "psw_2d": lambda m: _bag(m, "psw", two_d=True),
    "psw_with_grad": lambda m: _bag(m, "psw", psw_grad=True),
    "offsets_max": lambda m: _bag(m, "offsets", "max"),
    "input_max": lambda m: _bag(m, "input", "max"),
}


def test_embedding_bag_saved_operands(backend: str) -> None:
    same_each(BAGS, backend)
