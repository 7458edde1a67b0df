"""Backends for the Tensor tests: each test that takes ``backend`` runs once per backend.

The ``backend`` fixture runs the test inside ``with tw.device(spec)``, so every tensor the
test creates lives there. A test runs on NumPy and on PyTorch's CPU; only tests (or
parameter sets, with ``pytest.param(..., marks=pytest.mark.cunumeric)``) marked ``cunumeric``
also run on cuPyNumeric, where each op costs about 0.4 ms: the others are deselected there.
A backend is skipped only when ``tw.devices()`` reports it unusable; any other failure to
start it fails the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tw_backends import (
    CUNUMERIC_MARK,
    deselect_unmarked_cunumeric,
    entered,
    parametrize_backend,
)

HERE = Path(__file__).parent
#: Hypothesis's pytest plugin seeds NumPy's global generator around every test, which
#: Legate warns about once it has started: noise here, where no test runs on many ranks.
QUIET_LEGATE_SEEDING = pytest.mark.filterwarnings(
    "ignore:(?s).*Seeding the random number generator"
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{CUNUMERIC_MARK}: also run this test on the cuPyNumeric backend (a small subset: "
        "each op there costs about 0.4 ms)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    parametrize_backend(metafunc)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees the whole session's items: touch only the tests in this folder.
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(QUIET_LEGATE_SEEDING)
    deselect_unmarked_cunumeric(config, items, HERE)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)``."""
    with entered(request.param) as spec:
        yield spec
