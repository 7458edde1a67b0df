"""Backends for the Tensor tests: each test that takes ``backend`` runs once per backend.

The ``backend`` fixture runs the test inside ``with tw.device(spec)``, so every tensor the
test creates lives there. A test runs on NumPy and on PyTorch's CPU; only tests (or
parameter sets, with ``pytest.param(..., marks=pytest.mark.cunumeric)``) marked ``cunumeric``
also run on cuPyNumeric, where each op costs about 0.4 ms: the others are deselected there.
A backend is skipped only when ``tw.devices()`` reports it unusable; any other failure to
start it fails the test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
import tensorweaver as tw

BACKENDS = ("numpy", "torch:cpu", "cunumeric")
#: Set to run every test on cuPyNumeric too, not only the marked subset (12 minutes on 2 cores).
FULL_CUNUMERIC_ENV = "TENSORWEAVER_TEST_ALL_ON_CUNUMERIC"
CUNUMERIC_MARK = "cunumeric"
UNUSABLE = ("unavailable", "error")
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
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", BACKENDS, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # This hook sees the whole session's items: touch only the tests in this folder.
    ours = [item for item in items if item.path.is_relative_to(HERE)]
    for item in ours:
        item.add_marker(QUIET_LEGATE_SEEDING)

    def unmarked_cunumeric(item: pytest.Item) -> bool:
        params = getattr(getattr(item, "callspec", None), "params", {})
        return params.get("backend") == "cunumeric" and not item.get_closest_marker(CUNUMERIC_MARK)

    if os.environ.get(FULL_CUNUMERIC_ENV):
        return
    deselected = {item for item in ours if unmarked_cunumeric(item)}
    if deselected:
        config.hook.pytest_deselected(items=list(deselected))
        items[:] = [item for item in items if item not in deselected]


@cache
def unusable_reason(spec: str) -> str | None:
    """Why ``tw.devices()`` says no device matches ``spec``, or None if one may be used."""
    name, _, kind = spec.partition(":")
    records = [r for r in tw.devices() if r.backend == name and kind in ("", r.kind)]
    if not records:
        return f"no device {spec!r} is installed"
    if all(r.status in UNUSABLE for r in records):
        return "; ".join(f"{r.name} is {r.status}: {r.detail}" for r in records)
    return None


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)``."""
    spec = request.param
    reason = unusable_reason(spec)
    if reason is not None:
        pytest.skip(f"backend {spec!r} unavailable here: {reason}")
    with tw.device(spec):
        yield spec
