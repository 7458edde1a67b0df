"""The optimizers ``tw.fit`` knows by name."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Union

from tensorweaver import optim
from tensorweaver.nn.parameter import Parameter
from tensorweaver.optim.optimizer import Optimizer

#: name -> optimizer class, built as ``cls(parameters, lr=lr)`` with its other defaults.
OPTIMIZERS: dict[str, type[Optimizer]] = {
    "sgd": optim.SGD,
    "adam": optim.Adam,
    "adamw": optim.AdamW,
    "rmsprop": optim.RMSprop,
    "adagrad": optim.Adagrad,
    "nadam": optim.NAdam,
    "radam": optim.RAdam,
}


def get_optimizer(
    optimizer: Union[str, Optimizer], parameters: Iterable[Parameter], lr: float
) -> Optimizer:
    """``optimizer`` itself when it is an ``Optimizer`` (``lr`` is then its own business),
    else the named one over ``parameters`` (those to train) with learning rate ``lr``."""
    if isinstance(optimizer, Optimizer):
        return optimizer
    if optimizer not in OPTIMIZERS:
        raise ValueError(
            f"fit: unknown optimizer {optimizer!r}; use one of {sorted(OPTIMIZERS)} or an "
            "Optimizer instance"
        )
    params = list(parameters)
    if not params:
        raise ValueError("fit: the model has no parameters that require grad, nothing to train")
    return OPTIMIZERS[optimizer](params, lr=lr)
