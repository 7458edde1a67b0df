"""An FFT-based model trains on NumPy and torch:cpu exactly as its PyTorch twin: a Fourier
neural operator layer (rfft, the low modes mixed across channels by complex weights stored
as a real parameter viewed as complex, irfft) learns a smoothing operator on random 1-d
signals; in float64 every step's loss matches PyTorch's within 1e-10."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch

N, WIDTH, MODES, BATCH, STEPS = 32, 4, 6, 8, 15


@pytest.fixture
def float64(backend: str) -> Any:
    """tensorweaver's default dtype float64 for the test (PyTorch's is set around its run)."""
    previous = tw.get_default_dtype()
    tw.set_default_dtype(tw.float64)
    yield
    tw.set_default_dtype(previous)


def _model(m: Any, weights: dict[str, np.ndarray]) -> Any:
    """The same network for m = torch and m = tensorweaver, from the same weights."""

    class SpectralConv1d(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            # (in, out, modes, 2): real and imaginary parts, viewed as complex in forward
            self.weight = m.nn.Parameter(m.tensor(weights["spectral.weight"]))

        def forward(self, x: Any) -> Any:
            x_ft = m.fft.rfft(x)  # (batch, in, N // 2 + 1)
            w = m.view_as_complex(self.weight)
            low = (x_ft[:, :, None, :MODES] * w[None]).sum(1)  # (batch, out, modes)
            high = m.zeros(x.shape[0], WIDTH, N // 2 + 1 - MODES, dtype=low.dtype)
            return m.fft.irfft(m.cat([low, high], dim=-1), n=N)

    class FNO(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lift = m.nn.Linear(1, WIDTH)
            self.spectral = SpectralConv1d()
            self.pointwise = m.nn.Linear(WIDTH, WIDTH)
            self.project = m.nn.Linear(WIDTH, 1)

        def forward(self, u: Any) -> Any:  # u: (batch, N)
            h = self.lift(u[..., None]).transpose(1, 2)  # (batch, width, N)
            h = self.spectral(h) + self.pointwise(h.transpose(1, 2)).transpose(1, 2)
            h = m.tanh(h)
            return self.project(h.transpose(1, 2))[..., 0]

    model = FNO()
    with m.no_grad():
        for name, p in model.named_parameters():
            if name in weights:
                p.copy_(m.tensor(weights[name]))
    return model


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    scale = 1.0 / WIDTH
    return {
        "spectral.weight": rng.uniform(-scale, scale, (WIDTH, WIDTH, MODES, 2)),
        "lift.weight": rng.uniform(-1, 1, (WIDTH, 1)),
        "lift.bias": rng.uniform(-1, 1, WIDTH),
        "pointwise.weight": rng.uniform(-0.5, 0.5, (WIDTH, WIDTH)),
        "pointwise.bias": rng.uniform(-0.5, 0.5, WIDTH),
        "project.weight": rng.uniform(-0.5, 0.5, (1, WIDTH)),
        "project.bias": rng.uniform(-0.5, 0.5, 1),
    }


def _data(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Random smooth periodic signals and their circular convolution with a Gaussian."""
    grid = np.arange(N) / N
    k = np.arange(1, 5)
    u = (rng.standard_normal((BATCH, 4, 1)) * np.sin(2 * np.pi * k[:, None] * grid)).sum(1)
    kernel = np.exp(-0.5 * ((grid - 0.5) / 0.05) ** 2)
    kernel = np.roll(kernel / kernel.sum(), -N // 2)
    target = np.fft.irfft(np.fft.rfft(u) * np.fft.rfft(kernel), n=N)
    return u, target


def _train(m: Any, weights: dict, u: np.ndarray, target: np.ndarray) -> list[float]:
    model = _model(m, weights)
    opt = m.optim.Adam(model.parameters(), lr=0.02)
    x, y = m.tensor(u), m.tensor(target)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


@pytest.mark.usefixtures("float64")
def test_fourier_layer_trains_like_torch(backend: str) -> None:
    rng = np.random.default_rng(0)
    weights, (u, target) = _weights(rng), _data(rng)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        theirs = _train(torch, weights, u, target)
    finally:
        torch.set_default_dtype(previous)
    ours = _train(tw, weights, u, target)
    assert theirs[-1] < 0.5 * theirs[0]  # it learns
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)
