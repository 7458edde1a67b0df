"""Assigning ``.grad`` directly, against torch 2.13: a gradient whose dtype is not the tensor's
(its ``grad_dtype``, by default its dtype) is refused."""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw
import torch


def _assign(m: Any, dtype: str, grad_dtype: str) -> str:
    x = m.ones(3, dtype=getattr(m, dtype), requires_grad=True)
    try:
        x.grad = m.ones(3, dtype=getattr(m, grad_dtype))
    except RuntimeError as error:
        assert "attempting to assign a gradient with dtype" in str(error)
        return "raises"
    return "assigned"


@pytest.mark.parametrize(
    ("dtype", "grad_dtype"),
    [
        ("float64", "float64"),
        ("float64", "float32"),
        ("float16", "float32"),
    ],
)
def test_grad_of_another_dtype_is_refused_as_torch(dtype: str, grad_dtype: str) -> None:
    assert _assign(tw, dtype, grad_dtype) == _assign(torch, dtype, grad_dtype)
