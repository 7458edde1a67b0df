"""Indexing with a NumPy integer or a 0-d integer tensor is indexing with an int, as in
PyTorch: the result is a view, so a write through it reaches the base (it was a copy)."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorweaver as tw
import torch


def _writes(m: Any) -> list:
    x = m.arange(12.0).reshape(3, 4)
    x[np.int64(0)][np.int32(2)].fill_(9)
    x[0][m.tensor(1)].fill_(8)
    v = x[np.int64(2)]
    v += 100
    x[(np.int16(1), slice(1, 3))].zero_()
    x[m.tensor(-1), np.int64(-1)].fill_(-5)
    return x.tolist()


def test_numpy_and_tensor_integers_index_views(backend: str) -> None:
    assert _writes(tw) == _writes(torch)
