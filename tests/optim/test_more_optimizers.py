"""Adadelta, Adamax, Rprop and ASGD against ``torch.optim`` in float64, on every backend.

The same harness as ``test_optimizers.py`` (imported from it): identical gradients for
several steps, then parameters and the whole state dict must agree; a JSON round trip
(through ``tw.save``/``tw.load``) must resume identically.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import optim
from test_optimizers import (
    STEPS,
    _assert_same_state,
    _feed,
    _host,
    _make,
    _pair,
)

torch = pytest.importorskip("torch")

CASES = [
    ("Adadelta", {"lr": 1.0}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4, "weight_decay": 0.1, "maximize": True}),
    ("Adamax", {"lr": 0.01}),
    ("Adamax", {"lr": 0.02, "betas": (0.8, 0.95), "eps": 1e-4, "weight_decay": 0.1}),
    ("Adamax", {"lr": 0.02, "maximize": True, "foreach": False}),
    ("Rprop", {"lr": 0.01}),
    ("Rprop", {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (0.02, 0.08), "maximize": True}),
    ("ASGD", {"lr": 0.01}),
    ("ASGD", {"lr": 0.05, "lambd": 0.1, "alpha": 0.5, "t0": 3, "weight_decay": 0.1}),
    ("ASGD", {"lr": 0.05, "t0": 0, "maximize": True}),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]
NAMES = ["Adadelta", "Adamax", "Rprop", "ASGD"]


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_matches_torch(backend: str, name: str, kwargs: dict[str, Any]) -> None:
    ours, theirs = _pair()
    opt, ref = _make(name, ours, kwargs, optim), _make(name, theirs, kwargs, torch.optim)
    for step in range(STEPS):
        _feed(step, ours, theirs)
        opt.step()
        ref.step()
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(_host(a), _host(b), rtol=1e-12, atol=1e-14)
        _assert_same_state(opt.state_dict(), ref.state_dict())
    np.testing.assert_array_equal(_host(ours[-1]), _host(theirs[-1]))
    for p in ours[:-1]:
        for value in opt.state[p].values():
            if isinstance(value, tw.Tensor):
                assert value.device == p.device and value.dtype is tw.float64


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_state_dict_round_trip_resumes_identically(
    backend: str, name: str, kwargs: dict[str, Any], tmp_path: Path
) -> None:
    ours, theirs = _pair()
    opt = _make(name, ours, kwargs, optim)
    for step in range(3):
        _feed(step, ours, theirs)
        opt.step()
    resumed = [tw.tensor(_host(p), requires_grad=True) for p in ours]
    restored = _make(name, resumed, {"lr": 1.0}, optim)
    tw.save(opt.state_dict(), tmp_path / "optim.safetensors")  # foreach=None must survive
    restored.load_state_dict(tw.load(tmp_path / "optim.safetensors"))
    assert restored.param_groups[0] == {**opt.param_groups[0], "params": resumed[:2]}
    for step in range(3, 6):
        _feed(step, ours, theirs)
        for a, b in zip(ours, resumed):
            b.grad = None if a.grad is None else a.grad.clone()
        opt.step()
        restored.step()
        for a, b in zip(ours, resumed):
            np.testing.assert_array_equal(_host(a), _host(b))


@pytest.mark.parametrize(
    "name", [*NAMES, "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam"]
)
def test_signature_and_defaults_match_torch(name: str) -> None:
    """Every keyword of PyTorch's (foreach, fused, capturable, ...) with its default."""
    ours = inspect.signature(getattr(optim, name))
    theirs = inspect.signature(getattr(torch.optim, name))
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
        (p.name, p.kind, p.default) for p in theirs.parameters.values()
    ]
    p, ref_p = tw.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    assert getattr(optim, name)([p]).defaults == getattr(torch.optim, name)([ref_p]).defaults


@pytest.mark.parametrize("name", NAMES)
def test_float32_parameters_keep_float32(backend: str, name: str) -> None:
    rng = np.random.default_rng(2)
    value = rng.standard_normal((3, 2)).astype(np.float32)
    p = tw.tensor(value, requires_grad=True)
    ref_p = torch.tensor(value, requires_grad=True)
    opt, ref = getattr(optim, name)([p], lr=0.01), getattr(torch.optim, name)([ref_p], lr=0.01)
    for _ in range(3):
        grad = rng.standard_normal((3, 2)).astype(np.float32)
        p.grad, ref_p.grad = tw.tensor(grad), torch.tensor(grad)
        opt.step()
        ref.step()
    assert p.dtype is tw.float32
    # The moments take the parameter's dtype; the step count PyTorch's scalar dtype.
    named = [
        {k: str(v.dtype).split(".")[-1] for k, v in state.items() if hasattr(v, "dtype")}
        for state in (opt.state[p], ref.state[ref_p])
    ]
    assert named[0] == named[1]
    np.testing.assert_allclose(_host(p), _host(ref_p), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda p: optim.Adadelta(p, rho=1.5), ["Adadelta", "rho", "1.5"]),
        (lambda p: optim.Adadelta(p, lr=-1.0), ["Adadelta", "lr", "-1.0"]),
        (lambda p: optim.Adamax(p, betas=(1.0, 0.9)), ["Adamax", "betas"]),
        (lambda p: optim.Rprop(p, etas=(1.5, 1.2)), ["Rprop", "etas", "1.5"]),
        (lambda p: optim.ASGD(p, weight_decay=-0.1), ["ASGD", "weight_decay"]),
    ],
)
def test_bad_options_raise(make: Any, words: list[str]) -> None:
    with pytest.raises(ValueError) as info:
        make([tw.ones(2, requires_grad=True)])
    for word in words:
        assert word in str(info.value)
