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


class _Trainer:
    """An object holding a scheduler, which the step reaches through an attribute."""

    def __init__(self, sched: Any) -> None:
        self.sched = sched


def _stepped_inside(how: str) -> tuple:
    """A step that steps a scheduler (decaying at the fifth step only) in ways the step's
    own names do not show: a ChainedScheduler around it, an attribute of a named object,
    a helper function the step calls."""
    model, opt, _, _ = _training("numpy", 0.0)
    decay = lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    sched = lr_scheduler.ChainedScheduler([decay]) if how == "chained" else decay
    trainer = _Trainer(sched)

    def advance() -> None:
        sched.step()

    def train(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        opt.zero_grad()
        out = F.cross_entropy(model(x), y)
        out.backward()
        opt.step()
        return out

    # (one function each: a step naming ``sched`` anywhere in its code reaches it directly)
    def chained(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        out = train(x, y)
        sched.step()
        return out

    def attribute(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        out = train(x, y)
        trainer.sched.step()
        return out

    def helper(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        out = train(x, y)
        advance()
        return out

    step = {"chained": chained, "attribute": attribute, "helper": helper}[how]
    return model, opt, decay, step


@pytest.mark.parametrize("how", ["chained", "attribute", "helper"])
def test_a_scheduler_the_step_reaches_indirectly_advances_as_eagerly(how: str) -> None:
    """The scheduler check looked only at schedulers the step names, by their numbers: a
    ChainedScheduler has none (its children count), and one reached through an object's
    attribute or a helper function was not seen. Three traces between decays agreed, and
    the replay left the lr at 0.1 where eagerly it halved at the fifth step."""
    data = _batches("numpy")
    model, opt, decay, step = _stepped_inside(how)
    want = [(float(step(x, y)), decay.last_epoch, opt.param_groups[0]["lr"]) for x, y in data]
    want_params = [p.clone() for p in model.parameters()]
    model, opt, decay, step = _stepped_inside(how)
    fn = tw.compile(step)
    with pytest.warns(CompileWarning, match=r"scheduler\.step\(\) after the compiled function"):
        got = [(float(fn(x, y)), decay.last_epoch, opt.param_groups[0]["lr"]) for x, y in data]
    assert got == want and want[-1][2] == 0.05
    for a, b in zip(model.parameters(), want_params):
        assert tw.equal(a, b)


def test_a_scheduler_passed_as_an_argument_and_stepped_inside_traces_once() -> None:
    """A scheduler among the arguments is no root whose numbers the signature holds:
    its step advances last_epoch, which would make every call trace again."""
    data = _batches("numpy")
    model, opt, _, _ = _training("numpy", 0.0)
    sched = lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)

    def step(x: tw.Tensor, y: tw.Tensor, s: Any) -> tw.Tensor:
        opt.zero_grad()
        out = F.cross_entropy(model(x), y)
        out.backward()
        opt.step()
        s.step()
        return out

    fn = tw.compile(step)
    with pytest.warns(CompileWarning, match=r"scheduler\.step\(\)"):
        for x, y in data:
            fn(x, y, sched)
    assert fn.traces == 2 and sched.last_epoch == len(data)


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_a_check_that_needs_a_draw_leaves_the_stopped_replays_draws_to_the_trace(
    device: str,
) -> None:
    """A gather on random indices makes the core check them, a check that needs the draw:
    no check was hoisted then, and the ignored targets' check, stopping the replay after
    the dropout mask and the indices were drawn, had the trace draw them again (every later
    draw was the eager one of the next). A stopped replay now puts the generators back."""
    weight = tw.tensor([0.5, 1.0, 2.0, 1.5], device=device)
    data = _batches(device, ignore=-100)

    def build() -> tuple:
        model, opt, _, _ = _training(device, 0.3)

        def step(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
            opt.zero_grad()
            h = model(x)
            idx = tw.randint(0, 4, (8, 1), device=device)
            out = F.cross_entropy(h, y, weight=weight) + h.gather(1, idx).sum()
            out.backward()
            opt.step()
            return out

        return model, step

    model, step = build()
    want = _run(step, data)
    want_params = [p.clone() for p in model.parameters()]
    model, step = build()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)  # (checks that keep failing: eager)
        got = _run(tw.compile(step, backend="tensorweaver"), data)
    for a, b in zip([*got, *model.parameters()], [*want, *want_params]):
        assert tw.equal(a, b)


def test_a_write_into_numpy_memory_before_a_check_writes_once() -> None:
    """The step scales its input in place, memory it shares with NumPy, then the core checks
    the ignored targets: a replay that check stopped had written already, and the trace
    that followed scaled the input a second time. The check reads the targets alone, so it
    now runs before the write (compiler/graph.py ``_hoist_checks``) and the step replays."""
    weight = tw.tensor([0.5, 1.0, 2.0, 1.5])
    arrays = [np.asarray(x).copy() for x, _ in _batches("numpy")]
    targets = [y for _, y in _batches("numpy", ignore=-100)]

    def run(compiled: bool) -> tuple:
        model, opt, _, _ = _training("numpy", 0.0)

        def step(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
            opt.zero_grad()
            x.mul_(0.5)
            out = F.cross_entropy(model(x), y, weight=weight)
            out.backward()
            opt.step()
            return out

        fn = tw.compile(step, backend="tensorweaver") if compiled else step
        xs = [a.copy() for a in arrays]
        losses = [fn(tw.from_numpy(x), y) for x, y in zip(xs, targets)]
        return losses, xs, list(model.parameters())

    want = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        got = run(True)
    for a, b in zip([*got[0], *got[2]], [*want[0], *want[2]]):
        assert tw.equal(a, b)
    for a, b in zip(got[1], want[1]):
        assert np.array_equal(a, b)
