"""MultiplicativeLR, CosineAnnealingWarmRestarts and CyclicLR against PyTorch's.

The harness of ``test_lr_scheduler.py`` (imported from it): the same two-group optimizer
and scheduler in both frameworks, stepped 30 times; learning rates and the cycled
momentum or beta1 must be equal float for float, also after a JSON round trip of the
state dicts.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest
from tensorweaver import optim
from test_lr_scheduler import STEPS, _observed, _pair, _run

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.filterwarnings("error")


class Shrink:
    """A callable object: its attributes are saved in the state dict."""

    def __init__(self, rate: float) -> None:
        self.rate = rate

    def __call__(self, x: float) -> float:
        return self.rate ** (x % 4)


def _every_third(epoch: int) -> float:
    return 0.5 if epoch % 3 == 0 else 1.0


CASES: list[tuple[str, str, Callable[[Any, Any], Any]]] = [
    ("MultiplicativeLR", "SGD", lambda m, o: m.MultiplicativeLR(o, _every_third)),
    (
        "MultiplicativeLR-list",
        "SGD",
        lambda m, o: m.MultiplicativeLR(o, [Shrink(0.9), lambda e: 0.95]),
    ),
    ("WarmRestarts", "SGD", lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=7)),
    (
        "WarmRestarts-mult",
        "SGD",
        lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=1e-3),
    ),
    ("CyclicLR", "SGD", lambda m, o: m.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4)),
    (
        "CyclicLR-triangular2",
        "SGD",
        lambda m, o: m.CyclicLR(
            o, [0.01, 0.001], [0.1, 0.05], 3, step_size_down=5, mode="triangular2"
        ),
    ),
    (
        "CyclicLR-exp_range-adam",
        "Adam",
        lambda m, o: m.CyclicLR(
            o, 0.001, 0.01, 4, mode="exp_range", gamma=0.95, base_momentum=0.85
        ),
    ),
    (
        "CyclicLR-scale_fn",
        "SGD",
        lambda m, o: m.CyclicLR(o, 0.01, 0.1, 2, 6, scale_fn=Shrink(0.8), scale_mode="iterations"),
    ),
    (
        "CyclicLR-no-momentum",
        "Adam",
        lambda m, o: m.CyclicLR(o, 0.01, 0.1, 5, cycle_momentum=False),
    ),
    (
        "SequentialLR-warm-restarts",
        "SGD",
        lambda m, o: m.SequentialLR(
            o,
            [m.LinearLR(o, start_factor=0.1, total_iters=4), m.CosineAnnealingWarmRestarts(o, 5)],
            milestones=[4],
        ),
    ),
    (
        "ChainedScheduler-cyclic",
        "SGD",
        lambda m, o: m.ChainedScheduler(
            [m.CyclicLR(o, 0.01, 0.1, 3), m.MultiplicativeLR(o, _every_third)]
        ),
    ),
]
IDS = [case[0] for case in CASES]


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


def test_callable_object_state_is_restored() -> None:
    ours, _ = _pair("SGD")
    sched = optim.lr_scheduler.CyclicLR(ours, 0.01, 0.1, 2, scale_fn=Shrink(0.8))
    saved = json.loads(json.dumps(sched.state_dict()))
    assert saved["_scale_fn_custom"] == {"rate": 0.8}
    other = optim.lr_scheduler.CyclicLR(_pair("SGD")[0], 0.01, 0.1, 2, scale_fn=Shrink(0.5))
    other.load_state_dict(saved)
    assert other._scale_fn_custom.rate == 0.8


@pytest.mark.parametrize("T_mult", [1, 2])
def test_warm_restarts_fractional_epochs_match_torch(T_mult: int) -> None:
    ours, theirs = _pair("SGD")
    sched = optim.lr_scheduler.CosineAnnealingWarmRestarts(ours, T_0=3, T_mult=T_mult)
    ref = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(theirs, T_0=3, T_mult=T_mult)
    for epoch in range(12):
        for i in range(4):
            ours.step()
            theirs.step()
            sched.step(epoch + i / 4)
            ref.step(epoch + i / 4)
            assert sched.get_last_lr() == ref.get_last_lr()
            got = (sched.T_cur, sched.T_i, sched.last_epoch)
            assert got == (ref.T_cur, ref.T_i, ref.last_epoch)


def test_every_torch_scheduler_exists() -> None:
    assert set(torch.optim.lr_scheduler.__all__) <= set(optim.lr_scheduler.__all__)
    assert issubclass(optim.lr_scheduler._LRScheduler, optim.lr_scheduler.LRScheduler)


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda m, o: m.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "T_0=0"),
        (lambda m, o: m.CosineAnnealingWarmRestarts(o, 3, T_mult=1.5), ValueError, "T_mult=1.5"),
        (lambda m, o: m.CyclicLR(o, 0.01, 0.1, mode="sine"), ValueError, "'sine'"),
        (lambda m, o: m.CyclicLR(o, [0.01], 0.1), ValueError, "base_lr has 1 values"),
        (lambda m, o: m.MultiplicativeLR(o, [_every_third]), ValueError, "lr_lambda has 1"),
    ],
)
def test_bad_arguments_raise(make: Callable, error: type, words: str) -> None:
    ours, _ = _pair("SGD")
    with pytest.raises(error, match=words.replace("(", r"\(")):
        make(optim.lr_scheduler, ours)


def test_warm_restarts_negative_epoch_raises() -> None:
    sched = optim.lr_scheduler.CosineAnnealingWarmRestarts(_pair("SGD")[0], T_0=3)
    with pytest.raises(ValueError, match="epoch=-1"):
        sched.step(-1)
