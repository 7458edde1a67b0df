"""Results of the session-32 fast paths (issue 16) as PyTorch 2.13's: elementwise results made
with their operand's shape (``tensor._shaped``: no read of the array's shape) and broadcast
operands expanded without a tensor of their own, in values, dtype, shape, graph, inference
flag and version; and ``_shaped`` setting every slot ``Tensor.__init__`` sets, alike."""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw
from snippet_outcomes import grad_fn_name, grid, leaf, same_each
from tensorweaver.tensor import Tensor, _shaped


def _results(m: Any, make: Any) -> Any:
    """What a result shows: itself, its shape's class name, whether it requires grad, its
    grad_fn's name, whether it is an inference tensor, and its version."""
    r = make(m)
    return r, type(r.shape).__name__ == "Size", r.requires_grad, grad_fn_name(r), r._version


def _inference_result(m: Any) -> Any:
    with m.inference_mode():
        r = grid(m, 2, 3) * 2.0 + grid(m, 2, 3)
        return r.is_inference(), r.tanh().is_inference(), (1 - r).is_inference()


PROGRAMS = {
    "same_shape": lambda m: _results(m, lambda m: leaf(m, 2, 3) * grid(m, 2, 3)),
    "tensor_number": lambda m: _results(m, lambda m: leaf(m, 2, 3) - 2),
    "number_tensor": lambda m: _results(m, lambda m: 0.5 / leaf(m, 2, 3)),
    "zero_d_number": lambda m: _results(m, lambda m: leaf(m, 1).sum() * 3),
    "unary": lambda m: _results(m, lambda m: leaf(m, 2, 3).tanh()),
    "unary_int": lambda m: _results(m, lambda m: grid(m, 2, 3, dtype=m.int64).exp()),
    "broadcast": lambda m: _results(m, lambda m: leaf(m, 2, 3) + grid(m, 3)),
    "broadcast_both": lambda m: _results(m, lambda m: grid(m, 2, 1) * leaf(m, 1, 3)),
    "broadcast_cast": lambda m: _results(m, lambda m: grid(m, 4, 1, dtype=m.int32) + leaf(m, 3)),
    "where": lambda m: _results(
        m, lambda m: m.where(grid(m, 2, 1) > 1, leaf(m, 3), grid(m, 1, 3, dtype=m.float32))
    ),
    "inference": _inference_result,
    "gradients": lambda m: _gradients(m),
}


def _gradients(m: Any) -> Any:
    x, b = leaf(m, 2, 3), leaf(m, 3)
    ((x * x + b / 3).tanh() * 2 - x).sum().backward()
    return x.grad, b.grad


def test_fast_path_results_like_torch(backend: str) -> None:
    same_each(PROGRAMS, backend, single=3)  # (float32 exp: NumPy rounds its last ulp apart)


@pytest.mark.parametrize("inference", [False, True], ids=["normal", "inference_mode"])
def test_shaped_sets_the_slots_of_the_constructor(backend: str, inference: bool) -> None:
    x = tw.ones(2, 3)
    with tw.inference_mode(inference):
        made = Tensor(x.native, x.backend, x.dtype)
        quick = _shaped(x.native, x.backend, x.dtype, x.shape)
    for slot in Tensor.__slots__:
        if slot == "__weakref__":
            continue
        assert hasattr(made, slot) == hasattr(quick, slot), slot
        if hasattr(made, slot):
            mine, theirs = getattr(made, slot), getattr(quick, slot)
            assert mine is theirs or mine == theirs, slot  # (the one array: is)
