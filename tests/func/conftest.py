"""Fixtures for the ``tw.func`` tests (grad, vjp, jvp, jacobians, vmap, functional_call).

A test that takes ``backend`` runs once on NumPy and once on PyTorch's CPU, inside
``with tw.device(spec)``, with float64 as the default dtype and fixed seeds (tw's, and
torch's, which initialises the reference modules). A backend is skipped only when
``tw.devices()`` reports it unusable.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from tw_backends import FAST_UNLESS_ASKED, entered


@pytest.fixture(params=FAST_UNLESS_ASKED)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The device spec under test; the test body runs inside ``tw.device(spec)`` in float64."""
    torch.manual_seed(0)
    with entered(request.param, float64=True, seed=0) as spec:
        yield spec
