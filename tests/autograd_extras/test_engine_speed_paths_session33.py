"""Paths of every training step, held to what torch 2.13 gives: ``Module.parameters()`` (it
runs in ``zero_grad()``, ``clip_grad_norm_()`` and the update loop of each step) yields what
``named_parameters()`` does, in its order: each parameter once (shared modules and tied
parameters), None entries skipped, a child class's own ``named_modules`` and a root class's
own ``named_parameters`` followed, ``recurse=False``; and the engine makes a leaf's new dense
``.grad`` with the gradient's Size instead of finding it again (autograd/engine.py
``_finish``, session 33): its shape, layout (channels-last kept), dtype, values and later
in-place accumulation as torch's."""

from __future__ import annotations

from typing import Any

import pytest
from snippet_outcomes import same_each
from tw_backends import FAST


def _tree(m: Any) -> Any:
    """Modules whose parameters have distinct shapes, so that a walk's order shows."""
    nn = m.nn

    class OwnWalk(nn.Module):
        """Walks its own part: ``b`` (named by the prefix it is given) and never ``a``."""

        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(1, 2)
            self.b = nn.Linear(3, 4)

        def named_modules(self, memo: Any = None, prefix: str = "", remove_duplicate: bool = True):
            yield prefix, self
            yield f"{prefix}.b", self.b

    shared = nn.Linear(5, 6)
    inner = nn.Sequential(nn.Linear(2, 7), shared, nn.Sequential(nn.Linear(7, 3), OwnWalk()))
    root = nn.Sequential(shared, inner, OwnWalk(), shared)
    root.add_module("missing", None)
    root.register_parameter("own", nn.Parameter(m.zeros(8)))
    root.register_parameter("unset", None)
    inner[0].register_parameter("tied", shared.weight)  # one parameter in two modules
    return root


def _shapes(params: Any) -> list:
    return [tuple(p.shape) for p in params]


def _own_named_parameters(m: Any) -> Any:
    class Chosen(m.nn.Sequential):
        def named_parameters(self, prefix: str = "", recurse: bool = True, **kw: Any):
            for name, p in super().named_parameters(prefix, recurse, **kw):
                if name.endswith("bias"):
                    yield name, p

    return Chosen(m.nn.Linear(2, 3), m.nn.Linear(3, 5))


WALKS = {
    "order": lambda m: _shapes(_tree(m).parameters()),
    "named-order": lambda m: [(n, tuple(p.shape)) for n, p in _tree(m).named_parameters()],
    "same-objects": lambda m: (
        lambda t: [id(p) for p in t.parameters()] == [id(p) for _, p in t.named_parameters()]
    )(_tree(m)),
    "not-recursive": lambda m: _shapes(_tree(m).parameters(recurse=False)),
    "child-not-recursive": lambda m: _shapes(_tree(m)[1].parameters(False)),
    "own-named-parameters": lambda m: _shapes(_own_named_parameters(m).parameters()),
    "zero-grad": lambda m: _zeroed(m),
}


def _zeroed(m: Any) -> list:
    tree = _tree(m)
    for p in tree.parameters():
        p.grad = m.ones_like(p)
    tree[2].zero_grad()  # (the OwnWalk child: its own walk reaches b alone)
    return [p.grad is None for p in tree.parameters()]


@pytest.mark.parametrize("spec", FAST)
def test_parameters_walk_as_torch(spec: str) -> None:
    same_each(WALKS, spec)


def _accumulated(m: Any) -> tuple:
    x = m.arange(12.0, dtype=m.float64).view(3, 4).requires_grad_()
    w = m.linspace(-1, 1, 4, dtype=m.float64).requires_grad_()
    (x * w).sum().backward()
    first = x.grad
    (x * w).sum().backward()  # (into the first .grad, in place)
    return x.grad, w.grad, first is x.grad, x.grad.shape, x.grad.is_leaf, x.grad._version


def _channels_last(m: Any) -> tuple:
    x = m.arange(120.0, dtype=m.float64).view(2, 3, 4, 5)
    x = x.to(memory_format=m.channels_last).requires_grad_()
    (x * x).sum().backward()
    return x.grad.stride(), x.grad.shape, x.grad


def _broadcast_and_cast(m: Any) -> tuple:
    x = m.ones(3, dtype=m.float32, requires_grad=True)
    (x.expand(2, 3).double() * m.arange(6.0, dtype=m.float64).view(2, 3)).sum().backward()
    return x.grad, x.grad.dtype, x.grad.shape, x.grad.stride()


LEAF_GRADIENTS = {
    "accumulated": _accumulated,
    "channels-last": _channels_last,
    "broadcast-and-cast": _broadcast_and_cast,
}


@pytest.mark.parametrize("spec", FAST)
def test_leaf_gradients_as_torch(spec: str) -> None:
    same_each(LEAF_GRADIENTS, spec)
