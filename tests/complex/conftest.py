"""Backends for the complex-number tests: the ``backend`` fixture runs a test on NumPy and
PyTorch's CPU, and on cuPyNumeric only where it is marked ``cunumeric``; the Tensor tests'
helpers (``tensor_reference``, ``gradcheck``) are importable here."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tw_backends import deselect_unmarked_cunumeric, entered, parametrize_backend

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "tensor"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cunumeric: also run this test on cuPyNumeric")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_backend(metafunc)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_unmarked_cunumeric(config, items, HERE)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)``."""
    with entered(request.param) as spec:
        yield spec
