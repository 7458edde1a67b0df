"""The distribution tests run on NumPy and PyTorch's CPU (and cuPyNumeric where marked), in
float64 with a fixed seed, each against ``torch.distributions``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tw_backends import backend_folder

HERE = Path(__file__).parent
globals().update(backend_folder(HERE, float64=True, seed=0))


@pytest.fixture(autouse=True)
def torch_validates_arguments() -> Iterator[None]:
    """PyTorch's argument validation on, as it is by default: torch.compile's first use in
    the process (another test's, in the same worker) turns it off process-wide, and the
    comparisons with torch's errors then fail by the order the tests ran in."""
    torch = pytest.importorskip("torch")
    before = torch.distributions.Distribution._validate_args
    torch.distributions.Distribution.set_default_validate_args(True)
    try:
        yield
    finally:
        torch.distributions.Distribution.set_default_validate_args(before)
