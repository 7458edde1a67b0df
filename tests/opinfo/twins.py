"""The same values as a tensorweaver and a torch tensor, for the regression tests."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorweaver as tw
import torch


def pair(value: Any, dtype: str = "float64", requires_grad: bool = False) -> tuple:
    """(tensorweaver tensor, torch tensor) holding ``value``, fresh leaves."""
    array = np.asarray(value)
    ours = tw.tensor(array, dtype=getattr(tw, dtype), requires_grad=requires_grad)
    theirs = torch.tensor(array, dtype=getattr(torch, dtype), requires_grad=requires_grad)
    return ours, theirs


def to_tw(t: torch.Tensor, requires_grad: bool | None = None) -> tw.Tensor:
    """``t``'s values as a tensorweaver leaf (``requires_grad`` as t's unless given)."""
    wanted = t.requires_grad if requires_grad is None else requires_grad
    return tw.tensor(t.detach().numpy(), requires_grad=wanted)
