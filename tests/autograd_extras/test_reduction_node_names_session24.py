"""The names of reduction nodes over every dimension, next to torch 2.13's: PyTorch names a
node by the overload called (``x.max()`` MaxBackward1, ``x.amax((0, 1))`` AmaxBackward0;
``x.sum()`` SumBackward0, ``x.sum((0, 1))`` SumBackward1), not by the dims reduced."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw
import torch

#: The call, on ``torch`` or ``tensorweaver`` and a 2x3 leaf.
_AMAX_AMIN: dict[str, Callable[[Any, Any], Any]] = {
    "amax()": lambda m, x: x.amax(),
    "amax((0, 1))": lambda m, x: m.amax(x, (0, 1)),
    "amax(dim=(-1, 0))": lambda m, x: x.amax(dim=(-1, 0)),
    "amin()": lambda m, x: x.amin(),
    "amin((0, 1), keepdim)": lambda m, x: x.amin((0, 1), keepdim=True),
    "amax(1)": lambda m, x: x.amax(1),
    "max()": lambda m, x: x.max(),
    "min()": lambda m, x: m.min(x),
    "max() of a vector": lambda m, x: x[0].max(),
    "amax(0) of a vector": lambda m, x: x[0].amax(0),
}


def _name(m: Any, call: Callable[[Any, Any], Any]) -> str:
    x = m.arange(6.0, dtype=m.float64).reshape(2, 3).requires_grad_()
    return call(m, x).grad_fn.name()


@pytest.mark.parametrize("case", list(_AMAX_AMIN))
def test_amax_amin_max_min_node_names_match(backend: str, case: str) -> None:
    assert _name(tw, _AMAX_AMIN[case]) == _name(torch, _AMAX_AMIN[case])


@pytest.mark.parametrize("dim", [(0, 1), None, "vector"])
def test_sum_over_every_given_dim_node_name_matches(backend: str, dim: Any) -> None:
    def call(m: Any, x: Any) -> Any:
        return x[0].sum(0) if dim == "vector" else x.sum(dim)

    assert _name(tw, call) == _name(torch, call)
