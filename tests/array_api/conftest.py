"""Backends for the array API tests: ``backend`` runs a test on NumPy and torch:cpu in
float64 with a fixed seed; tests marked ``cunumeric`` (every test, with
``TENSORWEAVER_TEST_ALL_ON_CUNUMERIC`` set) also run on cuPyNumeric."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tw_backends import deselect_unmarked_cunumeric, entered, parametrize_backend

HERE = Path(__file__).parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cunumeric: also run this test on cuPyNumeric")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_backend(metafunc)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_unmarked_cunumeric(config, items, HERE)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)``."""
    with entered(request.param, float64=True, seed=0) as spec:
        yield spec
