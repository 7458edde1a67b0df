"""Fixtures for the optimizer tests: the backend to run on (a parametrized test runs a sixth
of its cases on cuPyNumeric, see :func:`tw_backends.deselect_cunumeric_share`), and torch and
tw in float64."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import tensorweaver as tw
from tw_backends import ALL, deselect_cunumeric_share, entered

torch = pytest.importorskip("torch")
HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_cunumeric_share(config, items, HERE)


@pytest.fixture(params=ALL)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Run the test with new tensors created on each backend in turn."""
    with entered(request.param) as spec:
        yield spec


@pytest.fixture(autouse=True)
def torch_float64() -> Iterator[None]:
    """PyTorch keeps scalar optimizer state (step, NAdam's mu_product, ASGD's eta and mu) in
    float64 when that is the default dtype (float32 otherwise, as TensorWeaver rounds it):
    both libraries default to float64 here.
    """
    previous = torch.get_default_dtype(), tw.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    tw.set_default_dtype(tw.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(previous[0])
        tw.set_default_dtype(previous[1])
