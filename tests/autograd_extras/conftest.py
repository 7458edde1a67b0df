"""Fixtures for the ``tw.autograd`` extras: each test that takes ``backend`` runs on NumPy and
on PyTorch's CPU, in float64 with a fixed seed; anomaly mode is off again after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import tensorweaver as tw
from tw_backends import FAST_UNLESS_ASKED, entered


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cunumeric: this case also runs on the cuPyNumeric backend (small ones)"
    )


@pytest.fixture(params=FAST_UNLESS_ASKED)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)``."""
    with entered(request.param, float64=True, seed=0) as spec:
        yield spec


@pytest.fixture(autouse=True)
def anomaly_off() -> Iterator[None]:
    """A failing anomaly test must not leave the process-wide mode on for the next one."""
    yield
    tw.autograd.set_anomaly_enabled(False)
