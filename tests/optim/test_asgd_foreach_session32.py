"""Session 32: ASGD's eta and mu, step by step, bit for bit as PyTorch's: its foreach step
computes eta from the step tensor, one tensor operation (and one rounding to the step's
dtype) at a time, ``lr / t`` as ``t.reciprocal() * lr``; its single-tensor step from the
step's value in float64, rounded once. Compared with real torch 2.13."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from snippet_outcomes import same

DEVICES = ["numpy", "torch:cpu"]
STEPS = 12

#: options: torch.pow's general kernel (alpha 0.75), its reciprocal kernel (alpha -1), its
#: square kernel beside a tensor lr (lr / t then a division of two tensors)
CASES = {
    "pow": {"lr": 0.05, "lambd": 0.3, "alpha": 0.75, "t0": 10},
    "reciprocal-decay": {"lr": 0.1, "lambd": 0.7, "alpha": -1.0, "t0": 20, "weight_decay": 0.1},
    "square-tensor-lr": {"lr": 0.37, "lambd": 0.013, "alpha": 2.0, "t0": 5},
}

_DRAWN = np.random.default_rng(32).standard_normal((STEPS + 1, 2, 4))


def _stepping(case: str, foreach: bool) -> Callable:
    options = dict(CASES[case])

    def program(m: Any) -> Any:
        if case.endswith("tensor-lr"):
            options["lr"] = m.tensor(options["lr"])
        p = m.nn.Parameter(m.tensor(_DRAWN[0, 0], dtype=m.float32))
        q = m.nn.Parameter(m.tensor(_DRAWN[0, 1], dtype=m.float64))
        opt = m.optim.ASGD([p, q], foreach=foreach, **options)
        schedule = []
        for drawn in _DRAWN[1:]:
            p.grad = m.tensor(drawn[0], dtype=m.float32)
            q.grad = m.tensor(drawn[1], dtype=m.float64)
            opt.step()
            schedule.append(tuple(opt.state[p][k].item() for k in ("step", "eta", "mu")))
        return schedule, p, q, opt.state[p]["ax"], opt.state[q]["ax"]

    return program


def _schedule_only(program: Callable) -> Callable:
    return lambda m: program(m)[0]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("state_dtype", ["float32", "float64"])
@pytest.mark.parametrize("foreach", [True, False])
@pytest.mark.parametrize("case", list(CASES))
def test_asgd_schedule_bit_for_bit(case: str, foreach: bool, state_dtype: str, device: str):
    # before (foreach=True): eta an ulp off torch's at about half the steps (computed in
    # float64 and rounded once, as the single-tensor step does); the parameters then drift
    torch.set_default_dtype(getattr(torch, state_dtype))  # (the scalar state's dtype;
    tw.set_default_dtype(getattr(tw, state_dtype))  # conftest.py restores it)
    same(_schedule_only(_stepping(case, foreach)), device, decimals=None)


@pytest.mark.parametrize("device", DEVICES)
def test_foreach_asgd_parameters(device: str) -> None:
    # (torch's addcmul rounds as its kernel was compiled, fused or not: to 12 or 5 digits)
    torch.set_default_dtype(torch.float32)
    tw.set_default_dtype(tw.float32)
    same(_stepping("reciprocal-decay", True), device, decimals=12, single=5)


def test_compiled_foreach_asgd_replays_the_schedule() -> None:
    # the foreach eta is a chain of roundings of the step: a compiled step recomputes it
    def step_of(m: Any) -> tuple[Any, Any, Callable]:
        w = m.nn.Parameter(m.tensor(_DRAWN[0, 0], dtype=m.float64))
        opt = m.optim.ASGD([w], foreach=True, **CASES["pow"])

        def step() -> None:
            opt.zero_grad()
            (w * w * w).sum().backward()
            opt.step()

        return w, opt, step

    torch.set_default_dtype(torch.float32)
    tw.set_default_dtype(tw.float32)
    theirs, their_opt, their_step = step_of(torch)
    ours, our_opt, our_step = step_of(tw)
    run = tw.compile(our_step, backend="tensorweaver")
    for _ in range(8):
        their_step()
        run()
        for key in ("step", "eta", "mu"):
            assert our_opt.state[ours][key].item() == their_opt.state[theirs][key].item()
    assert run.traces == 3  # (then replayed)
