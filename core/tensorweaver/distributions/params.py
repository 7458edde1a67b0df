"""How distributions take their parameters: broadcasting numbers and tensors together,
probabilities and logits from one another (PyTorch's ``distributions.utils``), and
``lazy_property``, computed on first read and then kept."""

from __future__ import annotations

import numbers
from typing import Any, Callable

from tensorweaver.autograd.mode import enable_grad
from tensorweaver.dtype_info import finfo
from tensorweaver.nn import functional as F
from tensorweaver.ops.creation import as_tensor
from tensorweaver.ops.spellings import broadcast_tensors
from tensorweaver.promotion import get_default_dtype
from tensorweaver.tensor import Tensor


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """``values`` (tensors and Python numbers) as tensors of one broadcast shape; numbers take
    the first tensor's dtype and device (the default dtype when there is none)."""
    like = next((v for v in values if isinstance(v, Tensor)), None)
    for v in values:
        if not isinstance(v, (Tensor, numbers.Number)):
            raise ValueError(
                f"Input arguments must all be instances of numbers.Number or Tensor, got "
                f"{type(v).__name__}"
            )
    if like is None:
        dtype = get_default_dtype()
        tensors = [as_tensor(float(v), dtype=dtype) for v in values]
    else:
        tensors = [
            v if isinstance(v, Tensor) else as_tensor(v, dtype=like.dtype, device=like.device)
            for v in values
        ]
    return tuple(broadcast_tensors(*tensors))


def clamp_probs(probs: Tensor) -> Tensor:
    eps = finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    return logits.sigmoid() if is_binary else F.softmax(logits, dim=-1)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


class lazy_property:  # noqa: N801  (PyTorch's name)
    """A property computed on first access and stored on the instance (parameters derived
    from the ones given: ``probs`` from ``logits`` and back)."""

    def __init__(self, wrapped: Callable[[Any], Any]) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__
        self.__name__ = wrapped.__name__

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
