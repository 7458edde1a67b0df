"""LU pivots changed in place before backward, next to torch 2.13: PyTorch's
LinalgLuFactorExBackward0 saves the pivots, so a change to them is its "modified by an
inplace operation" RuntimeError, for ``linalg.lu_factor`` and ``linalg.lu_factor_ex`` alike."""

from __future__ import annotations

from typing import Any

import tensorweaver as tw
import torch


def _error_of_changed_pivots(m: Any, factor: str) -> Any:
    """The type of error backward raises once the pivots of ``m.linalg.<factor>`` were
    zeroed (None: no error)."""
    a = (m.arange(9, dtype=m.float64) * 0.37 + 1.0).sin().reshape(3, 3)
    a = (a + 3 * m.eye(3, dtype=m.float64)).requires_grad_()
    lu, pivots = getattr(m.linalg, factor)(a)[:2]
    pivots.zero_()
    try:
        (lu**2).sum().backward()
    except RuntimeError:
        return RuntimeError
    return None


def test_lu_factor_pivots_changed_in_place_refused(backend: str) -> None:
    assert _error_of_changed_pivots(tw, "lu_factor") is _error_of_changed_pivots(torch, "lu_factor")


def test_lu_factor_ex_pivots_changed_in_place_refused(backend: str) -> None:
    expected = _error_of_changed_pivots(torch, "lu_factor_ex")
    assert _error_of_changed_pivots(tw, "lu_factor_ex") is expected
