"""Reference checks for the sequence and graph layers.

``compare_with_torch`` runs a ``tw.nn`` layer and its ``torch.nn`` twin on the same weights
and float64 inputs; every output, every input gradient and every parameter gradient must
agree. ``check_gradients`` compares a layer's autograd gradients (inputs and parameters) with
central finite differences.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable, Optional

import numpy as np
import tensorweaver as tw
import torch
from torch_twins import ATOL, RTOL, assert_close, host  # noqa: F401  (re-exported)


def flatten(outputs: Any) -> list[Any]:
    """The tensors of a (nested) tuple of outputs, in order; None entries are dropped."""
    if isinstance(outputs, (tuple, list)):
        return [t for o in outputs for t in flatten(o)]
    return [] if outputs is None else [outputs]


def load_torch_weights(tw_module: tw.nn.Module, torch_module: torch.nn.Module) -> None:
    """Make ``torch_module`` float64 and load its state into ``tw_module`` (strict: the names
    and shapes must match)."""
    torch_module.double()
    tw_module.double()
    tw_module.load_state_dict({k: tw.tensor(host(v)) for k, v in torch_module.state_dict().items()})


def compare_with_torch(
    tw_module: tw.nn.Module,
    torch_module: torch.nn.Module,
    inputs: Sequence[Optional[np.ndarray]],
    call: Optional[Callable[..., Any]] = None,
    constants: Optional[dict[str, np.ndarray]] = None,
    rtol: float = RTOL,
    atol: float = ATOL,
) -> list[Any]:
    """Run both modules on ``inputs`` (float arrays become leaves that require grad; None
    passes through) and ``constants`` (keyword tensors without grad, e.g. masks), through
    ``call(module, *inputs, **constants)`` (default: the module itself), backprop the same
    random cotangent into every output and compare outputs, gradients of the inputs and of
    every parameter by name. Returns tw's outputs, flattened."""
    load_torch_weights(tw_module, torch_module)
    call = call or (lambda module, *args, **kwargs: module(*args, **kwargs))
    constants = constants or {}

    def leaves(make: Callable[..., Any]) -> list[Any]:
        return [None if a is None else make(a, requires_grad=a.dtype.kind == "f") for a in inputs]

    tw_inputs, torch_inputs = leaves(tw.tensor), leaves(torch.tensor)
    outs = flatten(call(tw_module, *tw_inputs, **{k: tw.tensor(v) for k, v in constants.items()}))
    expected = flatten(
        call(torch_module, *torch_inputs, **{k: torch.tensor(v) for k, v in constants.items()})
    )
    assert len(outs) == len(expected), f"{len(outs)} outputs, torch gives {len(expected)}"
    rng = np.random.default_rng(1)
    tw_loss, torch_loss = 0, 0
    for out, exp in zip(outs, expected):
        assert_close(out, exp, rtol, atol)
        cotangent = rng.standard_normal(tuple(exp.shape))
        tw_loss = tw_loss + (out * tw.tensor(cotangent)).sum()
        torch_loss = torch_loss + (exp * torch.tensor(cotangent)).sum()
    torch_loss.backward()
    tw_loss.backward()
    for i, (a, e) in enumerate(zip(tw_inputs, torch_inputs)):
        if e is not None and e.requires_grad:
            assert a.grad is not None, f"input {i} got no gradient"
            assert_close(a.grad, e.grad, rtol, atol)
    expected_params = dict(torch_module.named_parameters())
    actual_params = dict(tw_module.named_parameters())
    assert list(actual_params) == list(expected_params)
    for name, p in expected_params.items():
        if p.grad is None:
            assert actual_params[name].grad is None, name
        else:
            assert actual_params[name].grad is not None, f"{name} got no gradient"
            assert_close(actual_params[name].grad, p.grad, rtol, atol)
    return outs


def check_gradients(
    module: tw.nn.Module,
    run: Callable[..., tw.Tensor],
    inputs: Sequence[np.ndarray],
    eps: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-7,
) -> None:
    """``run(*leaves)`` (which calls ``module``) differentiated by autograd, against central
    differences of ``sum(v * run(...))`` in every element of every input and parameter."""
    leaves = [tw.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in inputs]
    named = [(f"input {i}", leaf) for i, leaf in enumerate(leaves)]
    named += [(name, p) for name, p in module.named_parameters() if p.requires_grad]
    out = run(*leaves)
    cotangent = tw.tensor(np.random.default_rng(2).standard_normal(tuple(out.shape)))
    (out * cotangent).sum().backward()
    for what, tensor in named:
        analytic = host(tensor.grad) if tensor.grad is not None else np.zeros(tensor.shape)
        values = host(tensor).copy()
        numeric = np.zeros_like(values)
        for index in np.ndindex(values.shape):
            sides = []
            for delta in (eps, -eps):
                shifted = values.copy()
                shifted[index] += delta
                with tw.no_grad():
                    tensor.copy_(tw.tensor(shifted))
                    sides.append(float((run(*leaves) * cotangent).sum().item()))
            numeric[index] = (sides[0] - sides[1]) / (2 * eps)
        with tw.no_grad():
            tensor.copy_(tw.tensor(values))
        np.testing.assert_allclose(analytic, numeric, rtol=rtol, atol=atol, err_msg=what)
