"""Regression tests for the differences from torch 2.13 that a review of the fifteenth
session's dtype fixes (half var, log1p, round, complex expm1/log1p/tan) and complex
linear/convolution gradients found: each compares with real torch on the ``backend`` fixture's
devices (numpy and torch:cpu)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch


def _values(t: tw.Tensor | torch.Tensor) -> np.ndarray:
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().numpy()
    return np.asarray(t.detach())


@pytest.mark.parametrize(
    ("dtype", "value", "decimals"),
    [("float32", 7148.0855, -3), ("float32", -6486.8876, -3), ("float16", -6500.0, -3)],
)
def test_round_negative_decimals_divides_by_the_power_of_ten(
    backend: str, dtype: str, value: float, decimals: int
) -> None:
    # Before: x * 0.001 (inexact) then / 0.001 gave 6999.9995 in float32, and -7000 for
    # float16 -6500 (-6.5000005 rounds away); torch divides by 1000 then multiplies.
    theirs = torch.round(torch.tensor([value], dtype=getattr(torch, dtype)), decimals=decimals)
    ours = tw.round(tw.tensor(theirs.new_tensor([value]).numpy()), decimals=decimals)
    assert ours.dtype.name == dtype
    np.testing.assert_array_equal(_values(ours), _values(theirs))


def test_round_negative_decimals_sweep_matches_torch(backend: str) -> None:
    values = np.random.default_rng(15).uniform(-1e4, 1e4, 400).astype(np.float32)
    for decimals in (-3, -2, -1):
        theirs = torch.round(torch.from_numpy(values), decimals=decimals)
        ours = tw.round(tw.tensor(values), decimals=decimals)
        np.testing.assert_array_equal(_values(ours), _values(theirs))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_log1p_infinite_imaginary_part_as_torch_cpu(backend: str, dtype: str) -> None:
    # torch's CPU kernel is log(u) * (z / (u - 1)), u = 1 + z: NaN + NaNj where 1 + x loses
    # the finite real part x and y is infinite; before: inf +- pi/2 j.
    z = np.array(
        [
            complex(1e-30, math.inf),
            complex(-1e-30, -math.inf),
            complex(1e-8, math.inf),
            complex(0.0, math.inf),
            complex(1.0, -math.inf),
            complex(-1.0, math.inf),
            complex(math.inf, math.inf),
            complex(1e-3, 1e20),
        ],
        dtype=dtype,
    )
    theirs = torch.log1p(torch.from_numpy(z))
    ours = tw.log1p(tw.tensor(z))
    np.testing.assert_allclose(_values(ours), _values(theirs), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_log1p_gradient_unchanged_at_ordinary_values(backend: str, dtype: str) -> None:
    rng = np.random.default_rng(7)
    z = (rng.standard_normal(12) + 1j * rng.standard_normal(12)).astype(dtype)
    g = (rng.standard_normal(12) + 1j * rng.standard_normal(12)).astype(dtype)
    theirs = torch.from_numpy(z).requires_grad_()
    torch.log1p(theirs).backward(torch.from_numpy(g))
    ours = tw.tensor(z, requires_grad=True)
    tw.log1p(ours).backward(tw.tensor(g))
    np.testing.assert_allclose(_values(ours.grad), _values(theirs.grad), rtol=1e-5)


def test_complex_bilinear_with_only_the_bias_requiring_grad(backend: str) -> None:
    # torch adds the bias after _trilinear: only _trilinear's operands requiring grad make it
    # refuse. Before: RuntimeError whenever the bias required grad.
    rng = np.random.default_rng(3)
    shapes = ((2, 3), (2, 4), (5, 3, 4), (5,))
    parts = [rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in shapes]
    theirs = [torch.from_numpy(p) for p in parts]
    theirs[3].requires_grad_()
    ours = [tw.tensor(p) for p in parts]
    ours[3].requires_grad_()
    out_theirs = torch.nn.functional.bilinear(*theirs)
    out_ours = F.bilinear(*ours)
    np.testing.assert_allclose(_values(out_ours), _values(out_theirs), rtol=1e-10)
    g = rng.standard_normal((2, 5)) + 1j * rng.standard_normal((2, 5))
    out_theirs.backward(torch.from_numpy(g))
    out_ours.backward(tw.tensor(g))
    np.testing.assert_allclose(_values(ours[3].grad), _values(theirs[3].grad), rtol=1e-10)


def test_complex_bilinear_weight_requiring_grad_still_refused(backend: str) -> None:
    rng = np.random.default_rng(4)
    parts = [rng.standard_normal(s) + 1j for s in ((2, 3), (2, 4), (5, 3, 4))]
    with pytest.raises(RuntimeError, match="_trilinear"):
        torch.nn.functional.bilinear(
            *(torch.from_numpy(p) for p in parts[:2]), torch.from_numpy(parts[2]).requires_grad_()
        )
    with pytest.raises(RuntimeError, match="_trilinear"):
        F.bilinear(
            tw.tensor(parts[0]), tw.tensor(parts[1]), tw.tensor(parts[2], requires_grad=True)
        )
