"""A replay's write-backs change parameters and optimizer state as the eager step's
in-place updates do: a new version, written into memory shared with NumPy, passed on to
views and aliases taken before."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorweaver as tw
from tensorweaver import nn


def _kept_after_steps(compiled: bool) -> tuple:
    tw.manual_seed(0)
    lin = nn.Linear(3, 2)
    opt = tw.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
    x = tw.tensor(np.random.default_rng(1).standard_normal((4, 3)), dtype=tw.float32)

    def step() -> Any:
        opt.zero_grad()
        loss = (lin(x) ** 2).sum()
        loss.backward()
        opt.step()
        return loss

    fn = tw.compile(step) if compiled else step
    for _ in range(5):
        fn()
    host = lin.weight.detach().numpy()  # shares the parameter's memory, as PyTorch's
    buffer = opt.state[lin.weight]["momentum_buffer"].numpy()
    view = lin.weight.T
    version = lin.weight._version
    for _ in range(3):
        fn()
    return host.copy(), buffer.copy(), view.detach(), lin.weight._version - version


def test_a_replay_writes_into_shared_memory_and_views_as_eagerly() -> None:
    # The replay rebound the parameters' and the state's arrays: a NumPy array from
    # .numpy() and a view taken before kept the old values (eagerly they follow).
    eager, ours = _kept_after_steps(False), _kept_after_steps(True)
    np.testing.assert_array_equal(ours[0], eager[0])
    np.testing.assert_array_equal(ours[1], eager[1])
    assert tw.equal(ours[2], eager[2])
    assert ours[3] == eager[3] > 0
