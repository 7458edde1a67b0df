"""A multi-layer perceptron."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Callable

from tensorweaver import nn


class MLP(nn.Sequential):
    """``Linear -> activation [-> Dropout]`` for each hidden width, then a ``Linear`` to
    ``out_features`` (no activation: it gives logits or regression values)."""

    def __init__(
        self,
        in_features: int,
        hidden_features: Sequence[int],
        out_features: int,
        activation: Callable[[], nn.Module] = nn.ReLU,
        dropout: float = 0.0,
    ) -> None:
        layers: list[nn.Module] = []
        width = in_features
        for hidden in hidden_features:
            layers += [nn.Linear(width, hidden), activation()]
            if dropout:
                layers.append(nn.Dropout(dropout))
            width = hidden
        layers.append(nn.Linear(width, out_features))
        super().__init__(*layers)
