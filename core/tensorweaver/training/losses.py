"""The losses ``tw.fit`` knows by name, and the check that targets fit the model's output."""

from __future__ import annotations

from typing import Callable, Union

import tensorweaver.nn.functional as F
from tensorweaver.tensor import Tensor

LossFn = Callable[[Tensor, Tensor], Tensor]

#: name -> the ``tw.nn.functional`` loss it stands for (mean reduction).
LOSSES: dict[str, LossFn] = {
    "mse": F.mse_loss,
    "mae": F.l1_loss,
    "huber": F.huber_loss,
    "cross_entropy": F.cross_entropy,
    "bce": F.binary_cross_entropy_with_logits,
}

# These compare output and target element by element, so a shape mismatch would broadcast
# silently (an (N, 1) output against (N,) targets gives an (N, N) loss).
_ELEMENTWISE = frozenset({"mse", "mae", "huber", "bce"})


def get_loss(loss: Union[str, LossFn]) -> LossFn:
    """The loss function for ``loss``: a name from :data:`LOSSES` or a callable
    ``loss(output, target) -> scalar Tensor``, returned as is."""
    if callable(loss):
        return loss
    if loss not in LOSSES:
        raise ValueError(
            f"fit: unknown loss {loss!r}; use one of {sorted(LOSSES)} or a callable "
            "loss(output, target) -> Tensor"
        )
    fn = LOSSES[loss]
    if loss not in _ELEMENTWISE:
        return fn

    def checked(output: Tensor, target: Tensor) -> Tensor:
        if tuple(output.shape) != tuple(target.shape):
            raise ValueError(
                f"fit: loss {loss!r} needs targets shaped like the model's output "
                f"{tuple(output.shape)}, got targets of shape {tuple(target.shape)}; reshape "
                "the targets (e.g. y.reshape(-1, 1) for a one-column output) or the output"
            )
        return fn(output, target)

    return checked
