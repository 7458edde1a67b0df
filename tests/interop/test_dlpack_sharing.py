"""A DLPack consumer shares the tensor's memory both ways, as with torch's ``__dlpack__``:
in-place changes of the tensor after the export reach the consumer, and the consumer's
writes reach the tensor (the export handed out the current array, which the tensor's next
in-place method replaced: the consumer kept the old values)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw

torch = pytest.importorskip("torch")


def _program(m: Any, device: str | None) -> list:
    with tw.device(device or "numpy"):
        p = m.nn.Parameter(m.zeros(3))
        x = m.arange(4.0)
    by_torch = torch.from_dlpack(p.detach())
    with m.no_grad():
        p.add_(1)  # reaches both consumers
    by_numpy = np.from_dlpack(p.detach())
    with m.no_grad():
        p.mul_(3)
    by_torch.add_(10)  # reaches p
    view = x[1:]
    shared = np.from_dlpack(view)
    x.add_(1)
    return [by_torch.tolist(), by_numpy.tolist(), p.tolist(), shared.tolist(), view.tolist()]


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_dlpack_consumers_share_memory_like_torch(device: str) -> None:
    assert _program(tw, device) == _program(torch, None)
