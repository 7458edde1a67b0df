"""Outputs changed in place before backward, against torch 2.13, for the ops whose PyTorch node
saves its result (derivatives.yaml's ``result``) and whose tensorweaver composite ends in a
node of another name: the refusal (``autograd/node.py`` ``SAVES_OUTPUT``) goes by the node's
name, so each is ``labelled(out, "<torch's name>", inputs...)`` in its op's module (tan, sgn,
reciprocal_ and rsqrt_ were unnamed before session 17's second wave)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

VALUES = np.array([0.5, -1.2, 0.3, 2.0])


def _ops(m: Any) -> dict[str, Callable[[Any], Any]]:
    F = m.nn.functional
    return {
        "tan": m.tan,
        "sgn": m.sgn,
        "copysign(number)": lambda x: m.copysign(x, -1.0),
        "copysign(tensor)": lambda x: m.copysign(x, x * 1),
        "hypot": lambda x: m.hypot(x, x * 2),
        "ldexp": lambda x: m.ldexp(x, m.tensor([1, 2, 1, 2])),
        "median": lambda x: x.median(),
        "nanmedian": lambda x: x.nanmedian(),
        "std_mean": lambda x: m.std_mean(x)[0],
        "cdist": lambda x: m.cdist(x.reshape(2, 2), x.reshape(2, 2) * 2),
        "elu(inplace=True)": lambda x: F.elu(x * 1, inplace=True),
        "celu(inplace=True)": lambda x: F.celu(x * 1, inplace=True),
        "leaky_relu(inplace=True)": lambda x: F.leaky_relu(x * 1, inplace=True),
        "reciprocal_": lambda x: (x * 1).reciprocal_(),
        "rsqrt_": lambda x: (x.abs() + 1).rsqrt_(),
    }


def _changed_then_backward(m: Any, op: str) -> Any:
    x = m.tensor(VALUES, dtype=m.float64, requires_grad=True)
    y = _ops(m)[op](x)
    y.mul_(2)
    try:
        y.sum().backward()
    except RuntimeError as error:
        assert "modified by an inplace operation" in str(error)
        return "raises"
    return x.grad.numpy().copy()


@pytest.mark.parametrize("op", list(_ops(torch)))
def test_an_output_torch_saves_changed_in_place_raises(op: str) -> None:
    assert _changed_then_backward(torch, op) == "raises"
    assert _changed_then_backward(tw, op) == "raises"


@pytest.mark.parametrize("op", ["elu(inplace=True)", "celu(inplace=True)", "reciprocal_"])
def test_the_names_torch_s_in_place_nodes_save_their_result_under(op: str) -> None:
    """The refusal table knows the in-place forms' own names (``EluBackward1``): with the
    label, these raise; torch's node has that name."""
    from tensorweaver.autograd.node import SAVES_OUTPUT

    x = torch.tensor(VALUES, dtype=torch.float64, requires_grad=True)
    assert type(_ops(torch)[op](x).grad_fn).__name__ in SAVES_OUTPUT
