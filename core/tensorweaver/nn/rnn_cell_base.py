"""``nn.RNNCellBase``: PyTorch's base class of recurrent cells, for custom cells and
``isinstance`` checks: the input-to-hidden and hidden-to-hidden weights (and biases) of
``num_chunks`` stacked gates, initialised uniform in +-1/sqrt(hidden_size)."""

from __future__ import annotations

import math
from typing import Any

import tensorweaver as tw
from tensorweaver.nn import init
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.parameter import Parameter


class RNNCellBase(Module):
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        gates = num_chunks * hidden_size
        self.weight_ih = Parameter(tw.empty(gates, input_size, device=device, dtype=dtype))
        self.weight_hh = Parameter(tw.empty(gates, hidden_size, device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(tw.empty(gates, device=device, dtype=dtype))
            self.bias_hh = Parameter(tw.empty(gates, device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        nonlinearity = self.__dict__.get("nonlinearity", "tanh")
        return text + (f", nonlinearity={nonlinearity}" if nonlinearity != "tanh" else "")
