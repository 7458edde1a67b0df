"""Fixtures for the ``tw.nn`` module tests.

A test that takes ``backend`` runs on NumPy, on PyTorch's CPU and on cuPyNumeric, inside
``with tw.device(spec)``, with float64 as the default dtype (layers are compared with
``torch.nn`` in float64); a parametrized one runs a sixth of its cases on cuPyNumeric (see
:func:`tw_backends.deselect_cunumeric_share`). A backend is skipped only when ``tw.devices()``
reports it unusable.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tw_backends import ALL, deselect_cunumeric_share, entered

HERE = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deselect_cunumeric_share(config, items, HERE)


@pytest.fixture(params=ALL)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)`` in float64."""
    with entered(request.param, float64=True, seed=0) as spec:
        yield spec
