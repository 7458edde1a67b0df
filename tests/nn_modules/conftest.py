"""Fixtures for the ``tw.nn`` module tests.

A test that takes ``backend`` runs once on NumPy and once on PyTorch's CPU, inside
``with tw.device(spec)``, with float64 as the default dtype (layers are compared with
``torch.nn`` in float64). A backend is skipped only when ``tw.devices()`` reports it unusable.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tw_backends import ALL, entered


@pytest.fixture(params=ALL)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)`` in float64."""
    with entered(request.param, float64=True, seed=0) as spec:
        yield spec
