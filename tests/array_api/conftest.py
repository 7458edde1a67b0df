"""Backends for the array API tests: ``backend`` runs a test on NumPy and torch:cpu in
float64 with a fixed seed; tests marked ``cunumeric`` (every test, with
``TENSORWEAVER_TEST_ALL_ON_CUNUMERIC`` set) also run on cuPyNumeric."""

from __future__ import annotations

from pathlib import Path

from tw_backends import backend_folder

HERE = Path(__file__).parent
globals().update(backend_folder(HERE, float64=True, seed=0))
