"""grad_fn edges next to torch 2.13's where a label names either the node's own op or a
composite ending there (autograd/grad_fn.py ``_whole``): dropout's mul by its mask (on the
reference and the fused path, before and after backward), dist, scatter of a number
(ScatterBackward1), copysign's second argument, index_reduce and x / 2.0 once freed."""

from __future__ import annotations

from typing import Any, Callable

from snippet_outcomes import grid, leaf, same_each, walk


def _before_and_after(make: Callable[[Any], Any]) -> Callable[[Any], tuple]:
    """The graph of ``make(m)``'s result, then its graph and the gradient (dropout's: its
    shape, the mask being drawn) once backward ran."""

    def program(m: Any) -> tuple:
        x = leaf(m, 2, 3)
        y = make(m, x)
        before = walk(y.grad_fn, 2)
        y.sum().backward()
        return before, walk(y.grad_fn, 2), tuple(x.grad.shape) if make is _dropout else x.grad

    return program


def _dropout(m: Any, x: Any) -> Any:
    return m.nn.functional.dropout(x * 1, 0.5)


EDGES = {
    "dropout": _before_and_after(_dropout),
    "dist2": _before_and_after(lambda m, x: m.dist(x, grid(m, 3) * 2).reshape(1)),
    "dist3": _before_and_after(lambda m, x: m.dist(x * 1, grid(m, 3), 3)),
    "scatter_number": _before_and_after(
        lambda m, x: (x * 1).scatter(1, m.tensor([[0, 2], [1, 0]]), 5.0)
    ),
    "scatter_number_in_place": _before_and_after(
        lambda m, x: (x * 1).scatter_(1, m.tensor([[0, 2], [1, 0]]), 5.0)
    ),
    "scatter_value_keyword": _before_and_after(
        lambda m, x: (x * 1).scatter(1, m.tensor([[0, 2], [1, 0]]), value=-1.5)
    ),
    "scatter_tensor": _before_and_after(
        lambda m, x: (x * 1).scatter(1, m.tensor([[0, 2], [1, 0]]), grid(m, 2, 2))
    ),
    "div_number": _before_and_after(lambda m, x: x / 2.0),
    "index_reduce": _before_and_after(
        lambda m, x: x.index_reduce(0, m.tensor([1, 0]), grid(m, 2, 3), "prod")
    ),
}


def test_labelled_edges_like_torch(spec: str) -> None:
    same_each(EDGES, spec)


def _dist_edges(m: Any) -> Any:
    x, y = leaf(m, 2, 3), leaf(m, 3)
    return walk(m.dist(x, y * 2, 3).grad_fn)


def test_dist_of_a_p_norm_edges(spec: str) -> None:
    same_each({"dist_p3": _dist_edges}, spec)


def _copysign(m: Any) -> tuple:
    a = leaf(m, 3)
    b = m.tensor([-1.0, 0.0, 2.0], dtype=m.float64, requires_grad=True)
    y = m.copysign(a, b)
    ga, gb = m.autograd.grad(y.sum(), (a, b), create_graph=True)
    by_number = m.copysign(a * 1, -2.0)
    return walk(y.grad_fn), ga, gb, gb.requires_grad, walk(by_number.grad_fn)


def test_copysign_second_argument(spec: str) -> None:
    same_each({"copysign": _copysign}, spec)


def _cosine_of_vectors(m: Any) -> Any:
    x, y = leaf(m, 3), leaf(m, 3)
    return walk(m.nn.functional.cosine_similarity(x * 1, y * 1, dim=0).grad_fn, 1)


def test_cosine_similarity_of_vectors_edges(spec: str) -> None:
    same_each({"cosine": _cosine_of_vectors}, spec)
