"""tw.fft is PyTorch's namespace, loaded on first use; its results carry PyTorch's grad_fn
names; its primitives are optional in the backend contract."""

from __future__ import annotations

import subprocess
import sys

import tensorweaver as tw
import torch
from tensorweaver.contract.ir import OPTIONAL, REQUIRED


def test_every_torch_fft_function_is_there() -> None:
    # torch.fft.__all__ leaves out the Hermitian n-dimensional ones, which it has too
    names = {n for n in dir(torch.fft) if not n.startswith("_") and n != "Tensor"}
    names = {n for n in names if callable(getattr(torch.fft, n))}
    assert names == set(tw.fft.__all__)


def test_import_tensorweaver_does_not_load_fft() -> None:
    code = "import sys, tensorweaver as tw; print('tensorweaver.fft' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_primitives_are_optional() -> None:
    for name in ["fft_c2c", "fft_r2c", "fft_c2r"]:
        assert name in OPTIONAL and name not in REQUIRED


def test_grad_fn_names_like_torch(backend: str) -> None:
    z = tw.randn(4, dtype=tw.complex64, requires_grad=True)
    x = tw.randn(4, requires_grad=True)
    assert type(tw.fft.fft(z).grad_fn).__name__ == "FftC2CBackward0"
    assert type(tw.fft.rfft(x).grad_fn).__name__ == "FftR2CBackward0"
    assert type(tw.fft.irfft(z).grad_fn).__name__ == "FftC2RBackward0"
