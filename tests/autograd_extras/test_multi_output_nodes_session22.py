"""Nodes of several outputs, as torch 2.13's: an autograd.Function returning several
differentiable outputs, and unbind / split / chunk, record one node for all their outputs
(every output's ``grad_fn`` is that node, ``next_functions`` name each output by its
``output_nr``), whose backward runs once with every output's gradient; a released node
lets go of a composite's input edges. Compared with real torch, in float64."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch

_X = np.linspace(-1.5, 2.0, 12).reshape(3, 4)


def _x(m: Any) -> Any:
    return m.tensor(_X, dtype=m.float64, requires_grad=True)


def _three_outputs(m: Any, materialize: bool) -> Any:
    """A Function of three outputs (x * 2, x.exp(), a view of x), counting its backward
    calls and keeping the gradients each call got (None or zeros where unused)."""

    class Three(m.autograd.Function):
        calls: list = []

        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.set_materialize_grads(materialize)
            e = x.exp()
            ctx.save_for_backward(e)
            return x * 2, e, x.view_as(x)

        @staticmethod
        def backward(ctx: Any, ga: Any, gb: Any, gc: Any) -> Any:
            (e,) = ctx.saved_tensors
            Three.calls.append([None if g is None else g.tolist() for g in (ga, gb, gc)])
            total = 0
            for g, k in ((ga, 2), (gb, e), (gc, 1)):
                if g is not None:
                    total = total + g * k
            return total

    return Three


@pytest.mark.parametrize("materialize", [True, False])
@pytest.mark.parametrize("used", [(0, 1, 2), (0, 2), (1,)])
def test_function_backward_once_with_every_gradient(materialize: bool, used: tuple) -> None:
    def run(m: Any) -> Any:
        fn = _three_outputs(m, materialize)
        x = _x(m)
        outs = fn.apply(x)
        sum((outs[i] * (i + 1.5)).sum() for i in used).backward()
        return fn.calls, x.grad.numpy()

    (calls, grad), (torch_calls, torch_grad) = run(tw), run(torch)
    assert calls == torch_calls
    # the gradient holds exp(x): NumPy's float64 exp (tw) and torch's (SLEEF) are different
    # libraries, 1 ulp apart on some CPUs (AVX-512); nothing else in it is inexact
    np.testing.assert_array_max_ulp(grad, torch_grad, maxulp=1)


def test_function_outputs_share_one_grad_fn() -> None:
    def run(m: Any) -> Any:
        x = _x(m)
        a, b, c = _three_outputs(m, True).apply(x)
        y = a * b + c
        inner = y.grad_fn.next_functions[0][0]
        return (
            a.grad_fn is b.grad_fn is c.grad_fn,
            a.grad_fn.name(),
            [n for _, n in inner.next_functions],
            inner.next_functions[0][0] is a.grad_fn,
            [f.name() for f, _ in a.grad_fn.next_functions],
            [n for _, n in y.grad_fn.next_functions],
        )

    assert run(tw) == run(torch)


def test_function_node_hooks_see_every_output() -> None:
    def run(m: Any) -> Any:
        seen: list = []
        x = _x(m)
        a, b, c = _three_outputs(m, True).apply(x)
        a.grad_fn.register_prehook(
            lambda go: seen.append([None if g is None else g.sum().item() for g in go])
        )
        b.grad_fn.register_hook(lambda gi, go: seen.append([g.sum().item() for g in gi]))
        (a.sum() * 3 + c.sum()).backward()
        return seen, x.grad.tolist()

    ours, theirs = run(tw), run(torch)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
    assert len(ours[0]) == len(theirs[0]) == 2
    for got, want in zip(ours[0], theirs[0]):
        assert [g is None for g in got] == [g is None for g in want]
        np.testing.assert_allclose(
            [g for g in got if g is not None], [g for g in want if g is not None], rtol=1e-12
        )


def test_function_second_order_through_several_outputs() -> None:
    def run(m: Any) -> Any:
        x = _x(m)
        a, b, _ = _three_outputs(m, True).apply(x)
        (g,) = m.autograd.grad((a * b).sum(), x, create_graph=True)
        g.sum().backward()
        return g.tolist(), x.grad.tolist()

    ours, theirs = run(tw), run(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)


def test_function_saved_tensor_hooks_run_once_for_the_call() -> None:
    def run(m: Any) -> Any:
        packed: list = []

        def pack(t: Any) -> Any:
            packed.append(tuple(t.shape))
            return t

        x = _x(m)
        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            a, b, _ = _three_outputs(m, True).apply(x)
        (a + b).sum().backward()
        return packed, x.grad.tolist()

    assert run(tw) == run(torch)


def _pieces(m: Any, how: str) -> tuple:
    x = _x(m)
    if how == "unbind":
        return x, x.unbind(0)
    if how == "unbind1":
        return x, m.unbind(x, 1)
    if how == "split":
        return x, x.split(3, 1)
    if how == "split_with_sizes":
        return x, x.split([1, 0, 3], 1)
    return x, x.chunk(2, 1)


_HOWS = ["unbind", "unbind1", "split", "split_with_sizes", "chunk"]


@pytest.mark.parametrize("how", _HOWS)
def test_pieces_share_one_node(how: str) -> None:
    def run(m: Any) -> Any:
        x, pieces = _pieces(m, how)
        y = pieces[0] * pieces[-1]
        return (
            all(p.grad_fn is pieces[0].grad_fn for p in pieces),
            pieces[0].grad_fn.name(),
            [n for _, n in y.grad_fn.next_functions],
            [f.name() for f, _ in pieces[0].grad_fn.next_functions],
        )

    assert run(tw) == run(torch)


@pytest.mark.parametrize("how", _HOWS)
def test_pieces_gradients_and_node_hooks(how: str) -> None:
    def run(m: Any) -> Any:
        seen: list = []
        x, pieces = _pieces(m, how)
        node = pieces[-1].grad_fn
        node.register_prehook(
            lambda go: (
                seen.append([g is None for g in go]),
                tuple(None if g is None else g * 10 for g in go),
            )[1]
        )
        node.register_hook(lambda gi, go: seen.append([g.sum().item() for g in gi]))
        (pieces[0].exp().sum() + (pieces[-1] * 3).sum()).backward()
        return seen, x.grad.tolist()

    ours, theirs = run(tw), run(torch)
    assert ours[0][0] == theirs[0][0]
    np.testing.assert_allclose(ours[0][1], theirs[0][1], rtol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)


@pytest.mark.parametrize("how", ["unbind", "split"])
def test_pieces_twice_differentiable_and_second_backward(how: str) -> None:
    def run(m: Any) -> Any:
        x, pieces = _pieces(m, how)
        loss = (pieces[0] * pieces[1]).sum()
        (g,) = m.autograd.grad(loss, x, create_graph=True)
        (g * g).sum().backward(retain_graph=True)
        first = x.grad.tolist()
        y = sum(p.sum() for p in pieces)
        y.backward()
        y.backward()  # (no tensor saved: a second backward is allowed, as PyTorch's)
        return g.tolist(), first, x.grad.tolist()

    assert run(tw) == run(torch)


def test_unbind_pieces_changed_in_place_refused_like_torch() -> None:
    def run(m: Any) -> Any:
        a, _ = _x(m).unbind(0)[:2]
        try:
            a.mul_(2)
        except RuntimeError:
            return "refused"
        return "allowed"

    assert run(tw) == run(torch)


def test_released_composite_node_frees_its_inputs_keeps_its_edges() -> None:
    """As torch's: backward frees what the nodes saved (h, whose exp node saved it too), and
    the graph's nodes stay for next_functions."""
    # Objects made before are frozen: the collection walks only this test's (a whole
    # collection of a worker's heap late in the suite costs seconds).
    gc.freeze()
    try:
        x = tw.tensor(_X, dtype=tw.float64, requires_grad=True)
        h = x.exp()
        kept = weakref.ref(h)
        y = tw.nn.functional.gelu(h)  # (a composite: its last node keeps its input's edge)
        del h
        y.sum().backward()
        gc.collect()
    finally:
        gc.unfreeze()
    assert kept() is None
    assert [f.name() for f, _ in y.grad_fn.next_functions] == ["ExpBackward0"]
