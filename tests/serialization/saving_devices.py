"""Device specs for the save/load tests: each installed backend, skipped with the reason if not."""

from __future__ import annotations

import pytest
from tensorweaver import registry
from tensorweaver.contract.dtypes import ALL
from tensorweaver.errors import BackendError

BACKENDS = ("numpy", "torch:cpu", "cunumeric")


def available(spec: str) -> str:
    """``spec`` if its backend is installed and usable here, else skip the test."""
    try:
        registry.backend_object(spec)
    except (BackendError, ValueError) as e:
        pytest.skip(f"backend {spec!r} is not usable here: {e}")
    return spec


def dtypes_of(*specs: str) -> list:
    """The dtypes every one of ``specs`` supports, in the contract's order (bfloat16 only on
    backends that have it)."""
    supported = [registry.backend_object(spec).dtypes for spec in specs]
    return [d for d in ALL if all(d in s for s in supported)]
