"""A sweep of every learning-rate scheduler against ``torch.optim.lr_scheduler``.

Each case runs 40 epochs on an optimizer with two param groups of different lrs: plainly,
with the groups' lrs as 0-d tensors (which schedulers fill in place), and with the
deprecated ``step(epoch)`` (the closed forms). The lrs, ``get_last_lr()``, the warnings
and the state dict's keys must agree; a state dict saved midway resumes identically.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw

torch = pytest.importorskip("torch")

STEPS = 40


def _s(lib: Any) -> Any:
    return lib.optim.lr_scheduler


CASES: dict[str, Callable[[Any, Any], Any]] = {
    "StepLR": lambda lib, o: _s(lib).StepLR(o, 7, gamma=0.5),
    "MultiStepLR": lambda lib, o: _s(lib).MultiStepLR(o, [3, 8, 8, 20], gamma=0.3),
    "ConstantLR": lambda lib, o: _s(lib).ConstantLR(o, factor=0.25, total_iters=6),
    "LinearLR": lambda lib, o: _s(lib).LinearLR(o, 0.1, 0.9, total_iters=12),
    "ExponentialLR": lambda lib, o: _s(lib).ExponentialLR(o, 0.93),
    "PolynomialLR": lambda lib, o: _s(lib).PolynomialLR(o, total_iters=17, power=1.7),
    "CosineAnnealingLR": lambda lib, o: _s(lib).CosineAnnealingLR(o, T_max=9, eta_min=0.01),
    "WarmRestarts": lambda lib, o: _s(lib).CosineAnnealingWarmRestarts(o, 5, 2, eta_min=1e-3),
    "LambdaLR": lambda lib, o: _s(lib).LambdaLR(o, lambda e: 0.95**e + 0.01 * e),
    "LambdaLR-each": lambda lib, o: _s(lib).LambdaLR(o, [lambda e: 0.9**e, lambda e: 1 / (1 + e)]),
    "MultiplicativeLR": lambda lib, o: _s(lib).MultiplicativeLR(o, lambda e: 0.97),
    "CyclicLR": lambda lib, o: _s(lib).CyclicLR(
        o, 0.01, 0.2, step_size_up=4, step_size_down=6, mode="triangular2"
    ),
    "CyclicLR-exp": lambda lib, o: _s(lib).CyclicLR(
        o, [0.01, 0.02], [0.2, 0.3], step_size_up=5, mode="exp_range", gamma=0.97
    ),
    "CyclicLR-fn": lambda lib, o: _s(lib).CyclicLR(
        o, 0.01, 0.2, step_size_up=3, scale_fn=lambda x: 0.5**x, scale_mode="iterations"
    ),
    "OneCycleLR": lambda lib, o: _s(lib).OneCycleLR(o, max_lr=[0.5, 1.0], total_steps=STEPS + 1),
    "OneCycleLR-linear": lambda lib, o: _s(lib).OneCycleLR(
        o, 0.5, epochs=5, steps_per_epoch=9, anneal_strategy="linear", three_phase=True
    ),
    "SequentialLR": lambda lib, o: _s(lib).SequentialLR(
        o,
        [
            _s(lib).LinearLR(o, 0.1, total_iters=5),
            _s(lib).ExponentialLR(o, 0.9),
            _s(lib).StepLR(o, 3),
        ],
        milestones=[5, 15],
    ),
    "ChainedScheduler": lambda lib, o: _s(lib).ChainedScheduler(
        [_s(lib).ConstantLR(o, 0.5, total_iters=4), _s(lib).ExponentialLR(o, 0.9)]
    ),
}
# Schedulers whose step() takes no epoch, and those with no closed form PyTorch uses.
NO_EPOCH = {"SequentialLR", "ChainedScheduler"}


def _optimizer(lib: Any, tensor_lr: bool = False) -> Any:
    params = [lib.zeros(2, dtype=lib.float64, requires_grad=True) for _ in range(2)]
    groups = [{"params": [p], "lr": 0.1 * (i + 1)} for i, p in enumerate(params)]
    if tensor_lr:
        for group in groups:
            group["lr"] = lib.tensor(group["lr"], dtype=lib.float64)
    return lib.optim.SGD(groups, momentum=0.9)


def _lrs(scheduler: Any, opt: Any) -> list[float]:
    return [float(x) for x in scheduler.get_last_lr()] + [float(g["lr"]) for g in opt.param_groups]


def _run(lib: Any, case: str, mode: str) -> tuple[list[list[float]], list[str], Any, Any]:
    opt = _optimizer(lib, tensor_lr=mode == "tensor")
    opt.given_lrs = [group["lr"] for group in opt.param_groups]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scheduler = CASES[case](lib, opt)
        lrs = []
        for epoch in range(1, STEPS):
            opt.step()
            if mode == "epoch":
                scheduler.step(epoch if epoch % 3 else epoch + 2)
            else:
                scheduler.step()
            lrs.append(_lrs(scheduler, opt))
    return lrs, [f"{w.category.__name__}: {w.message}" for w in caught], scheduler, opt


@pytest.mark.parametrize("mode", ["plain", "tensor", "epoch"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case: str, mode: str) -> None:
    if mode == "epoch" and case in NO_EPOCH:
        for lib in (tw, torch):
            with pytest.raises(TypeError):
                CASES[case](lib, _optimizer(lib)).step(3)
        return
    ours, ours_warnings, scheduler, opt = _run(tw, case, mode)
    theirs, their_warnings, ref, ref_opt = _run(torch, case, mode)
    np.testing.assert_allclose(ours, theirs, rtol=1e-14, atol=0)
    assert ours_warnings == their_warnings
    if mode == "tensor":
        for lib_opt in (opt, ref_opt):  # the tensors given are written in place
            assert all(g["lr"] is lr for g, lr in zip(lib_opt.param_groups, lib_opt.given_lrs))
        assert [type(x).__name__ for x in scheduler.get_last_lr()] == ["Tensor"] * 2
    assert set(scheduler.state_dict()) == set(ref.state_dict())


@pytest.mark.parametrize("case", sorted(set(CASES) - {"LambdaLR", "LambdaLR-each"}))
def test_state_dict_midway_resumes(case: str) -> None:
    """Saved at epoch 15 into a new optimizer and scheduler, the schedule continues."""
    sequences = []
    for lib in (tw, torch):
        opt = _optimizer(lib)
        scheduler = CASES[case](lib, opt)
        for _ in range(15):
            opt.step()
            scheduler.step()
        saved, saved_opt = scheduler.state_dict(), opt.state_dict()
        new_opt = _optimizer(lib)
        new_opt.load_state_dict(saved_opt)
        resumed = CASES[case](lib, new_opt)
        resumed.load_state_dict(saved)
        sequence = []
        for _ in range(15):
            new_opt.step()
            resumed.step()
            sequence.append(_lrs(resumed, new_opt))
        sequences.append(sequence)
    np.testing.assert_allclose(sequences[0], sequences[1], rtol=1e-14, atol=0)


@pytest.mark.parametrize(
    "make",
    [
        lambda lib, o: _s(lib).StepLR(o, 4, gamma=0.5, last_epoch=6),
        lambda lib, o: _s(lib).ExponentialLR(o, 0.9, last_epoch=3),
        lambda lib, o: _s(lib).CosineAnnealingLR(o, T_max=10, last_epoch=4),
        lambda lib, o: _s(lib).PolynomialLR(o, total_iters=12, last_epoch=5),
    ],
)
def test_last_epoch_resumes_like_torch(make: Callable) -> None:
    """A scheduler built with ``last_epoch`` over an optimizer that holds ``initial_lr``."""
    sequences = []
    for lib in (tw, torch):
        opt = _optimizer(lib)
        for group in opt.param_groups:
            group["initial_lr"] = group["lr"] * 2
        scheduler = make(lib, opt)
        sequence = [_lrs(scheduler, opt)]
        for _ in range(12):
            opt.step()
            scheduler.step()
            sequence.append(_lrs(scheduler, opt))
        sequences.append(sequence)
    np.testing.assert_allclose(sequences[0], sequences[1], rtol=1e-14, atol=0)


@pytest.mark.parametrize("mode", ["min", "max"])
@pytest.mark.parametrize("threshold_mode", ["rel", "abs"])
def test_reduce_on_plateau_matches_torch(mode: str, threshold_mode: str) -> None:
    results = []
    for lib in (tw, torch):
        opt = _optimizer(lib)
        scheduler = _s(lib).ReduceLROnPlateau(
            opt, mode, 0.5, patience=2, threshold=0.05, threshold_mode=threshold_mode,
            cooldown=1, min_lr=[1e-3, 2e-3], eps=1e-4,
        )  # fmt: skip
        sign = 1 if mode == "min" else -1
        lrs = []
        for i in range(STEPS):
            opt.step()
            metric = sign * math.sin(i) + 0.01 * i
            scheduler.step(lib.tensor(metric) if i % 2 else metric)
            lrs.append(_lrs(scheduler, opt))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            scheduler.step(0.0, epoch=50)
        state = {k: v for k, v in scheduler.state_dict().items()}
        results.append((lrs, [str(w.message) for w in caught], sorted(state), state["last_epoch"]))
    assert results[0] == results[1]
