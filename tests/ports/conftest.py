"""Ports run their programs on the backends each test names; ``cunumeric`` marks the cases
that also run on cuPyNumeric (the small ones: about 0.4 ms an op there)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cunumeric: this port also runs on the cuPyNumeric backend (small programs)"
    )
