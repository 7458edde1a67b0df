"""Backends for the linalg tests: the ``backend`` fixture runs a test on NumPy and PyTorch's
CPU, and on cuPyNumeric only where it is marked ``cunumeric``; the Tensor tests' helpers
(``tensor_reference``, ``gradcheck``) are importable here."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tw_backends import ALL, ALL_ON_CUNUMERIC, entered

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "tensor"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "cunumeric: also run this test on cuPyNumeric")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", ALL, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ALL_ON_CUNUMERIC:
        return

    def deselected(item: pytest.Item) -> bool:
        params = getattr(getattr(item, "callspec", None), "params", {})
        return (
            item.path.is_relative_to(HERE)
            and params.get("backend") == "cunumeric"
            and not item.get_closest_marker("cunumeric")
        )

    dropped = [item for item in items if deselected(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if not deselected(item)]


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)``."""
    with entered(request.param) as spec:
        yield spec
