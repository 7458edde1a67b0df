"""``Tensor.grad_dtype`` and the ``.grad`` setter's dtype check, against torch 2.13.

Before: a ``.grad`` of another dtype was accepted, then accumulated into and stepped with."""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw
import torch


def _outcome(m: Any, steps: Any) -> list:
    """What each step gives: its value (dtypes by name, tensors as lists) or its error class."""
    seen: list = []
    r = m.zeros(2, dtype=m.float64, requires_grad=True)
    for step in steps:
        try:
            out = step(m, r)
        except Exception as e:  # (the class is what is compared)
            seen.append(type(e).__name__)
            continue
        if isinstance(out, (torch.dtype, tw.dtype)):
            out = str(out).split(".")[-1]
        elif isinstance(out, (torch.Tensor, tw.Tensor)):
            out = [str(out.dtype).split(".")[-1], out.tolist()]
        seen.append(out)
    return seen


def _set(name: str | None) -> Any:
    def step(m: Any, r: Any) -> None:
        r.grad_dtype = None if name is None else getattr(m, name)

    return step


def _assign(name: str) -> Any:
    def step(m: Any, r: Any) -> None:
        r.grad = m.ones(2, dtype=getattr(m, name))

    return step


def _backward(m: Any, r: Any) -> Any:
    (r * 2).sum().backward()
    return r.grad


def _clear(m: Any, r: Any) -> None:
    r.grad = None


SEQUENCES = {
    "default": [lambda m, r: r.grad_dtype, _assign("float32"), _assign("int64"), _backward],
    "cast_on_backward": [_set("float32"), _backward, _backward, _assign("float64")],
    "any": [_set(None), lambda m, r: r.grad_dtype, _assign("float16"), _backward],
    "change_with_grad": [_backward, _set("float32"), _clear, _set("float32"), _backward],
    "non_leaf": [lambda m, r: (r * 2).grad_dtype],
    "back_to_own": [_set("float32"), _set("float64"), _assign("float32"), _backward],
}


@pytest.mark.parametrize("sequence", sorted(SEQUENCES))
def test_grad_dtype_like_torch(backend: str, sequence: str) -> None:
    steps = SEQUENCES[sequence]
    assert _outcome(tw, steps) == _outcome(torch, steps)
