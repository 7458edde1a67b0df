"""Backends for the tw.masked tests: the ``backend`` fixture runs a test on NumPy and
PyTorch's CPU, and on cuPyNumeric only where it is marked ``cunumeric``; the Tensor tests'
helpers (``tensor_reference``, ``gradcheck``) are importable here."""

from __future__ import annotations

import sys
from pathlib import Path

from tw_backends import backend_folder

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "tensor"))  # tensor_reference, gradcheck
globals().update(backend_folder(HERE))
