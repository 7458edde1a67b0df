"""The op database's regression tests run each case on NumPy and on torch:cpu."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tw_backends import FAST, entered


@pytest.fixture(params=FAST)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    with entered(request.param) as spec:
        yield spec
