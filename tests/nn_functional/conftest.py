"""Every test that takes ``backend`` runs once per backend, inside ``with tw.device(spec)``."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import tensorweaver as tw

# cuPyNumeric (about 0.4 ms an op) joins with TENSORWEAVER_TEST_ALL_ON_CUNUMERIC=1: these
# files take minutes there; `tw check` covers its layers and composites in every run.
BACKENDS = ("numpy", "torch:cpu") + (
    ("cunumeric",) if os.environ.get("TENSORWEAVER_TEST_ALL_ON_CUNUMERIC") else ()
)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", BACKENDS, indirect=True)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)``."""
    with tw.device(request.param):
        yield request.param
