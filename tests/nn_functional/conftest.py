"""Every test that takes ``backend`` runs once per backend, inside ``with tw.device(spec)``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tw_backends import FAST_UNLESS_ASKED, entered


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", FAST_UNLESS_ASKED, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)``."""
    with entered(request.param) as spec:
        yield spec
