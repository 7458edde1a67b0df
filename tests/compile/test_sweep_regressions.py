"""The defects the compile sweep (test_sweep_programs.py) found, each as a named test that
failed before its fix."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning
from tensorweaver.optim import lr_scheduler

STEPS = 7


def _training(device: str, dropout: float, scheduler: Callable | None = None, **loss: Any) -> tuple:
    tw.manual_seed(0)
    with tw.device(device):
        model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Dropout(dropout), nn.Linear(8, 4))
    opt = tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = scheduler(opt) if scheduler is not None else None

    def step(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        opt.zero_grad()
        out = F.cross_entropy(model(x), y, **loss)
        out.backward()
        opt.step()
        if sched is not None:
            sched.step()
        return out

    return model, opt, sched, step


def _batches(device: str, ignore: int | None = None) -> list[tuple]:
    """Seven batches; with ``ignore``, each has ignored targets but the fifth."""
    out = []
    for k in range(STEPS):
        rng = np.random.default_rng(k)
        y = np.array([1, 3, 0, 2, 3, 1, 0, 2])
        if ignore is not None and k != 4:
            y[[2, 5]] = ignore
        x = rng.standard_normal((8, 6)).astype(np.float32)
        out.append((tw.tensor(x, device=device), tw.tensor(y, device=device)))
    return out


def _run(step: Callable, data: list[tuple]) -> list:
    tw.manual_seed(1)
    return [step(x, y) for x, y in data]


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_a_check_that_stops_a_replay_leaves_the_dropout_masks_to_the_trace(device: str) -> None:
    """A weighted cross-entropy with ignored targets reads the ignored positions back and
    checks them on replay; a batch without any stops the replay and traces. The replay had
    drawn the dropout mask before the check, and the trace drew it again: every later mask
    was the eager one of the next draw (sweep seed 114). Checks now run before any draw."""
    weight = tw.tensor([0.5, 1.0, 2.0, 1.5], device=device)
    loss = {"weight": weight, "ignore_index": -100}
    data = _batches(device, ignore=-100)
    model, _, _, step = _training(device, 0.3, **loss)
    want = _run(step, data)
    want_params = [p.clone() for p in model.parameters()]
    model, _, _, step = _training(device, 0.3, **loss)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)  # (checks that keep failing: eager)
        got = _run(tw.compile(step, backend="tensorweaver"), data)
    for a, b in zip(got, want):
        assert tw.equal(a, b)
    for a, b in zip(model.parameters(), want_params):
        assert tw.equal(a, b)


@pytest.mark.parametrize(
    "make",
    [
        lambda opt: lr_scheduler.ExponentialLR(opt, gamma=0.8),
        lambda opt: lr_scheduler.StepLR(opt, step_size=3, gamma=0.5),
    ],
    ids=["exponential", "step-every-3"],
)
def test_a_scheduler_stepped_inside_the_step_advances_as_eagerly(make: Callable) -> None:
    """``scheduler.step()`` inside a compiled step: a replay recomputed the group's lr
    (ExponentialLR's ``lr * gamma``) but left ``last_epoch`` and ``get_last_lr()`` as
    traced (sweep seed 2), and StepLR(step_size=3), traced twice between its decays,
    replayed "no decay" at the third step. Such a step now runs eagerly, with a warning."""
    data = _batches("numpy")
    model, opt, sched, step = _training("numpy", 0.0, make)
    want = [(float(step(x, y)), sched.last_epoch, sched.get_last_lr()) for x, y in data]
    want_params = [p.clone() for p in model.parameters()]
    model, opt, sched, step = _training("numpy", 0.0, make)
    fn = tw.compile(step)
    with pytest.warns(CompileWarning, match=r"scheduler\.step\(\) after the compiled function"):
        got = [(float(fn(x, y)), sched.last_epoch, sched.get_last_lr()) for x, y in data]
    assert got == want
    assert opt.param_groups[0]["lr"] == want[-1][2][0]
    for a, b in zip(model.parameters(), want_params):
        assert tw.equal(a, b)


def test_a_scheduler_stepped_after_the_compiled_step_replays() -> None:
    """The fix leaves a scheduler stepped outside alone: one graph, replayed."""
    data = _batches("numpy")
    model, opt, sched, step = _training("numpy", 0.0)
    sched = lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    want = []
    for x, y in data:
        want.append(float(step(x, y)))
        sched.step()
    model, opt, _, step = _training("numpy", 0.0)
    sched = lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    fn = tw.compile(step)
    got = []
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for x, y in data:
            got.append(float(fn(x, y)))
            sched.step()
    assert got == want and fn.traces == 3


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_a_fresh_argument_requiring_grad_replays_with_its_gradient(device: str) -> None:
    """Each call passes a new input that requires grad, and the step's backward gives it a
    gradient: the step changed its argument's signature (grad None -> a gradient), which
    counted as a step changing what it was specialised on, so after three calls the
    function ran eagerly for good, with a warning (sweep seed 311). The gradient is now
    replayed, and the next fresh input has the traced signature."""
    data = _batches(device)
    model, _, _, step = _training(device, 0.0)

    def run(fn: Callable) -> list:
        grads = []
        for x, y in data:
            x.requires_grad_(True)
            fn(x, y)
            grads.append(x.grad)
        return grads

    want = run(step)
    want_params = [p.clone() for p in model.parameters()]
    data = _batches(device)
    model, _, _, step = _training(device, 0.0)
    fn = tw.compile(step, backend="tensorweaver")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        got = run(fn)
    assert fn.traces == 3
    for a, b in zip([*got, *model.parameters()], [*want, *want_params]):
        assert tw.equal(a, b)
