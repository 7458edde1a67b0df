"""The distribution tests run on NumPy and PyTorch's CPU (and cuPyNumeric where marked), in
float64 with a fixed seed, each against ``torch.distributions``."""

from __future__ import annotations

from pathlib import Path

from tw_backends import backend_folder

HERE = Path(__file__).parent
globals().update(backend_folder(HERE, float64=True, seed=0))
