"""A second ``backward()`` through a graph the first freed, against torch 2.13: PyTorch frees
only the tensors a node saved, and saves a tensor only for a formula it will run, so
``remainder``'s node, whose divisor needs no gradient, runs again; as does the one node of a
composite that saves only numbers (``add`` with ``alpha``), which tensorweaver records as
several nodes: ``autograd.node.frees_nothing`` marks them."""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.autograd.node import frees_nothing

VALUES = np.array([0.5, 1.2, -0.3, 2.0])


def _twice(m: Any, make: Callable[[Any, Any], Any]) -> Any:
    x = m.tensor(VALUES, dtype=m.float64, requires_grad=True)
    y = make(m, x).sum()
    y.backward()
    try:
        y.backward()
    except RuntimeError as error:
        assert "second time" in str(error)
        return "raises"
    return x.grad.numpy().copy()


def _same(got: Any, want: Any) -> None:
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12)


def _divisor(m: Any, needs_grad: bool) -> Any:
    return m.tensor([0.7, 0.4, 0.9, 0.3], dtype=m.float64, requires_grad=needs_grad)


REMAINDERS = {
    "a number": lambda m, x: x.remainder(0.7),
    "a tensor without grad": lambda m, x: x.remainder(_divisor(m, False)),
    "a tensor with grad": lambda m, x: x.remainder(_divisor(m, True)),
    "of an exp": lambda m, x: x.exp().remainder(0.7),
}


@pytest.mark.parametrize("case", list(REMAINDERS))
def test_remainder_second_backward_as_torch(backend: str, case: str) -> None:
    _same(_twice(tw, REMAINDERS[case]), _twice(torch, REMAINDERS[case]))


def _input_changed(m: Any, needs_grad: bool) -> Any:
    x = m.tensor(VALUES, dtype=m.float64, requires_grad=True)
    h = x * 1
    y = h.remainder(_divisor(m, needs_grad))
    h.add_(1)
    try:
        y.sum().backward()
    except RuntimeError as error:
        assert re.search("modified by an in-?place operation", str(error))
        return "raises"
    return x.grad.numpy().copy()


@pytest.mark.parametrize("needs_grad", [False, True])
def test_remainder_input_changed_in_place_as_torch(backend: str, needs_grad: bool) -> None:
    """The dividend is read only for the divisor's gradient: torch saves it only then."""
    _same(_input_changed(tw, needs_grad), _input_changed(torch, needs_grad))


#: Composites that torch records as one node saving numbers only, each with its operands.
MARKED = {
    "add(alpha=)": lambda m, x: (m.add, (x, x.flip(0)), {"alpha": 2}),
    "lerp(weight=float)": lambda m, x: (m.lerp, (x, m.ones_like(x), 0.3), {}),
}


def _marked(case: str) -> Callable[[Any, Any], Any]:
    """The op; in tensorweaver its nodes marked, as the op itself would mark them."""

    def run(m: Any, x: Any) -> Any:
        op, args, keywords = MARKED[case](m, x)
        out = op(*args, **keywords)
        if m is tw:
            return frees_nothing(out, *(a for a in args if isinstance(a, tw.Tensor)))
        return out

    return run


@pytest.mark.parametrize("case", list(MARKED))
def test_a_composite_marked_as_freeing_nothing_runs_again(backend: str, case: str) -> None:
    want = _twice(torch, _marked(case))
    assert not isinstance(want, str)  # (torch's one node runs again)
    _same(_twice(tw, _marked(case)), want)


def test_marking_stops_at_the_operands(backend: str) -> None:
    """The operands' own history (an exp, which saves its output) is still freed."""

    def marked(m: Any, x: Any) -> Any:
        e = x.exp()
        return frees_nothing(tw.add(e, x, alpha=2), e, x)

    assert _twice(tw, marked) == "raises"
    assert _twice(torch, lambda m, x: m.add(x.exp(), x, alpha=2)) == "raises"


#: Composites whose recorded nodes save tensors where torch's one node saves none: their ops
#: need ``frees_nothing(out, *operands)`` (ops/elementwise.py, ops/movement.py: not ours).
NOT_MARKED = {
    "rsub(alpha=)": (
        lambda m, x: m.rsub(x, 1.0, alpha=2),
        "rsub's alpha goes through a mul node (ops/elementwise.py), which saves its operands",
    ),
    "lerp(start=const)": (
        lambda m, x: m.lerp(m.ones_like(x), x, 0.3),
        "lerp with a number weight records a mul by a constant tensor, which it saves",
    ),
}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=why))
        for name, (_, why) in NOT_MARKED.items()
    ],
)
def test_second_backward_of_unmarked_composites(backend: str, case: str) -> None:
    make = NOT_MARKED[case][0]
    _same(_twice(tw, make), _twice(torch, make))


@pytest.mark.xfail(
    strict=True,
    reason="addcdiv is a composite (ops/elementwise.py) whose product by value over a "
    "constant tensor2 keeps nothing that backward frees on self's path; torch's "
    "AddcdivBackward0 saves tensor1 and tensor2 whatever needs a gradient, so its second "
    "backward raises",
)
def test_addcdiv_second_backward_raises_as_torch(backend: str) -> None:
    def make(m: Any, x: Any) -> Any:
        return m.addcdiv(x, m.ones_like(x), m.full_like(x, 2.0), value=2)

    _same(_twice(tw, make), _twice(torch, make))
