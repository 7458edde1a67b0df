"""What the twenty-sixth session's cuts of a linalg or fft call's fixed cost must leave as it
was, compared with torch 2.13: the node of a call with several outputs (slogdet,
triangular_solve) hands its rule's gradients on without the checks of a user's Function
(autograd/function.py ``_well_formed``), while a user's Function of several outputs is still
checked; a cached fft plan tells whether its input requires grad from the tensor's slots,
reading a view's flag from its base as the property does."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from snippet_outcomes import same_each

SPECS = ["numpy", "torch:cpu"]


def _spd(m: Any, *batch: int) -> Any:
    x = np.random.default_rng(0).standard_normal((*batch, 3, 3))
    return m.tensor(x @ np.swapaxes(x, -1, -2) + 3 * np.eye(3), requires_grad=True)


def _slogdet_logabs(m: Any) -> Any:
    a = _spd(m, 2)
    m.linalg.slogdet(a)[1].sum().backward()
    return a.grad


def _slogdet_sign_only(m: Any) -> Any:
    a = _spd(m, 2)
    sign, _ = m.linalg.slogdet(a)
    sign.sum().backward()
    return a.grad


def _slogdet_hooked(m: Any) -> Any:
    a = _spd(m, 2)
    sign, logabs = m.linalg.slogdet(a)
    seen = []
    logabs.grad_fn.register_hook(lambda gi, go: seen.append((gi, go)))
    (logabs * m.tensor([2.0, 3.0], dtype=m.float64)).sum().backward()
    return seen, a.grad


def _triangular_solve_broadcast(m: Any) -> Any:
    rng = np.random.default_rng(1)
    a = m.tensor(np.triu(rng.standard_normal((4, 3, 3))) + 3 * np.eye(3), requires_grad=True)
    b = m.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    x, copy = m.triangular_solve(b, a)
    (x.sum() + copy.sum()).backward()
    return x, b.grad, a.grad


def _function(m: Any, returned: str) -> Any:
    """A user's Function of two outputs whose backward returns ``returned``: too many
    gradients, or one of a shape that does not sum to its input's."""

    class Two(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2, x * 3

        @staticmethod
        def backward(ctx: Any, g1: Any, g2: Any) -> Any:
            if returned == "extra":
                return g1, g2
            return m.ones(5, dtype=m.float64)

    x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
    a, b = Two.apply(x)
    (a + b).sum().backward()
    return x.grad


@pytest.mark.parametrize("spec", SPECS)
def test_several_outputs_nodes_as_torch(spec: str) -> None:
    same_each(
        {
            "slogdet": _slogdet_logabs,
            "slogdet sign only": _slogdet_sign_only,
            "slogdet hooked": _slogdet_hooked,
            "triangular_solve broadcast": _triangular_solve_broadcast,
            "user Function, extra gradient": lambda m: _function(m, "extra"),
            "user Function, wrong shape": lambda m: _function(m, "shape"),
        },
        spec,
    )


def _rfft_twice(m: Any, view: str) -> Any:
    """rfft of a view of a leaf, twice (tw's second call runs the cached plan), and the
    leaf's gradient: the view made in grad mode, under no_grad, or before its base was made
    to require grad."""
    base = m.tensor(np.arange(16.0).reshape(2, 8))
    if view == "after":
        x = base[0]
        base.requires_grad_()
    else:
        base.requires_grad_()
        if view == "no_grad":
            with m.no_grad():
                x = base[0]
        else:
            x = base[0]
    flags = []
    for _ in range(2):
        y = m.fft.rfft(x)
        flags.append(y.requires_grad)
    if y.requires_grad:
        y.abs().sum().backward()
    return flags, base.grad


@pytest.mark.parametrize("spec", SPECS)
def test_cached_fft_plan_reads_a_views_flag(spec: str) -> None:
    same_each(
        {f"view {v}": (lambda m, v=v: _rfft_twice(m, v)) for v in ("grad", "no_grad", "after")},
        spec,
    )
