"""Distributions whose parameter is a probability given either as ``probs`` or as ``logits``
(PyTorch's rule: exactly one of the two), the other one computed on first read."""

from __future__ import annotations

from typing import Any

from tensorweaver.distributions.params import (
    broadcast_all,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
)
from tensorweaver.tensor import Size, Tensor


def one_of(probs: Any, logits: Any, name: str) -> None:
    """PyTorch's error where distribution ``name`` is given both or neither."""
    if (probs is None) == (logits is None):
        raise ValueError(f"{name}: either `probs` or `logits` must be specified, but not both.")


class BinaryProbs:
    """Mixin of a distribution of one success probability that holds ``probs`` or ``logits``:
    the other one computed from it on first read."""

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)


class SuccessProbability(BinaryProbs):
    """:class:`BinaryProbs` of a distribution with PyTorch's ``param_shape`` (Bernoulli,
    Binomial, ...): the one of ``probs`` and ``logits`` given is kept as ``_param``."""

    _param: Tensor

    def _given(self, name: str, probs: Any, logits: Any, *others: Any) -> tuple[Tensor, ...]:
        """Keeps whichever of ``probs`` and ``logits`` is given (exactly one, else the error
        of distribution ``name``), broadcast with ``others``; returns ``others`` broadcast."""
        one_of(probs, logits, name)
        which, value = ("probs", probs) if probs is not None else ("logits", logits)
        *others, param = broadcast_all(*others, value)
        setattr(self, which, param)
        self._param = param
        return tuple(others)

    def _expanded_given(self, cls: type, batch_shape: tuple, _instance: Any, *names: str) -> Any:
        """``Distribution._expanded`` of ``names`` and whichever of ``probs`` and ``logits``
        this one holds, the given one kept as ``_param``."""
        new = self._expanded(cls, batch_shape, _instance, *names, "probs", "logits")
        new._param = new.__dict__.get("probs", new.__dict__.get("logits"))
        return new

    @property
    def param_shape(self) -> Size:
        return self._param.shape
