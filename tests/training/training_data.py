"""Small data sets for the training tests."""

from __future__ import annotations

import numpy as np


def blobs(
    n: int = 120, classes: int = 3, features: int = 4, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """``(x float32 (n, features), y int64 (n,))``: one well separated Gaussian per class."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    centres = 3.0 * rng.standard_normal((classes, features))
    x = centres[y] + 0.5 * rng.standard_normal((n, features))
    return x.astype(np.float32), y.astype(np.int64)
