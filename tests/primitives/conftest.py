"""The shared primitive suite runs once per backend that is installed.

A backend whose plugin is not installed is skipped with the registry's own message; an
installed plugin that fails to load is an error, not a skip.
"""

from __future__ import annotations

import pytest
from primitive_checks import Standard
from tensorweaver import registry
from tensorweaver.errors import UnknownBackendError

BACKENDS = ("numpy", "torch:cpu", "cunumeric")


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> object:
    try:
        return registry.backend_object(request.param)
    except UnknownBackendError as e:
        pytest.skip(f"backend {request.param!r} is not installed: {e}")


@pytest.fixture(scope="session")
def standard(backend: object) -> Standard:
    return Standard(backend)
