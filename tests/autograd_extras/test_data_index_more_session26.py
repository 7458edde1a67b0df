"""More index tensors written through their ``.data`` (or by host code into memory they
share) between the forward and the backward of embedding and take.

Such a write bumps no version: PyTorch's backward runs and reads the index it saved as it is
then. The torch plugin's fused embedding keeps the forward's index array in its saved state,
which backward now remakes (ops/composite.py ``Resaved``); the reference's padding condition
is remade too; ``take`` of a 0-d index reads it through a one-element view. Each program runs
on torch 2.13 and on tensorweaver (:mod:`snippet_outcomes`).
"""

from __future__ import annotations

from typing import Any, Callable

from snippet_outcomes import same_each

Program = Callable[[Any], Any]


def _table(m: Any) -> Any:
    return (m.arange(15, dtype=m.float64) * 0.37 + 1).sin().reshape(5, 3).requires_grad_()


def _written(m: Any, i: Any, values: Any) -> None:
    i.data.copy_(m.tensor(values, dtype=i.dtype))


def _host_written(m: Any, i: Any, values: Any) -> None:
    i.numpy()[...] = values  # (the memory the index shares with NumPy)


def _embedded(
    index: Any,
    values: Any,
    change: Callable[[Any, Any, Any], None] = _written,
    dtype: str = "int64",
    create_graph: bool = False,
    **keywords: Any,
) -> Program:
    """The table's gradient of ``(embedding(i, table) * w).sum()`` (``w``: 1, 2, ..., so each
    position's gradient tells where it came from) after ``change`` wrote ``values`` into
    ``i``; under ``create_graph``, also the gradients of ``(g * g * table).sum()`` (``g``:
    the table's gradient) towards ``w`` and the table."""

    def program(m: Any) -> Any:
        table = _table(m)
        i = m.tensor(index, dtype=getattr(m, dtype))
        out = m.nn.functional.embedding(i, table, **keywords)
        change(m, i, values)
        w = (m.arange(out.numel(), dtype=m.float64) + 1).reshape(out.shape).requires_grad_()
        if not create_graph:
            (out * w).sum().backward()
            return table.grad
        (g,) = m.autograd.grad((out * w).sum(), table, create_graph=True)
        (g * g * table).sum().backward()
        return g.detach(), w.grad, table.grad

    return program


EMBEDDING = {
    "1-d": _embedded([2, 0, 4], [1, 1, 3]),
    "2-d int32": _embedded([[2, 0], [4, 4]], [[1, 3], [1, 0]], dtype="int32"),
    # (the reference's padding condition, read from the index: before, numpy's backward took
    # the remade index for that condition and raised)
    "padding, 2-d": _embedded([[2, 0], [4, 1]], [[1, 1], [3, 0]], padding_idx=1),
    "padding, 1-d": _embedded([2, 0, 1], [1, 1, 3], padding_idx=1),
    "padding, negative": _embedded([2, 0, 4], [4, 4, 0], padding_idx=-1),
    "create_graph": _embedded([2, 0, 4], [1, 1, 3], create_graph=True),
    "create_graph, padding": _embedded([2, 0], [0, 0], create_graph=True, padding_idx=0),
    "host write": _embedded([2, 0, 4], [1, 1, 3], _host_written),
    # (the counts that scale_grad_by_freq divides by are those of the index at backward)
    "by frequency": _embedded([2, 0, 2], [1, 1, 3], scale_grad_by_freq=True),
    "by frequency, padding": _embedded(
        [2, 0, 2], [1, 1, 3], scale_grad_by_freq=True, padding_idx=3
    ),
    # (PyTorch's double backward of EmbeddingBackward0 leaves the scale out: before, tw's
    # differentiated it)
    "by frequency, create_graph": _embedded(
        [2, 0, 2], [2, 0, 2], scale_grad_by_freq=True, create_graph=True
    ),
    "unchanged values": _embedded([2, 0, 4], [2, 0, 4]),
}


def test_embedding_follows_the_index(spec: str) -> None:
    same_each(EMBEDDING, spec)


def test_embedding_module_follows_the_index(spec: str) -> None:
    def program(m: Any) -> Any:
        m.manual_seed(0)
        layer = m.nn.Embedding(4, 2, dtype=m.float64)
        with m.no_grad():
            layer.weight.copy_(m.arange(8, dtype=m.float64).reshape(4, 2))
        i = m.tensor([[3, 1]])
        out = layer(i)
        _written(m, i, [[0, 0]])
        (out * m.tensor([[[1.0, 2.0], [3.0, 4.0]]], dtype=m.float64)).sum().backward()
        return layer.weight.grad

    same_each({"nn.Embedding": program}, spec)


def _taken(index: int, value: int, create_graph: bool = False) -> Program:
    """x's gradient of ``3 * x.take(i)`` (``i`` 0-d) after ``value`` was written through
    ``i.data``; under ``create_graph``, of the gradient's square's sum."""

    def program(m: Any) -> Any:
        x = (m.arange(12, dtype=m.float64) * 0.37 + 1).sin().reshape(3, 4).requires_grad_()
        i = m.tensor(index)
        out = x.take(i)
        i.data.fill_(value)
        if not create_graph:
            (out * 3).backward()
            return x.grad, out.shape
        (g,) = m.autograd.grad(out * out, x, create_graph=True)
        g.sum().backward()
        return g.detach(), x.grad

    return program


def test_take_of_a_0d_index_follows_it(spec: str) -> None:
    same_each(
        {
            "0-d": _taken(5, 0),
            "0-d negative": _taken(-1, 2),
            "0-d to negative": _taken(3, -2),
            "0-d create_graph": _taken(7, -12, create_graph=True),
        },
        spec,
    )
