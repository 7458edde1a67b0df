"""A cached plan is found by its arguments' values: 1.0 and True equal 1, so after one call
with dim=1 (or n=14, s=(3, 8)) the same call with dim=1.0 or dim=True was answered by the
plan where PyTorch raises TypeError."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch


@pytest.mark.parametrize(
    "name, warm, probe",
    [
        ("fft", {"dim": 1}, {"dim": 1.0}),
        ("fft", {"dim": 1}, {"dim": True}),
        ("rfft", {"dim": -1}, {"dim": -1.0}),
        ("irfft", {"n": 14}, {"n": 14.0}),
        ("fftn", {"dim": (0, 1)}, {"dim": (False, True)}),
        ("fftn", {"s": (3, 8)}, {"s": (3.0, 8.0)}),
        ("irfftn", {"s": (3, 14)}, {"s": (3, 14.0)}),
        ("fft2", {"dim": (0, 1)}, {"dim": (0.0, 1)}),
    ],
)
def test_a_cached_plan_refuses_what_torch_refuses(name: str, warm: dict, probe: dict) -> None:
    rng = np.random.default_rng(3)
    signal = rng.standard_normal((3, 8)) + (0 if name == "rfft" else 1j) * rng.standard_normal(
        (3, 8)
    )
    with pytest.raises(TypeError):
        getattr(torch.fft, name)(torch.tensor(signal), **probe)
    for device in ("numpy", "torch:cpu"):
        with tw.device(device):
            getattr(tw.fft, name)(tw.tensor(signal), **warm)  # remembers the plan
            with pytest.raises(TypeError):
                getattr(tw.fft, name)(tw.tensor(signal), **probe)
