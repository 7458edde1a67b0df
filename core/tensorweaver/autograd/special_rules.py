"""Gradient rules of the optional special primitives (API 2.3), merged into
:data:`tensorweaver.autograd.gradients.GRADIENTS` and written by that module's conventions
(a rule takes the node and its output's gradient, returns one gradient per input)."""

from __future__ import annotations

from typing import Any, Callable

from tensorweaver.tensor import Tensor

SPECIAL_GRADIENTS: dict[str, Callable[[Any, Tensor], tuple]] = {}
