"""``t.data = value`` makes t share value's memory, as PyTorch's tensors then share its
storage: later in-place changes of either are seen by the other (before, t took value's
array once and went its own way at the next write)."""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw

torch = pytest.importorskip("torch")


def _program(m: Any, device: str | None) -> list:
    with tw.device(device or "numpy"):
        p = m.nn.Parameter(m.zeros(2, 3))
        t = m.ones(2, 3)
        w = m.nn.Parameter(m.ones(4))
    p.data = t
    t.add_(1)  # seen by p
    seen = p.detach().clone()
    with m.no_grad():
        p.mul_(3)  # seen by t
    w.data = w.data  # its own alias: no cycle
    w.data = w.data.contiguous()
    with m.no_grad():
        w.add_(1)
    return [seen.tolist(), t.tolist(), p.tolist(), w.tolist()]


@pytest.mark.parametrize("device", ["numpy", "torch:cpu", "cunumeric"])
def test_data_assignment_shares_memory_as_torch(device: str) -> None:
    assert _program(tw, device) == _program(torch, None)
