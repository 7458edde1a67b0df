"""The engine's corners mended in session 25, around those reader A recorded
(tests/ports/test_review_session25_reader_a.py): tensors named twice in ``inputs=`` and
``autograd.grad``, an AccumulateGrad pre-hook that returns ``(None,)``, one AccumulateGrad
per leaf (its identity, metadata and memory), and node hooks on ``dst.copy_(dst)`` and
``x.fill_(x)``, whose two edges are one tensor. Each program runs on torch 2.13 and on
tensorweaver with only the module changed (:mod:`snippet_outcomes`).
"""

from __future__ import annotations

import gc
import weakref
from functools import partial
from typing import Any, Callable

from snippet_outcomes import same_each

Program = Callable[[Any], Any]


def _leaf(m: Any, n: int = 3) -> Any:
    return m.arange(1.0, n + 1.0, dtype=m.float64).requires_grad_()


def _accumulator(x: Any) -> Any:
    return (x * 2).grad_fn.next_functions[0][0]


# -- a tensor named twice in inputs= -----------------------------------------------------------


def _grad_repeated(m: Any) -> tuple:
    """autograd.grad gives the gradient (one object) at each place; each tensor's hook runs
    once; an unused tensor's zeros are made at each place."""
    log: list = []
    x, unused = _leaf(m), _leaf(m, 2)
    h = x * 2
    h.register_hook(lambda g: log.append("h"))
    x.register_hook(lambda g: log.append("x"))
    named = [h, x, unused, h, x, unused]
    grads = m.autograd.grad((h * h).sum(), named, materialize_grads=True)
    return grads, tuple(log), grads[0] is grads[3], grads[2] is grads[5]


def _backward_repeated(m: Any, how: str) -> tuple:
    x, w = _leaf(m), _leaf(m)
    h = x * w
    if how == "create_graph":
        (h**2).sum().backward(inputs=[x, x], create_graph=True)
        return x.grad, x.grad.requires_grad, w.grad
    if how == "retained":
        h.retain_grad()
        (h * h).sum().backward(inputs=[h, h, x])
        return h.grad, x.grad, w.grad
    m.autograd.backward([(h * h).sum()], inputs=(w, x, w))
    return x.grad, w.grad


REPEATED: dict[str, Program] = {
    "grad": _grad_repeated,
    "create_graph": partial(_backward_repeated, how="create_graph"),
    "retained": partial(_backward_repeated, how="retained"),
    "autograd_backward": partial(_backward_repeated, how="autograd_backward"),
}


def test_repeated_inputs_as_torch(spec: str) -> None:
    same_each(REPEATED, spec)


# -- an AccumulateGrad pre-hook that returns (None,) -------------------------------------------


def _prehook_none(m: Any, how: str) -> tuple:
    log: list = []
    x = _leaf(m)
    acc = _accumulator(x)
    acc.register_prehook(lambda gs: (None,))
    acc.register_hook(lambda gi, go: log.append(go))
    y = (x**2).sum()
    if how == "grad":  # (autograd.grad runs no AccumulateGrad)
        return m.autograd.grad(y, x), tuple(log), x.grad
    y.backward(create_graph=how == "create_graph", inputs=[x] if how == "inputs" else None)
    return tuple(log), x.grad


PREHOOK_NONE: dict[str, Program] = {
    how: partial(_prehook_none, how=how) for how in ("create_graph", "grad", "inputs")
}


def test_accumulator_prehook_none_as_torch(spec: str) -> None:
    same_each(PREHOOK_NONE, spec)


# -- one AccumulateGrad per leaf ---------------------------------------------------------------


def _one_accumulator(m: Any) -> tuple:
    """Its metadata and hooks, set through one access, are seen through another."""
    log: list = []
    x = _leaf(m)
    first = _accumulator(x)
    first.metadata["k"] = 1
    second = (x + 1).grad_fn.next_functions[0][0]
    second.register_prehook(lambda gs: log.append("pre"))
    (x * 3).sum().backward()
    return first is second, second.metadata, tuple(log), x.grad


def _freed(m: Any) -> tuple:
    """An accumulator holds its leaf; a leaf whose accumulator and graph are gone is freed."""
    # Objects made before are frozen: the collection walks only this graph's (a whole
    # collection of a worker's heap late in the suite costs seconds).
    gc.freeze()
    try:
        x = m.ones(4, requires_grad=True)
        leaf = weakref.ref(x)
        y = x * 2
        acc = y.grad_fn.next_functions[0][0]
        del x, y
        held = leaf() is not None
        del acc
        gc.collect()  # (tw's grad_fn and its node hold each other: a cycle)
        return held, leaf() is None
    finally:
        gc.unfreeze()


def test_one_accumulator_per_leaf_as_torch(spec: str) -> None:
    same_each({"one": _one_accumulator, "freed": _freed}, spec)


# -- node hooks where both edges are one tensor ------------------------------------------------


def _self_copy(m: Any, how: str) -> tuple:
    log: list = []
    a = _leaf(m)
    dst = a * 1
    dst.copy_(dst)
    fn = dst.grad_fn
    if how == "replaces":
        fn.register_hook(lambda gi, go: (gi[0] + 1, gi[1] * 3))
    else:
        fn.register_hook(lambda gi, go: log.append((gi, go)))
    if how == "prehook":
        fn.register_prehook(lambda go: (go[0] * 2,))
    if how == "create_graph":
        (g,) = m.autograd.grad((dst**2).sum(), a, create_graph=True)
        return tuple(log), g, g.requires_grad
    (dst * a.detach()).sum().backward()
    return tuple(log), a.grad, type(fn).__name__


def _self_fill(m: Any) -> tuple:
    log: list = []
    a = m.tensor(2.0, dtype=m.float64, requires_grad=True)
    x = a * 3
    x.fill_(x)
    x.grad_fn.register_hook(lambda gi, go: log.append((gi, go)))
    (x * 5).backward()
    return tuple(log), a.grad, type(x.grad_fn).__name__


SELF_EDGES: dict[str, Program] = {
    **{
        how: partial(_self_copy, how=how) for how in ("seen", "replaces", "prehook", "create_graph")
    },
    "fill": _self_fill,
}


def test_hooks_on_one_tensor_twice_as_torch(spec: str) -> None:
    same_each(SELF_EDGES, spec)
