"""Review of the half-precision normalizations (``half_norms.py``) against PyTorch 2.13.

The running statistics of a float16 or bfloat16 batch norm moved with other momenta than 0.1
(``nn.BatchNorm``'s ``momentum=None`` passes 1, 1/2, 1/3, ...) came out a half-ulp off:
bfloat16 rounded ``1 - momentum`` directly where PyTorch takes one minus the rounded momentum
(525 of 640 running values differed for 1/3), and float16 multiplied in float64 where
PyTorch multiplies in float32 (5 of 640 for 0.1, 0.3, 1/7).

The inputs are multiples of 1/4 in batches of 8: the batch means and sums of squares are exact
in any order, so the comparison does not depend on the machine's summation order; the moving
averages are elementwise products and sums, in PyTorch's scalar code.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

#: (device, dtype) pairs that have the dtype: NumPy has no bfloat16.
LOW = [("numpy", "float16"), ("torch:cpu", "float16"), ("torch:cpu", "bfloat16")]


def _quarters(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return (np.random.default_rng(seed).integers(-8, 9, size=shape) / 4).astype(np.float32)


def _differ(got: tw.Tensor, expected: torch.Tensor) -> int:
    assert got.dtype.name == str(expected.dtype).removeprefix("torch.")
    return int(np.sum(got.detach().float().numpy() != expected.detach().float().numpy()))


@pytest.mark.parametrize("momentum", [0.1, 0.3, 1 / 3, 1 / 7, 0.9])
@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_running_statistics_move_as_pytorchs(spec: str, dtype: str, momentum: float):
    differ = 0
    for seed in range(8):
        x = _quarters(seed, (8, 16))
        stats = np.random.default_rng(100 + seed)
        mean0 = stats.normal(size=16).astype(np.float32)
        var0 = stats.uniform(0.5, 2.0, size=16).astype(np.float32)
        t_mean = torch.tensor(mean0).to(getattr(torch, dtype))
        t_var = torch.tensor(var0).to(getattr(torch, dtype))
        t_x = torch.tensor(x).to(getattr(torch, dtype))
        torch.nn.functional.batch_norm(t_x, t_mean, t_var, training=True, momentum=momentum)
        with entered(spec, seed=0):
            w_mean = tw.tensor(mean0).to(getattr(tw, dtype))
            w_var = tw.tensor(var0).to(getattr(tw, dtype))
            w_x = tw.tensor(x).to(getattr(tw, dtype))
            tw.nn.functional.batch_norm(w_x, w_mean, w_var, training=True, momentum=momentum)
            differ += _differ(w_mean, t_mean) + _differ(w_var, t_var)
    assert differ == 0, f"{differ} of 256 running values differ"


@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_batch_norm_cumulative_average_matches_pytorch(spec: str, dtype: str) -> None:
    # nn.BatchNorm2d(momentum=None): the cumulative average (momenta 1, 1/2, 1/3, 1/4), then
    # eval on those statistics (before: bfloat16's running statistics differed in all 3
    # channels and 89 of 192 eval outputs).
    ref = torch.nn.BatchNorm2d(3, momentum=None).to(getattr(torch, dtype))
    with entered(spec, seed=0):
        layer = tw.nn.BatchNorm2d(3, momentum=None).to(getattr(tw, dtype))
        for step in range(4):
            x = _quarters(step, (4, 3, 2, 4))
            got = layer(tw.tensor(x).to(getattr(tw, dtype)))
            assert _differ(got, ref(torch.tensor(x).to(getattr(torch, dtype)))) == 0
        assert _differ(layer.running_mean, ref.running_mean) == 0
        assert _differ(layer.running_var, ref.running_var) == 0
        assert int(layer.num_batches_tracked) == int(ref.num_batches_tracked)
        ref.eval()
        layer.eval()
        x = _quarters(9, (4, 3, 2, 4))
        got = layer(tw.tensor(x).to(getattr(tw, dtype)))
        assert _differ(got, ref(torch.tensor(x).to(getattr(torch, dtype)))) == 0
