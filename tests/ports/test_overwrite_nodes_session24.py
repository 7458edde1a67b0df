"""The nodes of an overwrite with a source (``copy_``, ``fill_(tensor)``) and the overlap
rule of in-place index writes, each compared with torch 2.13 (:mod:`snippet_outcomes`).

PyTorch's CopyBackwards and FillBackward3 have two inputs, ``self`` as it was (its gradient
zero) and the source, whatever needs a gradient; their hooks see both (ops/methods.py
``_overwritten``). Its index kernels (index_copy_, index_add_, index_reduce_, scatter_,
scatter_add_, scatter_reduce_) refuse an index or source anywhere in ``self``'s memory, the
very same elements too (ops/methods.py ``_refuse_any_overlap``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from snippet_outcomes import same_each

Program = Callable[[Any], Any]


def _data(m: Any, n: int, seed: int, grad: bool, dtype: Any = None) -> Any:
    values = np.random.default_rng(seed).standard_normal(n)
    return m.tensor(values, dtype=dtype or m.float64, requires_grad=grad)


def _chain(fn: Any, depth: int = 2) -> Any:
    if fn is None or depth == 0:
        return None if fn is None else fn.name()
    return fn.name(), tuple(_chain(f, depth - 1) for f, _ in fn.next_functions)


def _overwrite(write: str, history: bool, source_grad: bool, replace: bool) -> Program:
    """``write`` into a tensor with or without a history, from a leaf that needs a gradient
    or not: the node's chain, what its hook sees (``replace``: it triples them) and the
    leaves' gradients after a weighted square loss."""

    def program(m: Any) -> Any:
        a = _data(m, 3, 0, True)
        src = _data(m, 3, 1, source_grad, m.float32 if write == "copy f32" else None)
        y = a * 2 if history else m.zeros(3, dtype=m.float64)
        if write == "fill":
            y.fill_(src.sum())
        else:
            y.copy_(src)
        seen: list = []

        def hook(gi: tuple, go: tuple) -> Any:
            seen.append([None if g is None else g for g in gi])
            return tuple(None if g is None else g * 3 for g in gi) if replace else None

        y.grad_fn.register_hook(hook)
        (y * y * m.arange(1.0, 4.0, dtype=m.float64)).sum().backward()
        return _chain(y.grad_fn), seen, a.grad, src.grad

    return program


OVERWRITES = {
    f"{write} history={h} source_grad={g} replace={r}": _overwrite(write, h, g, r)
    for write in ("copy", "copy f32", "fill")
    for h in (True, False)
    for g in (True, False)
    for r in (False, True)
    if h or g  # (else nothing records a node)
}


def test_overwrite_nodes_have_self_and_source(spec: str) -> None:
    same_each(OVERWRITES, spec)


def _index_write(op: str, operand: str) -> Program:
    """``x.op(0, i, src)`` where the source or the index is ``x``, a view of it, its alias or
    a disjoint part of its memory."""

    def program(m: Any) -> Any:
        base = m.arange(1.0, 7.0, dtype=m.float64)
        x = base[:3]
        i = m.tensor([0, 2, 1])
        src = {"self": x, "view": x.view(3), "detach": x.detach(), "apart": base[3:]}[operand]
        if operand == "index":
            x = m.tensor([0, 2, 1])
            i, src = x, m.tensor([4, 5, 6])
        extra = {"index_reduce_": ("prod",), "scatter_reduce_": ("sum",)}.get(op, ())
        getattr(x, op)(0, i, src, *extra)
        return x, base

    return program


INDEX_WRITES = {
    f"{op} {operand}": _index_write(op, operand)
    for op in (
        "index_copy_",
        "index_add_",
        "index_reduce_",
        "scatter_",
        "scatter_add_",
        "scatter_reduce_",
    )
    for operand in ("self", "view", "detach", "apart", "index")
}


def test_index_writes_refuse_any_overlap(spec: str) -> None:
    same_each(INDEX_WRITES, spec)
