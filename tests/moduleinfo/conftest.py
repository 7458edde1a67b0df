"""The ``tw.nn`` modules against PyTorch's own module database (``module_db``).

Each test that takes ``backend`` runs on NumPy and on PyTorch's CPU, inside
``tw.device(spec)``, seeded. The default dtype stays float32 on both sides, as in PyTorch's
own module tests: a sample's module is moved to the sample's dtype with ``.to(dtype)``.
"""

from __future__ import annotations

from pathlib import Path

from tw_backends import backend_folder

HERE = Path(__file__).parent
globals().update(backend_folder(HERE, seed=0))
