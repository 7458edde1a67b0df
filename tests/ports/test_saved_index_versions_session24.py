"""The integer index that the nodes of gather, scatter, scatter_add, index_select,
take_along_dim and index_add save (PyTorch's GatherBackward0, ScatterBackward0/1,
ScatterAddBackward0, IndexSelectBackward0, IndexAddBackward0 save theirs): changed in place
before backward, it makes backward raise, as PyTorch's version check does, where
tensorweaver's backward read the new values (ops/index.py ``_saving_index``, autograd/node.py
``saves_integer_input``). Each program runs on torch 2.13 and on tensorweaver
(:mod:`snippet_outcomes`); the failing case before: every program below that raises in
PyTorch gave a gradient, and ``take_along_dim`` along a dim (whose node PyTorch gives an
index of its own) gave one from the changed values.
"""

from __future__ import annotations

from typing import Any, Callable

from snippet_outcomes import same_each


def _no_grad_zero(m: Any, i: Any) -> None:
    with m.no_grad():
        i.zero_()


def _changed(
    op: Callable[[Any, Any, Any], Any],
    change: Callable[[Any, Any], Any] = lambda m, i: i.zero_(),
    int32: bool = False,
) -> Callable[[Any], Any]:
    """The gradient of ``op(m, x, i).sum()`` after ``change`` changed the index ``i``."""

    def program(m: Any) -> Any:
        x = (m.arange(12, dtype=m.float64) * 0.37 + 1).sin().reshape(3, 4).requires_grad_()
        i = m.tensor([[1], [2], [0]], dtype=m.int32 if int32 else m.int64)
        out = op(m, x, i)
        change(m, i)
        out.sum().backward()
        return x.grad

    return program


def _zeros(m: Any) -> Any:
    return m.zeros(3, 4, dtype=m.float64)


PROGRAMS = {
    "gather": _changed(lambda m, x, i: x.gather(1, i)),
    "gather of a view": _changed(lambda m, x, i: x.gather(1, i.view(-1).unsqueeze(1))),
    "gather, view changed": _changed(
        lambda m, x, i: x.gather(1, i), lambda m, i: i.view(-1)[0].fill_(0)
    ),
    "gather, changed under no_grad": _changed(lambda m, x, i: x.gather(1, i), _no_grad_zero),
    "gather, .data changed": _changed(lambda m, x, i: x.gather(1, i), lambda m, i: i.data.zero_()),
    "gather, x without grad": _changed(lambda m, x, i: x.detach().gather(1, i) * x[:, :1]),
    "gather int32": _changed(lambda m, x, i: x.gather(1, i), int32=True),
    "gather, unchanged": _changed(lambda m, x, i: x.gather(1, i), lambda m, i: None),
    "scatter": _changed(lambda m, x, i: x.scatter(1, i, x[:, :1] * 2)),
    "scatter value": _changed(lambda m, x, i: x.scatter(1, i, 3.0)),
    "scatter, src alone": _changed(lambda m, x, i: _zeros(m).scatter(1, i, x[:, :1])),
    "scatter_add, input alone": _changed(
        lambda m, x, i: x.scatter_add(1, i, m.ones(3, 1, dtype=m.float64))
    ),
    "scatter_add, src": _changed(lambda m, x, i: _zeros(m).scatter_add(1, i, x[:, :1])),
    "index_select": _changed(lambda m, x, i: x.index_select(1, i.view(-1))),
    "index_select 0-d": _changed(lambda m, x, i: x.index_select(1, i[0, 0])),
    "index_select int32": _changed(lambda m, x, i: x.index_select(1, i.view(-1)), int32=True),
    "take_along_dim along a dim": _changed(lambda m, x, i: x.take_along_dim(i, 1)),
    "take_along_dim flat": _changed(lambda m, x, i: x.take_along_dim(i)),
    "index_add, input alone": _changed(
        lambda m, x, i: x.index_add(1, i.view(-1), m.ones(3, 3, dtype=m.float64))
    ),
    "index_add, source": _changed(
        lambda m, x, i: _zeros(m).index_add(1, i.view(-1), x[:, :3], alpha=2)
    ),
}


def test_changed_index_refused_as_torch(spec: str) -> None:
    same_each(PROGRAMS, spec)
