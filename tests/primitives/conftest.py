"""The shared primitive suite runs once per backend that is installed.

A backend whose plugin is not installed, or whose library is not (its devices are
"unavailable"), is skipped with the registry's own message; an installed plugin that fails to
load is an error, not a skip.
"""

from __future__ import annotations

import pytest
import tensorweaver as tw
from primitive_checks import Standard
from tensorweaver import registry
from tensorweaver.errors import DeviceNotFoundError, UnknownBackendError

BACKENDS = ("numpy", "torch:cpu", "cunumeric")


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> object:
    try:
        return registry.backend_object(request.param)
    except UnknownBackendError as e:
        pytest.skip(f"backend {request.param!r} is not installed: {e}")
    except DeviceNotFoundError as e:
        # The plugin is installed, its library is not (every device reported unavailable):
        # a skip. A device whose probe failed (status "error") stays an error.
        name = request.param.partition(":")[0]
        if all(r.status == "unavailable" for r in tw.devices() if r.backend == name):
            pytest.skip(f"backend {request.param!r} has no usable device: {e}")
        raise


@pytest.fixture(scope="session")
def standard(backend: object) -> Standard:
    return Standard(backend)
