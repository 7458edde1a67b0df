"""Compare a ``tw.nn`` layer with its ``torch.nn`` twin: same weights, same float64 inputs,
then outputs, input gradients and parameter gradients must agree."""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorweaver as tw
import torch
from torch_twins import ATOL, RTOL, assert_close, host  # noqa: F401  (re-exported)


def copy_weights(tw_module: tw.nn.Module, torch_module: torch.nn.Module) -> None:
    """Load ``torch_module``'s state into ``tw_module`` (strict: the names must match)."""
    state = {k: tw.tensor(host(v)) for k, v in torch_module.state_dict().items()}
    tw_module.load_state_dict(state)


def pair_inputs(arrays: list[np.ndarray]) -> tuple[list[tw.Tensor], list[torch.Tensor]]:
    """tw and torch tensors of the same arrays; floating ones require grad."""
    tw_inputs, torch_inputs = [], []
    for a in arrays:
        floating = a.dtype.kind == "f"
        tw_inputs.append(tw.tensor(a, requires_grad=floating))
        torch_inputs.append(torch.tensor(a, requires_grad=floating))
    return tw_inputs, torch_inputs


def check_layer(
    tw_module: tw.nn.Module,
    torch_module: torch.nn.Module,
    *arrays: np.ndarray,
    copy: bool = True,
    rtol: float = RTOL,
    atol: float = ATOL,
    **kwargs: Any,
) -> tw.Tensor:
    """Forward both modules on ``arrays`` and backprop the same random output gradient;
    outputs, input gradients and parameter gradients (by name) must agree. Returns tw's
    output."""
    torch_module.double()
    if copy:
        copy_weights(tw_module, torch_module)
    tw_inputs, torch_inputs = pair_inputs(list(arrays))
    out = tw_module(*tw_inputs, **kwargs)
    expected = torch_module(*torch_inputs, **kwargs)
    assert_close(out, expected, rtol, atol)
    if not expected.requires_grad:
        return out
    upstream = np.random.default_rng(1).standard_normal(tuple(expected.shape))
    (expected * torch.tensor(upstream)).sum().backward()
    (out * tw.tensor(upstream)).sum().backward()
    for a, e in zip(tw_inputs, torch_inputs):
        if e.requires_grad:
            assert_close(a.grad, e.grad, rtol, atol)
    expected_params = dict(torch_module.named_parameters())
    actual_params = dict(tw_module.named_parameters())
    assert list(actual_params) == list(expected_params)
    for name, p in expected_params.items():
        if p.grad is None:
            assert actual_params[name].grad is None, name
        else:
            assert_close(actual_params[name].grad, p.grad, rtol, atol)
    return out
