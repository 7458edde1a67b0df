"""Fixtures for the training tests: the backend to train on, and small data sets."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

import pytest
import tensorweaver as tw

BACKENDS = ("numpy", "torch:cpu")
UNUSABLE = ("unavailable", "error")


@cache
def unusable_reason(spec: str) -> str | None:
    """Why ``tw.devices()`` says no device matches ``spec``, or None if one may be used."""
    name, _, kind = spec.partition(":")
    records = [r for r in tw.devices() if r.backend == name and kind in ("", r.kind)]
    if not records:
        return f"no device {spec!r} is installed"
    if all(r.status in UNUSABLE for r in records):
        return "; ".join(f"{r.name} is {r.status}: {r.detail}" for r in records)
    return None


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; models built in the test body are created there."""
    spec = request.param
    reason = unusable_reason(spec)
    if reason is not None:
        pytest.skip(f"backend {spec!r} unavailable here: {reason}")
    tw.manual_seed(0)
    with tw.device(spec):
        yield spec
