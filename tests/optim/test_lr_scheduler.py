"""Every lr scheduler against ``torch.optim.lr_scheduler``: the same lr sequence, exactly.

Each case builds the same two-group optimizer and scheduler in both frameworks and
steps them 30 times; the learning rates (and the momentum or betas that OneCycleLR
cycles) must be equal float for float, also after a JSON round trip of the state.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

import pytest
import tensorweaver as tw
from tensorweaver import optim

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("error")  # neither side may warn about call order

STEPS = 30


class Warmup:
    """A callable object: LambdaLR saves its attributes in the state dict."""

    def __init__(self, epochs: int) -> None:
        self.epochs = epochs

    def __call__(self, epoch: int) -> float:
        return min(1.0, (epoch + 1) / self.epochs) * 0.97**epoch


def _lambda(epoch: int) -> float:
    return 0.95**epoch * (1 + epoch % 3)


# (id, optimizer name, scheduler factory taking (lr_scheduler module, optimizer))
CASES: list[tuple[str, str, Callable[[Any, Any], Any]]] = [
    ("StepLR", "SGD", lambda m, o: m.StepLR(o, step_size=4, gamma=0.5)),
    ("MultiStepLR", "SGD", lambda m, o: m.MultiStepLR(o, milestones=[3, 8, 8, 20], gamma=0.3)),
    ("ExponentialLR", "SGD", lambda m, o: m.ExponentialLR(o, gamma=0.9)),
    ("CosineAnnealingLR", "SGD", lambda m, o: m.CosineAnnealingLR(o, T_max=10, eta_min=1e-3)),
    ("CosineAnnealingLR-0", "Adam", lambda m, o: m.CosineAnnealingLR(o, T_max=7)),
    ("LinearLR", "SGD", lambda m, o: m.LinearLR(o, 0.25, 0.9, total_iters=12)),
    ("ConstantLR", "SGD", lambda m, o: m.ConstantLR(o, factor=0.5, total_iters=4)),
    ("PolynomialLR", "SGD", lambda m, o: m.PolynomialLR(o, total_iters=20, power=2.0)),
    ("LambdaLR", "SGD", lambda m, o: m.LambdaLR(o, _lambda)),
    ("LambdaLR-list", "SGD", lambda m, o: m.LambdaLR(o, [Warmup(5), _lambda])),
    ("OneCycleLR", "SGD", lambda m, o: m.OneCycleLR(o, max_lr=[1.0, 0.1], total_steps=STEPS)),
    (
        "OneCycleLR-linear-3",
        "SGD",
        lambda m, o: m.OneCycleLR(
            o,
            max_lr=0.5,
            total_steps=STEPS,
            pct_start=0.25,
            anneal_strategy="linear",
            three_phase=True,
            div_factor=10.0,
            final_div_factor=100.0,
            base_momentum=[0.8, 0.7],
        ),
    ),
    ("OneCycleLR-adam", "Adam", lambda m, o: m.OneCycleLR(o, 0.01, epochs=3, steps_per_epoch=10)),
    (
        "OneCycleLR-fixed-momentum",
        "SGD",
        lambda m, o: m.OneCycleLR(o, 0.2, total_steps=STEPS, cycle_momentum=False),
    ),
    (
        "SequentialLR",
        "SGD",
        lambda m, o: m.SequentialLR(
            o,
            [m.LinearLR(o, start_factor=0.1, total_iters=5), m.CosineAnnealingLR(o, 15, 1e-3)],
            milestones=[5],
        ),
    ),
    (
        "SequentialLR-3",
        "SGD",
        lambda m, o: m.SequentialLR(
            o,
            [m.ConstantLR(o, 0.5, 3), m.ExponentialLR(o, 0.9), m.StepLR(o, 3, 0.5)],
            milestones=[4, 12],
        ),
    ),
    (
        "ChainedScheduler",
        "SGD",
        lambda m, o: m.ChainedScheduler([m.ConstantLR(o, 0.1, 3), m.ExponentialLR(o, 0.9)]),
    ),
]
IDS = [case[0] for case in CASES]


def _optimizer(lib: Any, name: str, param_factory: Callable[[], Any]) -> Any:
    groups = [{"params": [param_factory()]}, {"params": [param_factory()], "lr": 0.01}]
    if name == "SGD":
        return lib.SGD(groups, lr=0.1, momentum=0.9)
    return lib.Adam(groups, lr=0.1)


def _pair(name: str) -> tuple[Any, Any]:
    ours = _optimizer(optim, name, lambda: tw.zeros(2, requires_grad=True))
    theirs = _optimizer(torch.optim, name, lambda: torch.zeros(2, requires_grad=True))
    return ours, theirs


def _observed(optimizer: Any, scheduler: Any) -> list[Any]:
    """What a schedule sets: the last lrs and, per group, lr and momentum or beta1."""
    seen: list[Any] = [list(scheduler.get_last_lr())]
    for group in optimizer.param_groups:
        seen.append((group["lr"], group.get("momentum"), list(group.get("betas", ()))))
    return seen


def _run(optimizer: Any, scheduler: Any, steps: int) -> list[list[Any]]:
    history = []
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        history.append(_observed(optimizer, scheduler))
    return history


@pytest.mark.parametrize(("case", "opt_name", "factory"), CASES, ids=IDS)
def test_lr_sequence_matches_torch(case: str, opt_name: str, factory: Callable) -> None:
    ours, theirs = _pair(opt_name)
    sched = factory(optim.lr_scheduler, ours)
    ref = factory(torch.optim.lr_scheduler, theirs)
    assert _observed(ours, sched) == _observed(theirs, ref)
    assert _run(ours, sched, STEPS) == _run(theirs, ref, STEPS)


@pytest.mark.parametrize(("case", "opt_name", "factory"), CASES, ids=IDS)
def test_state_dict_round_trip_resumes(case: str, opt_name: str, factory: Callable) -> None:
    ours, _ = _pair(opt_name)
    sched = factory(optim.lr_scheduler, ours)
    _run(ours, sched, 10)
    opt_state = json.loads(json.dumps(ours.state_dict()))
    sched_state = json.loads(json.dumps(sched.state_dict()))

    resumed, _ = _pair(opt_name)
    resumed_sched = factory(optim.lr_scheduler, resumed)
    resumed.load_state_dict(opt_state)
    resumed_sched.load_state_dict(sched_state)
    assert _observed(resumed, resumed_sched) == _observed(ours, sched)
    assert _run(resumed, resumed_sched, STEPS - 10) == _run(ours, sched, STEPS - 10)


PLATEAU = [1.0, 0.9, 0.9, 0.91, 0.9, 0.9, 0.85, 0.8, 0.8, 0.8, 0.81, 0.8, 0.79, 0.8]
PLATEAU += [0.8, 0.6, 0.61, 0.6, 0.6, 0.6, 0.6, 0.59, 0.6, 0.6, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"patience": 2},
        {"patience": 1, "cooldown": 2, "factor": 0.5, "min_lr": [0.02, 0.0]},
        {"mode": "max", "threshold_mode": "abs", "threshold": 0.05, "patience": 0},
        {"threshold_mode": "abs", "threshold": 0.02, "patience": 1, "min_lr": 0.004, "eps": 0.0},
    ],
)
def test_reduce_lr_on_plateau_matches_torch(kwargs: dict[str, Any]) -> None:
    ours, theirs = _pair("SGD")
    sched = optim.lr_scheduler.ReduceLROnPlateau(ours, **kwargs)
    ref = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs, **kwargs)
    for i, metric in enumerate(PLATEAU):
        ours.step()
        theirs.step()
        sched.step(tw.tensor(metric, dtype=tw.float64) if i % 2 else metric)
        ref.step(metric)
        assert sched.get_last_lr() == ref.get_last_lr()
        assert (sched.best, sched.num_bad_epochs) == (ref.best, ref.num_bad_epochs)
    assert sched.get_last_lr() != [0.1, 0.01]  # the lr did drop

    restored = optim.lr_scheduler.ReduceLROnPlateau(_pair("SGD")[0])
    restored.load_state_dict(json.loads(json.dumps(sched.state_dict())))
    for key in ("best", "mode", "cooldown", "num_bad_epochs", "min_lrs", "last_epoch"):
        assert getattr(restored, key) == getattr(sched, key), key


def test_stepping_the_scheduler_first_warns() -> None:
    ours, _ = _pair("SGD")
    sched = optim.lr_scheduler.StepLR(ours, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step"):
        sched.step()


def test_one_cycle_lr_past_total_steps_raises() -> None:
    ours, theirs = _pair("SGD")
    sched = optim.lr_scheduler.OneCycleLR(ours, max_lr=1.0, total_steps=4)
    ref = torch.optim.lr_scheduler.OneCycleLR(theirs, max_lr=1.0, total_steps=4)
    _run(ours, sched, 4)
    _run(theirs, ref, 4)
    with pytest.raises(ValueError, match="total_steps=4"):
        _run(ours, sched, 1)
    with pytest.raises(ValueError):
        _run(theirs, ref, 1)


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda m, o: m.LinearLR(o, start_factor=0.0), ValueError, "start_factor=0.0"),
        (lambda m, o: m.ConstantLR(o, factor=1.5), ValueError, "factor=1.5"),
        (lambda m, o: m.OneCycleLR(o, max_lr=1.0), ValueError, "total_steps"),
        (lambda m, o: m.OneCycleLR(o, 1.0, 10, anneal_strategy="exp"), ValueError, "'exp'"),
        (lambda m, o: m.OneCycleLR(o, [1.0], 10), ValueError, "max_lr has 1 values"),
        (lambda m, o: m.StepLR(o, 3, last_epoch=4), KeyError, "initial_lr"),
        (lambda m, o: m.ReduceLROnPlateau(o, mode="mid"), ValueError, "'mid'"),
        (
            lambda m, o: m.SequentialLR(o, [m.StepLR(o, 2), m.StepLR(o, 3)], milestones=[]),
            ValueError,
            "expected 1 milestones",
        ),
        (lambda m, o: m.StepLR(object(), 3), TypeError, "not a tw.optim.Optimizer"),
    ],
)
def test_bad_arguments_raise(make: Callable, error: type, words: str) -> None:
    ours, _ = _pair("SGD")
    with pytest.raises(error, match=re.escape(words)):
        make(optim.lr_scheduler, ours)
