"""Fixtures for the training tests: the backend to train on, and small data sets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tw_backends import FAST, entered


@pytest.fixture(params=FAST)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; models built in the test body are created there."""
    with entered(request.param, seed=0) as spec:
        yield spec
