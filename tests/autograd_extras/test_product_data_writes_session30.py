"""A write through ``.data`` into an operand of a batched or vector ``matmul``, between
forward and backward, reaches the product's node as it reaches PyTorch's, which saves views
of its operands (the folded rows, a matrix's transpose, a batch of one squeezed, a vector
unsqueezed). Before session 30 the node here kept forward-time copies of them, so the other
operand's gradient used the old values."""

from __future__ import annotations

import math
from typing import Any, Callable

import pytest
from snippet_outcomes import same_each

SPECS = ["numpy", "torch:cpu"]

#: (first operand's shape, second's, which of them is written through .data)
CASES = {
    "batch @ matrix": ((2, 3, 4), (4, 5), 0),
    "4-d batch @ matrix": ((2, 2, 3, 4), (4, 5), 0),
    "transposed batch @ matrix": ((2, 3, 4), (4, 5), 0),
    "matrix @ batch": ((5, 3), (2, 3, 4), 0),
    "batch @ vector, batch written": ((2, 3, 4), (4,), 0),
    "batch @ vector, vector written": ((2, 3, 4), (4,), 1),
    "vector @ batch": ((3,), (2, 3, 4), 0),
    "matrix @ vector": ((3, 4), (4,), 1),
    "vector @ matrix": ((3,), (3, 4), 0),
    "batch @ batch of one, batch written": ((2, 3, 4), (1, 4, 5), 0),
    "batch @ batch of one, one written": ((2, 3, 4), (1, 4, 5), 1),
}


def _product(shapes: tuple, written: int, transposed: bool) -> Callable:
    def program(m: Any) -> list:
        operands = []
        for k, shape in enumerate(shapes):
            t = (m.linspace(-2.0, 2.0, math.prod(shape), dtype=m.float64) + k) ** 2
            if transposed and k == 0:  # (its rows are not contiguous: the fold copies them)
                t = t.reshape(*shape[:-2], shape[-1], shape[-2]).transpose(-1, -2)
            else:
                t = t.reshape(shape)
            operands.append(t.requires_grad_())
        y = operands[0] @ operands[1]
        operands[written].data.mul_(2.0)
        (y * y).sum().backward()
        return [t.grad for t in operands]

    return program


@pytest.mark.parametrize("spec", SPECS)
def test_products_read_their_data_written_operands(spec: str) -> None:
    same_each(
        {
            name: _product(shapes[:2], shapes[2], name.startswith("transposed"))
            for name, shapes in CASES.items()
        },
        spec,
    )
