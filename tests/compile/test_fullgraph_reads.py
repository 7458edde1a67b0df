"""``fullgraph=True`` refuses data-dependent Python (issue 16): every way a step reads tensor
values into Python raises :class:`HostRead` naming the user's line, on every call (never a
silent eager fallback), from a helper the step calls and from a compiled module's forward,
and leaves the backend unrecorded afterwards."""

from __future__ import annotations

import inspect
import warnings
from typing import Callable

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning, HostRead

DEVICES = ["numpy", "torch:cpu"]


def item(x: tw.Tensor) -> tw.Tensor:
    return x * x.sum().item()  # the read


def comparison(x: tw.Tensor) -> tw.Tensor:
    if x.sum() > 0:  # the read
        return x * 2
    return x


def truth(x: tw.Tensor) -> tw.Tensor:
    return x * 2 if bool((x > 0).all()) else x  # the read


def integer(x: tw.Tensor) -> tw.Tensor:
    return x * int(x.argmax())  # the read


def to_list(x: tw.Tensor) -> tw.Tensor:
    return x * len([v for v in x.tolist() if v > 0])  # the read


def any_(x: tw.Tensor) -> tw.Tensor:
    return x * 2 if x.any() else x  # the read


def equal(x: tw.Tensor) -> tw.Tensor:
    return x * 2 if tw.equal(x, x.abs()) else x  # the read


def shared(x: tw.Tensor) -> tw.Tensor:
    return x * float(x.numpy().sum())  # the read


def helper(t: tw.Tensor) -> float:
    return t.max().item()  # the read


def via_helper(x: tw.Tensor) -> tw.Tensor:
    return x / helper(x)


STEPS = [item, comparison, truth, integer, to_list, any_, equal, shared, via_helper]


def line_of(fn: Callable, marker: str = "# the read") -> int:
    """The line of ``marker`` in ``fn``'s source (in a helper for ``via_helper``)."""
    fn = helper if fn is via_helper else fn
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("step", STEPS, ids=lambda f: f.__name__)
def test_fullgraph_raises_at_every_read_naming_the_line(device: str, step: Callable) -> None:
    strict = tw.compile(step, fullgraph=True)
    x = tw.tensor([1.0, -2.0, 3.0], device=device)
    for _ in range(2):  # the second call raises too: nothing fell back to eager
        with pytest.raises(HostRead, match=rf"test_fullgraph_reads\.py:{line_of(step)}\b"):
            strict(x)
    assert not [k for k, v in vars(x.backend).items() if getattr(v, "_tw_recording", 0)]
    # The same step without fullgraph replays the read or runs eagerly (with a warning):
    # the eager result either way.
    relaxed = tw.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        for _ in range(3):
            assert tw.equal(relaxed(x), step(x))


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x: tw.Tensor) -> tw.Tensor:
        y = self.linear(x)
        if y.mean() > 0:  # the branch
            return y.relu()
        return y


@pytest.mark.parametrize("device", DEVICES)
def test_fullgraph_raises_in_a_module_forward(device: str) -> None:
    tw.manual_seed(0)
    with tw.device(device):
        model = Gate()
    strict = tw.compile(model, fullgraph=True)
    x = tw.tensor(np.ones((2, 3), dtype=np.float32), device=device)
    line = line_of(Gate.forward, "# the branch")
    with pytest.raises(HostRead, match=rf"test_fullgraph_reads\.py:{line}\b"):
        strict(x).sum().backward()
    assert all(p.grad is None for p in model.parameters())
