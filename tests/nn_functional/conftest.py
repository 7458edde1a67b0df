"""Every test that takes ``backend`` runs once per backend, inside ``with tw.device(spec)``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import tensorweaver as tw

BACKENDS = ("numpy", "torch:cpu", "cunumeric")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", BACKENDS, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)``."""
    with tw.device(request.param):
        yield request.param
