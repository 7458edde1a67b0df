"""fill_, zero_ and copy_ of a non-leaf with grad enabled: the old history gets a zero
gradient, as from PyTorch's FillBackward/ZeroBackward/CopyBackwards (the tensor became a
leaf, so its inputs got None: an optimizer then skips what it should decay)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

CHANGES: dict[str, Callable[[Any, Any, Any, Any], Any]] = {
    "fill_": lambda m, y, z, s: y.fill_(3.0),
    "zero_": lambda m, y, z, s: y.zero_(),
    "copy_constant": lambda m, y, z, s: y.copy_(m.tensor([5.0, 6.0], dtype=m.float64)),
    "copy_graph": lambda m, y, z, s: y.copy_(s * 1),
    "fill_tensor": lambda m, y, z, s: y.fill_(z),
}


def _run(m: Any, change: Callable) -> dict:
    x = m.tensor([1.0, 2.0], dtype=m.float64, requires_grad=True)
    z = m.tensor(4.0, dtype=m.float64, requires_grad=True)
    s = m.tensor([5.0, 6.0], dtype=m.float64, requires_grad=True)
    y = x * 2
    change(m, y, z, s)
    (y * m.tensor([1.0, 10.0], dtype=m.float64)).sum().backward()
    grads = [None if t.grad is None else np.asarray(t.grad).tolist() for t in (x, z, s)]
    return {"grad_fn": type(y.grad_fn).__name__, "leaf": y.is_leaf, "grads": grads}


@pytest.mark.parametrize("change", CHANGES, ids=str)
def test_overwriting_a_non_leaf_gives_its_history_zero_gradient(backend: str, change: str) -> None:
    assert _run(tw, CHANGES[change]) == _run(torch, CHANGES[change])
