"""The "lr_scheduler.step() before optimizer.step()" warning, as PyTorch gives it.

The scheduler wraps the optimizer's ``step`` when it is created, so a subclass that
overrides ``step`` (without calling the base class's) counts as having stepped.
Each case runs in TensorWeaver and in PyTorch; both must warn, or both must not.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import pytest
import tensorweaver as tw

torch = pytest.importorskip("torch")


def _subclass(lib: Any) -> type:
    """An optimizer whose own ``step`` never calls the base class's."""

    class SignSGD(lib.optim.Optimizer):
        def __init__(self, params: Any, lr: float = 0.1) -> None:
            super().__init__(params, {"lr": lr})

        def step(self, closure: Any = None) -> None:
            with lib.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        if p.grad is not None:
                            p.sub_(p.grad.sign() * group["lr"])

    return SignSGD


def _optimizer(lib: Any, kind: str) -> tuple[Any, Any]:
    p = lib.ones(2, dtype=lib.float64, requires_grad=True)
    p.grad = lib.full((2,), -0.5, dtype=lib.float64)
    if kind == "subclass":
        return _subclass(lib)([p]), None
    if kind == "lbfgs":

        def closure() -> Any:
            opt.zero_grad()
            loss = (p**2).sum()
            loss.backward()
            return loss

        opt = lib.optim.LBFGS([p], max_iter=2)
        return opt, closure
    return lib.optim.SGD([p], lr=0.1), None


def _order_warnings(lib: Any, kind: str, order: Callable[[Any, Any, Any], None]) -> list[str]:
    opt, closure = _optimizer(lib, kind)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        order(opt, sched, closure)
    return [str(w.message) for w in caught if "step()" in str(w.message)]


def _optimizer_first(opt: Any, sched: Any, closure: Any) -> None:
    for _ in range(2):
        opt.step(closure)
        sched.step()


def _scheduler_first(opt: Any, sched: Any, closure: Any) -> None:
    sched.step()
    opt.step(closure)


def _step_replaced(opt: Any, sched: Any, closure: Any) -> None:
    original = opt.step
    opt.step = lambda closure=None: original(closure)
    opt.step(closure)
    sched.step()


@pytest.mark.parametrize("kind", ["sgd", "subclass", "lbfgs"])
@pytest.mark.parametrize(
    ("order", "warns", "words"),
    [
        (_optimizer_first, False, ""),
        (_scheduler_first, True, "before `optimizer.step()`"),
        (_step_replaced, True, "optimizer.step"),
    ],
)
def test_warns_like_torch(kind: str, order: Callable, warns: bool, words: str) -> None:
    ours = _order_warnings(tw, kind, order)
    theirs = _order_warnings(torch, kind, order)
    assert bool(ours) == bool(theirs) == warns
    assert all(words in message for message in ours)


def test_two_schedulers_wrap_step_once() -> None:
    results = []
    for lib in (tw, torch):
        opt, _ = _optimizer(lib, "subclass")
        lib.optim.lr_scheduler.StepLR(opt, step_size=1)
        lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
        if lib is tw:  # the wrapper wraps the bound method itself, not another wrapper
            assert opt.step.__wrapped__.__self__ is opt
        for _ in range(3):
            opt.step()
        results.append(opt.param_groups[0]["params"][0].tolist())
    assert results[0] == results[1]
