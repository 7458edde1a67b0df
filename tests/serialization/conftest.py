"""The ``spec`` fixture: each installed backend in turn."""

from __future__ import annotations

import pytest
from saving_devices import BACKENDS, available


@pytest.fixture(params=BACKENDS)
def spec(request: pytest.FixtureRequest) -> str:
    return available(request.param)
