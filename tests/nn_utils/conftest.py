"""Fixtures for the ``tw.nn.init``, ``tw.nn.utils`` and ``tw.utils.checkpoint`` sweeps.

A test that takes ``backend`` runs once on NumPy and once on PyTorch's CPU, inside
``with tw.device(spec)``. Tests that compare random draws with PyTorch's value by value use
torch:cpu only (``tw_backends.entered``), whose stream is PyTorch's own.
"""

from __future__ import annotations

from pathlib import Path

from tw_backends import backend_folder

HERE = Path(__file__).parent
globals().update(backend_folder(HERE))
