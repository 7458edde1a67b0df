"""The nodes of shape-only ops (autograd/node.py ``SHAPE_ONLY_OPS``) keep an ``InputShape`` of
each input, made in ``Node.__init__``'s own loop since session 27 (issue 16: its fields set
in line, not through ``InputShape(t)``): what it keeps must be what ``InputShape(t)`` keeps,
and backward through such nodes must behave as PyTorch's, whose nodes for those ops save no
input (an in-place change of one after the op is no error)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.autograd.node import InputShape

#: Shape-only ops, each on ``(x, y)`` of shape (2, 3): its output and the op's inputs.
OPS: dict[str, Callable[[Any, Any], tuple]] = {
    "add": lambda x, y: (x + y, (x, y)),
    "sub": lambda x, y: (x - y, (x, y)),
    "neg": lambda x, y: (-x, (x,)),
    "relu": lambda x, y: (x.relu(), (x,)),
    "reshape": lambda x, y: (x.reshape(3, 2), (x,)),
    "permute": lambda x, y: (x.permute(1, 0), (x,)),
    "flip": lambda x, y: (x.flip(0), (x,)),
    "sum": lambda x, y: (y.sum(0), (y,)),
}


def _leaves(lib: Any) -> tuple:
    values = np.random.default_rng(0).standard_normal((2, 2, 3))
    return (lib.tensor(values[0], requires_grad=True), lib.tensor(values[1], requires_grad=True))


@pytest.mark.parametrize("op", list(OPS))
def test_shape_only_node_keeps_what_input_shape_keeps(backend: str, op: str) -> None:
    a, y = _leaves(tw)
    x = a * 1  # (an input with a node of its own)
    with tw.no_grad():
        y.mul_(1.0)  # (an input at a version past 0, which the kept shape records)
    out, inputs = OPS[op](x, y)
    node = out._node
    assert node.op == op
    assert len(node.inputs) == len(inputs)
    for kept, t in zip(node.inputs, inputs):
        want = InputShape(t)
        assert type(kept) is InputShape
        got = (kept.shape, kept.dtype, kept.backend, kept._version)
        assert got == (want.shape, want.dtype, want.backend, want._version)
    assert node.versions == tuple(t._version for t in inputs)


@pytest.mark.parametrize("op", list(OPS))
def test_in_place_change_after_shape_only_op_like_torch(backend: str, op: str) -> None:
    results = []
    for lib in (tw, torch):
        a, y = _leaves(lib)
        x = a * 1
        out, _ = OPS[op](x, y)
        weight = lib.tensor(np.arange(out.numel(), dtype=np.float64).reshape(tuple(out.shape)))
        with lib.no_grad():
            y.mul_(2.0)  # (no node saved y: backward goes on, as PyTorch's)
        (out * weight).sum().backward()
        results.append([None if t.grad is None else np.asarray(t.grad) for t in (a, y)])
    for got, want in zip(*results):
        assert (got is None) == (want is None)
        if got is not None:
            np.testing.assert_allclose(got, want)
