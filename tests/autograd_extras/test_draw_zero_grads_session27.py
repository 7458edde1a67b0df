"""The zero gradients that random draws (``normal``, ``bernoulli``, ``poisson``,
``bernoulli_``) give their tensor parameters, against torch 2.13: under ``create_graph=True``
they need no grad and have no history, as torch's zeros (its formulas build them from sizes
alone), whatever the parameters' shapes and dtypes; a parameter changed in place after the draw
does not stop backward (torch's nodes save none of them)."""

from __future__ import annotations

from typing import Any

import pytest
from snippet_outcomes import leaf, same_each
from tw_backends import FAST


def _higher_order(m: Any, how: str) -> tuple:
    mean = leaf(m, 3)
    std = m.ones(1, dtype=m.float32, requires_grad=True)
    y = {
        "normal_tt": lambda: m.normal(mean.float(), std),  # (two dtypes, broadcast)
        "normal_tf": lambda: m.normal(mean.reshape(3, 1), 2.0).expand(3, 2),
        "bernoulli": lambda: m.bernoulli(mean / 4),
        "poisson": lambda: m.poisson(mean),
        "bernoulli_": lambda: m.zeros(3, dtype=m.float64).bernoulli_(mean / 4),
    }[how]()
    grads = m.autograd.grad((y * y).sum(), [mean, std], create_graph=True, allow_unused=True)
    return tuple((g, g.requires_grad, g.grad_fn is None) for g in grads if g is not None)


def _changed_after(m: Any) -> tuple:
    p = leaf(m, 3)
    q = p / 4
    drawn = m.normal(q, q) + m.bernoulli(q) + m.poisson(q)
    q.mul_(1)
    drawn.sum().backward()
    return p.grad


@pytest.mark.parametrize("spec", FAST)
def test_draw_gradients_like_torch(spec: str) -> None:
    hows = ("normal_tt", "normal_tf", "bernoulli", "poisson", "bernoulli_")
    programs = {h: (lambda m, h=h: _higher_order(m, h)) for h in hows}
    programs["changed_after"] = _changed_after
    same_each(programs, spec)
