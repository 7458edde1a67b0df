"""Fixtures for the optimizer tests: the backend to run on, and torch in float64."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import tensorweaver as tw
from tensorweaver import registry
from tensorweaver.errors import UnknownBackendError

torch = pytest.importorskip("torch")

BACKENDS = ("numpy", "torch:cpu", "cunumeric")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with new tensors created on each backend in turn."""
    try:
        registry.backend_object(request.param)
    except UnknownBackendError as e:
        pytest.skip(f"backend {request.param!r} is not installed: {e}")
    with tw.device(request.param):
        yield request.param


@pytest.fixture(autouse=True)
def torch_float64() -> Iterator[None]:
    """PyTorch keeps scalar optimizer state (step, NAdam's mu_product) in the default
    dtype; float64 makes it match TensorWeaver's Python floats.
    """
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(previous)
