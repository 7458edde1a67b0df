"""Fixtures for the recurrent, attention, Transformer and graph layer tests.

A test that takes ``backend`` runs once on NumPy and once on PyTorch's CPU, inside
``with tw.device(spec)``, with float64 as the default dtype and fixed seeds (tw's, and
torch's, which initialises the reference layers). A backend is skipped only when
``tw.devices()`` reports it unusable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import tensorweaver as tw
import torch

# cuPyNumeric (about 0.4 ms an op) joins with TENSORWEAVER_TEST_ALL_ON_CUNUMERIC=1: these
# files take minutes there; `tw check` covers its layers and composites in every run.
BACKENDS = ("numpy", "torch:cpu") + (
    ("cunumeric",) if os.environ.get("TENSORWEAVER_TEST_ALL_ON_CUNUMERIC") else ()
)
UNUSABLE = ("unavailable", "error")


def _unusable_reason(spec: str) -> str | None:
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
    """The device spec under test; the test body runs inside ``tw.device(spec)`` in float64."""
    spec = request.param
    reason = _unusable_reason(spec)
    if reason is not None:
        pytest.skip(f"backend {spec!r} unavailable here: {reason}")
    previous = tw.get_default_dtype()
    tw.set_default_dtype(tw.float64)
    tw.manual_seed(0)
    torch.manual_seed(0)
    try:
        with tw.device(spec):
            yield spec
    finally:
        tw.set_default_dtype(previous)
