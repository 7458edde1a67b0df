"""``requires_grad`` of ``view(dtype)`` views, which PyTorch makes no views for autograd
(derivatives.yaml: ``view.dtype`` is not differentiable): they never follow their base's
flag, whatever the dtype, made under no_grad or before the base's ``requires_grad_()``."""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw
import torch

#: view(dtype) of a float64 tensor, by the dtype it reads.
DTYPE_VIEWS = ("float32", "complex64", "float64")


def _flags(m: Any, name: str) -> tuple:
    b = m.arange(6.0, dtype=m.float64, requires_grad=True)
    with m.no_grad():
        made_under_no_grad = b.view(getattr(m, name)).requires_grad
    c = m.arange(6.0, dtype=m.float64)
    v = c.view(getattr(m, name))
    c.requires_grad_()
    return made_under_no_grad, v.requires_grad


@pytest.mark.parametrize("name", DTYPE_VIEWS)
def test_view_dtype_does_not_follow_its_base_flag(backend: Any, name: str) -> None:
    assert _flags(tw, name) == _flags(torch, name)
