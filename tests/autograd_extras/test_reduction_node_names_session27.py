"""The grad_fn names of the reductions, next to torch 2.13's, for every form of ``dim``: left
out, None, ``()``, one that covers every axis (0 or -1 of a vector, ``(0, 1)`` of a matrix),
some axes; ``keepdim`` left out, False or True; 0-d, 1-d and 2-d inputs. PyTorch names a node
by the overload called: ``x.sum()`` is ``SumBackward0``, ``x.sum(None)``, ``x.sum(())`` and a
vector's ``x.sum(-1)`` are ``SumBackward1`` (so ``prod`` and ``mean``)."""

from __future__ import annotations

import itertools
from typing import Any, Callable

from snippet_outcomes import grad_fn_name, leaf, same, same_each, walk

SHAPES = ((), (3,), (2, 3))
DIMS: tuple[Any, ...] = ("omitted", None, (), 0, -1, (0, 1), [-1, 0])
KEEPDIMS: tuple[Any, ...] = ("omitted", False, True)

#: A reduction of ``x`` on ``torch`` or ``tensorweaver`` (``m``), with ``dim``/``keepdim``
#: keywords where given; the tensor whose node is named.
CALLS: dict[str, Callable[[Any, Any, dict], Any]] = {
    "sum": lambda m, x, kw: x.sum(**kw),
    "prod": lambda m, x, kw: m.prod(x, **kw),
    "mean": lambda m, x, kw: x.mean(**kw),
    "nansum": lambda m, x, kw: m.nansum(x, **kw),
    "nanmean": lambda m, x, kw: x.nanmean(**kw),
    "amax": lambda m, x, kw: x.amax(**kw),
    "amin": lambda m, x, kw: m.amin(x, **kw),
    "max": lambda m, x, kw: x.max(**kw)[0] if "dim" in kw else x.max(**kw),
    "min": lambda m, x, kw: m.min(x, **kw)[0] if "dim" in kw else m.min(x, **kw),
    "var": lambda m, x, kw: x.var(**kw),
    "std correction=0": lambda m, x, kw: x.std(correction=0, **kw),
    "var_mean": lambda m, x, kw: m.var_mean(x, **kw)[1],
    "std_mean": lambda m, x, kw: m.std_mean(x, correction=0, **kw)[0],
    "norm": lambda m, x, kw: x.norm(**kw),
    "norm p=1": lambda m, x, kw: m.norm(x, 1, **kw),
    "vector_norm inf": lambda m, x, kw: m.linalg.vector_norm(x, float("inf"), **kw),
    "logsumexp": lambda m, x, kw: m.logsumexp(x, **kw),
    "cumsum": lambda m, x, kw: x.cumsum(**kw),
    "count_nonzero": lambda m, x, kw: m.count_nonzero(x, **kw),
    "all": lambda m, x, kw: x.all(**kw),
    "any": lambda m, x, kw: m.any(x, **kw),
}


def _grid_names(call: Callable[[Any, Any, dict], Any]) -> Callable[[Any], list]:
    """A program: the node name (or the error's class) of ``call`` on each input and form."""

    def program(m: Any) -> list:
        names = []
        for shape, dim, keepdim in itertools.product(SHAPES, DIMS, KEEPDIMS):
            kw = {k: v for k, v in (("dim", dim), ("keepdim", keepdim)) if v != "omitted"}
            try:
                names.append(grad_fn_name(call(m, leaf(m, *shape), kw)))
            except Exception as e:  # noqa: BLE001  (torch's refusal is the answer too)
                names.append(type(e).__name__)
        return names

    return program


PROGRAMS = {name: _grid_names(call) for name, call in CALLS.items()}


def test_reduction_names_over_every_dim_form(backend: str) -> None:
    # (before: SumBackward0 for sum given None, () or every axis, ProdBackward0 for a
    # vector's prod(0), MeanBackward0 for mean(None); the other reductions matched already)
    same_each(PROGRAMS, backend)


def _given_every_axis(m: Any) -> list:
    """The cases of the strict xfail this file's fix turned into passes, and other
    spellings of a dim that covers every axis: with ``dtype``, NumPy's ``axis``, the function
    forms, half and complex inputs, a tensor dim, and the name after backward released it."""
    x, y = leaf(m, 3), leaf(m, 2, 3)
    made = [
        x.sum(-1),
        x.sum(0),
        y.sum((0, 1)),
        y.sum(),
        x.prod(0),
        x.prod(),
        m.sum(y, None),
        m.sum(y, [1, 0], dtype=m.float32),
        y.sum(dtype=m.float32),
        y.sum(axis=(0, 1)),
        x.sum(m.tensor([0])),
        x.prod(0, dtype=m.float32),
        m.mean(y, None),
        y.mean(()),
        y.to(m.float16).mean(None),
        y.to(m.float16).mean(),
        y.to(m.complex128).sum((0, 1)),
        y.to(m.complex128).mean(None),
        m.nansum(y, (0, 1)),
        x.sum(0).sum(),
    ]
    released = x.sum(-1)
    released.backward()
    return [grad_fn_name(t) for t in made] + [grad_fn_name(released), x.grad]


def test_reduction_over_every_given_dim_spellings(backend: str) -> None:
    same(_given_every_axis, backend)


def _no_graph(m: Any) -> list:
    """A reduction given every axis of a tensor without a graph, or under no_grad."""
    x = leaf(m, 3)
    with m.no_grad():
        quiet = x.sum(0)
    return [x.detach().sum(0), quiet, x.detach().prod(0).requires_grad, quiet.grad_fn]


def test_reduction_over_every_given_dim_without_graph(backend: str) -> None:
    same(_no_graph, backend)


def _dist(m: Any, read: Callable) -> Any:
    x, y = leaf(m, 2, 3), leaf(m, 3)
    d = m.dist(x, y * 2, 3)
    seen = read(d.grad_fn)
    d.backward()
    return [seen, d, x.grad, y.grad]


def test_dist_node_name(backend: str) -> None:
    same(lambda m: _dist(m, grad_fn_name), backend)


def test_dist_node_edges(backend: str) -> None:
    same(lambda m: _dist(m, walk), backend)
