"""Backends for the Tensor tests: each test that takes ``backend`` runs once per backend.

The ``backend`` fixture runs the test inside ``with tw.device(spec)``, so every tensor the
test creates lives there. A test runs on NumPy and on PyTorch's CPU; only tests (or
parameter sets, with ``pytest.param(..., marks=pytest.mark.cunumeric)``) marked ``cunumeric``
also run on cuPyNumeric, where each op costs about 0.4 ms: the others are deselected there,
and of a test function marked as a whole only the first cuPyNumeric case and every sixth
after it run there (scripts/test-remainder.sh runs them all, ``TW_CUNUMERIC_MARKED_FULL=1``).
A backend is skipped only when ``tw.devices()`` reports it unusable; any other failure to
start it fails the test."""

from __future__ import annotations

from pathlib import Path

from tw_backends import backend_folder

HERE = Path(__file__).parent
globals().update(backend_folder(HERE, marked_share=True))
