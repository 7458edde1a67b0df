"""Review of the compiled step's guard: facts that change what a step computes must make a
compiled step trace again (or raise), never replay the graph traced before the change."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn


def _losses(change: Callable[[nn.Module], None], compiled: bool) -> np.ndarray:
    """Three steps, ``change`` of the model, three more steps: the losses."""
    tw.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Dropout(0.0), nn.ReLU(), nn.Linear(6, 3))
    optim = tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    x = tw.tensor(rng.standard_normal((8, 4)), dtype=tw.float32)
    y = tw.tensor(rng.integers(0, 3, 8))

    def step() -> tw.Tensor:
        optim.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optim.step()
        return loss

    run = tw.compile(step) if compiled else step
    losses = [float(run()) for _ in range(3)]
    change(model)
    losses += [float(run()) for _ in range(3)]
    return np.array(losses)


def _forward_hook(model: nn.Module) -> None:
    model[0].register_forward_hook(lambda m, args, out: out * 2)


def _forward_pre_hook(model: nn.Module) -> None:
    model[0].register_forward_pre_hook(lambda m, args: (args[0] * 3,))


def _dropout_everything(model: nn.Module) -> None:
    tw.manual_seed(1)
    model[1].p = 1.0  # every activation dropped: the output is the last bias alone


def _tensor_hook(model: nn.Module) -> None:
    model[0].weight.register_hook(lambda g: g * 0)


def _backward_hook(model: nn.Module) -> None:
    model[3].register_full_backward_hook(lambda m, grad_in, grad_out: (grad_in[0] * 0,))


@pytest.mark.parametrize(
    "change",
    [
        _forward_hook,
        _forward_pre_hook,
        _dropout_everything,
        _tensor_hook,
        _backward_hook,
    ],
)
def test_a_changed_module_is_not_replayed_stale(change: Callable[[nn.Module], None]) -> None:
    eager = _losses(change, compiled=False)
    compiled = _losses(change, compiled=True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-5, atol=1e-6)
