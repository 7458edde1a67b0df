"""A second backward through a graph that the first freed, against torch 2.13: torch frees
only the tensors its nodes saved, so the second raises ("backward through the graph a second
time") exactly where a node on the way saved a tensor; a node that saved none (an add, a
tril, a cumsum, a floor) runs again, and so does an ``autograd.Function`` whose backward
reads no saved tensor. A Function's saved tensors are freed once a backward went through
any of its outputs, as torch's one node per Function."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _ops(m: Any) -> dict[str, Callable[[Any], Any]]:
    return {
        "tril": lambda t: t.reshape(2, 3).tril(),
        "triu": lambda t: t.reshape(2, 3).triu(1),
        "cumsum": lambda t: t.cumsum(0),
        "floor": lambda t: t.floor() + t,
        "ceil": lambda t: t.ceil() + t,
        "round": lambda t: t.round() + t,
        "trunc": lambda t: t.trunc() + t,
        "frac": lambda t: t.frac(),
        "mean": lambda t: t.reshape(2, 3).mean(1),
        "flip": lambda t: t.flip(0),
        "transpose": lambda t: t.reshape(2, 3).t(),
        "cat": lambda t: m.cat([t, t]),
        "pad": lambda t: m.nn.functional.pad(t, (1, 1)),
        "narrow": lambda t: t.narrow(0, 1, 2),
        "relu": m.relu,
        "x * 2": lambda t: t * 2,
        "x / 2": lambda t: t / 2,
        "exp": lambda t: t.exp(),
        "x ** 2": lambda t: t**2,
        "abs": lambda t: t.abs(),
        "cumprod": lambda t: t.cumprod(0),
        "remainder(float)": lambda t: t.remainder(0.3),
        "sub(alpha=)": lambda t: m.sub(t, t, alpha=2),
    }


#: Composites whose recorded nodes save tensors where torch's one node saves none (their
#: fixes lie in the ops that decompose them).
_SAVING_HERE = {
    "unfold": (
        lambda m, t: t.unfold(0, 2, 1),
        "unfold records a take node that saves its index tensor (freed by backward); "
        "torch's UnfoldBackward0 saves none",
    ),
    "lerp(weight=float)": (
        lambda m, t: m.lerp(t, m.ones_like(t), 0.3),
        "lerp with a number weight records a mul by a constant tensor, which it saves; "
        "torch's LerpBackward0 saves the number",
    ),
}


def _twice(m: Any, fn: Callable[[Any], Any]) -> Any:
    x = m.tensor(np.linspace(-1.0, 1.0, 6), dtype=m.float64, requires_grad=True)
    y = fn(x).sum()
    y.backward()
    try:
        y.backward()
    except RuntimeError as error:
        assert "second time" in str(error)
        return "raises"
    return x.grad.tolist()


@pytest.mark.parametrize("op", list(_ops(torch)))
def test_second_backward_like_torch(backend: str, op: str) -> None:
    assert _twice(tw, _ops(tw)[op]) == _twice(torch, _ops(torch)[op])


@pytest.mark.parametrize(
    "op",
    [
        pytest.param(op, marks=pytest.mark.xfail(strict=True, reason=why))
        for op, (_, why) in _SAVING_HERE.items()
    ],
)
def test_second_backward_through_composites_saving_here(backend: str, op: str) -> None:
    fn = _SAVING_HERE[op][0]
    assert _twice(tw, lambda t: fn(tw, t)) == _twice(torch, lambda t: fn(torch, t))


def _two_outputs(m: Any, reads_saved: bool, saves: bool) -> list:
    class Split(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            ctx.k = 3.0  # an attribute: kept after backward, as torch's
            if saves:
                ctx.save_for_backward(x)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx: Any, g1: Any, g2: Any) -> Any:
            if reads_saved:
                ctx.saved_tensors  # noqa: B018  (raises once they are freed)
            return g1 * 2 + g2 * ctx.k

    x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
    a, b = Split.apply(x)
    found = []
    for loss in (a.sum(), b.sum(), (a + b).sum(), (a * b).sum()):
        try:
            loss.backward()
            found.append(x.grad.tolist())
        except RuntimeError as error:
            assert "second time" in str(error)
            found.append("raises")
    return found


@pytest.mark.parametrize("saves", [False, True])
@pytest.mark.parametrize("reads_saved", [False, True])
def test_function_outputs_after_a_backward_through_one_like_torch(
    backend: str, reads_saved: bool, saves: bool
) -> None:
    assert _two_outputs(tw, reads_saved, saves) == _two_outputs(torch, reads_saved, saves)


def test_one_backward_through_every_output_of_a_function_reads_its_saved_tensors(
    backend: str,
) -> None:
    """The saved tensors are freed after the pass, not after the first output's node: a
    loss over both outputs reads them once per output."""
    assert _two_outputs(tw, True, True)[2:] == _two_outputs(torch, True, True)[2:]


def test_released_function_node_keeps_no_tensor(backend: str) -> None:
    """After backward, a Function's node holds its inputs' and outputs' shapes, not them."""
    import weakref

    class Twice(tw.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 2

    x = tw.ones(4, requires_grad=True)
    h = x + 1  # (an add: it saves nothing)
    seen = weakref.ref(h)
    y = Twice.apply(h).sum()
    del h
    y.backward()
    assert seen() is None
    y.backward()  # runs again: it reads no saved tensor
    assert x.grad.tolist() == [4.0] * 4
