"""The non-reentrant checkpoint's version check of its inputs, against torch 2.13: torch
recomputes the function in backward only when a node of its graph unpacks a saved tensor,
and then checks every input of the call; a graph that saved none (sums, views, products by
a number) never recomputes, so an input changed in place after the call is no error."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw
import torch


def _functions(m: Any) -> dict[str, Callable[[Any, Any], Any]]:
    return {
        "t * 2 + s": lambda t, s: t * 2 + s,
        "t / 2 - s": lambda t, s: t / 2 - s,
        "t.sum() + s": lambda t, s: t.sum() + s,
        "t.mean() + s": lambda t, s: t.mean() + s,
        "t[1:] + s[:2]": lambda t, s: t[1:] + s[:2],
        "t.reshape(3, 1) + s": lambda t, s: t.reshape(3, 1) + s,
        "cat": lambda t, s: m.cat([t, s]),
        "t.exp() + s": lambda t, s: t.exp() + s,
        "t * s": lambda t, s: t * s,
        "t.sin() + s": lambda t, s: t.sin() + s,
        "relu(t) + s": lambda t, s: m.relu(t) + s,
        "t.abs() + s": lambda t, s: t.abs() + s,
        "2 / t + s": lambda t, s: 2 / t + s,
    }


def _outcome(m: Any, name: str, changed: str) -> Any:
    p = m.ones(3, dtype=m.float64, requires_grad=True)
    t, s = p * 1, p * 2
    out = m.utils.checkpoint.checkpoint(_functions(m)[name], t, s, use_reentrant=False)
    (t if changed == "t" else s).add_(1)
    try:
        out.sum().backward()
    except RuntimeError as error:
        assert "modified by an in" in str(error)
        return "raises"
    return p.grad.tolist()


@pytest.mark.parametrize("changed", ["t", "s"])
@pytest.mark.parametrize("name", list(_functions(torch)))
def test_non_reentrant_checkpoint_checks_inputs_like_torch(name: str, changed: str) -> None:
    assert _outcome(tw, name, changed) == _outcome(torch, name, changed)


def test_reentrant_checkpoint_always_checks_its_inputs() -> None:
    for m in (torch, tw):
        p = m.ones(3, dtype=m.float64, requires_grad=True)
        t = p * 1
        out = m.utils.checkpoint.checkpoint(lambda a: a * 2, t, use_reentrant=True)
        t.add_(1)
        with pytest.raises(RuntimeError, match="modified by an in"):
            out.sum().backward()
