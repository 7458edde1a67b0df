"""Backends for the array API tests: ``backend`` runs a test on NumPy and torch:cpu in
float64 with a fixed seed; tests marked ``cunumeric`` (every test, with
``TENSORWEAVER_TEST_ALL_ON_CUNUMERIC`` set) also run on cuPyNumeric."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tw_backends import ALL, ALL_ON_CUNUMERIC, entered

CUNUMERIC_MARK = "cunumeric"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{CUNUMERIC_MARK}: also run this test on the cuPyNumeric backend"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" not in metafunc.fixturenames:
        return
    marked = metafunc.definition.get_closest_marker(CUNUMERIC_MARK) is not None
    on_cunumeric = marked or ALL_ON_CUNUMERIC
    specs = [s for s in ALL if s != "cunumeric" or on_cunumeric]
    metafunc.parametrize("backend", specs, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)``."""
    with entered(request.param, float64=True, seed=0) as spec:
        yield spec
