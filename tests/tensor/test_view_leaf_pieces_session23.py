"""An in-place change of a piece of a leaf that is itself a view, the piece cut before the
leaf's ``requires_grad_()``: PyTorch's piece requires grad only through its root base (the
tensor the leaf views), which does not, so the change writes into the leaf unrecorded;
compared with torch 2.13 (tensor.py ``_assign``'s write-back)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

CUTS: dict[str, Callable[[Any], Any]] = {
    "chunk": lambda x: x.chunk(1)[0],
    "index": lambda x: x[0],
    "flat_slice": lambda x: x.view(6)[1:3],
}


def _outcome(m: Any, cut: Callable[[Any], Any], root_requires_grad: bool) -> Any:
    """The leaf, its piece's requires_grad and the leaf's gradient after the change, or
    the error's class."""
    root = m.arange(6.0, dtype=m.float64)
    x = root.reshape(2, 3)
    piece = cut(x)
    (root if root_requires_grad else x).requires_grad_()
    try:
        piece.mul_(2)
        (x * x).sum().backward()
    except RuntimeError as e:
        return type(e).__name__
    grad = root.grad if root_requires_grad else x.grad
    return x.tolist(), piece.requires_grad, grad.tolist()


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("root_requires_grad", [False, True], ids=["leaf_view", "root"])
@pytest.mark.parametrize("cut", list(CUTS))
def test_piece_of_a_view_changed_after_requires_grad(
    spec: str, cut: str, root_requires_grad: bool
) -> None:
    want = _outcome(torch, CUTS[cut], root_requires_grad)
    with entered(spec):
        assert _outcome(tw, CUTS[cut], root_requires_grad) == want
