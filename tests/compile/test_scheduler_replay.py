"""Schedulers that cycle momentum (OneCycleLR, CyclicLR) replay one compiled graph.

The momentum of SGD and RMSprop and Adam's betas are optimizer settings the schedulers
change every step; the replay computes with the current value (as it does for ``lr``)
instead of tracing a step per value. A setting the step uses in a way the replay cannot
recompute is still followed: it retraces when the value changes.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning
from tensorweaver_torch.compile import CompiledGraphs

STEPS = 12


@pytest.fixture(autouse=True)
def core_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """The core's replay, bit-identical to eager (torch.compile's hook has its own tests)."""
    monkeypatch.setattr(CompiledGraphs, "compile_graph", None)


def _model(device: str) -> nn.Module:
    tw.manual_seed(0)
    with tw.device(device):
        return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3))


def _optimizer(name: str, params: list) -> tw.optim.Optimizer:
    if name == "sgd":
        return tw.optim.SGD(params, lr=0.1, momentum=0.9)
    if name == "nesterov":
        return tw.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True)
    if name == "rmsprop":
        return tw.optim.RMSprop(params, lr=0.01, momentum=0.9)
    if name == "adamw":
        return tw.optim.AdamW(params, lr=0.01, betas=(0.9, 0.99))
    return tw.optim.Adam(params, lr=0.01, betas=(0.9, 0.99), foreach=name == "adam-foreach")


def _scheduler(name: str, opt: tw.optim.Optimizer) -> object:
    sched = tw.optim.lr_scheduler
    if name == "onecycle":
        return sched.OneCycleLR(opt, max_lr=0.2, total_steps=STEPS + 1)
    return sched.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=3)


def _train(device: str, optimizer: str, scheduler: str, compiled: bool) -> tuple:
    """Losses, parameters and momentum settings of ``STEPS`` scheduled steps, and the step."""
    model = _model(device)
    opt = _optimizer(optimizer, list(model.parameters()))
    sched = _scheduler(scheduler, opt)
    rng = np.random.default_rng(1)
    x = tw.tensor(rng.standard_normal((5, 6)).astype(np.float32), device=device)
    y = tw.tensor([0, 1, 2, 1, 0], device=device)

    def step(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = tw.compile(step) if compiled else step
    losses, settings = [], []
    for _ in range(STEPS):
        losses.append(fn(x, y))
        sched.step()
        settings.append([(g.get("momentum"), g.get("betas")) for g in opt.param_groups])
    return losses, list(model.parameters()), settings, fn


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
@pytest.mark.parametrize(
    "optimizer, scheduler",
    [
        ("sgd", "onecycle"),
        ("nesterov", "cyclic"),
        ("rmsprop", "cyclic"),
        ("adam", "onecycle"),
        ("adam-foreach", "cyclic"),
        ("adamw", "onecycle"),
    ],
)
def test_cycled_momentum_replays_one_graph(device: str, optimizer: str, scheduler: str) -> None:
    want, want_params, want_settings, _ = _train(device, optimizer, scheduler, False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        got, got_params, got_settings, fn = _train(device, optimizer, scheduler, True)
    assert got_settings == want_settings
    assert all(a != b for a, b in zip(want_settings, want_settings[1:]))  # changed every step
    for a, b in zip(want + want_params, got + got_params):
        assert tw.equal(a, b)  # bit for bit: the same primitives with the same numbers
    assert fn.traces == 3  # grads appear, then two traces agree; never one per momentum


class _BakingSGD(tw.optim.SGD):
    """SGD whose learning rate and momentum reach the backend through ``float()``: numbers
    the replay cannot recompute, so the graph bakes them in."""

    @tw.no_grad()
    def step(self, closure: object = None) -> None:
        for group in self.param_groups:
            lr, momentum = float(group["lr"]), float(group["momentum"])
            for p in group["params"]:
                state = self.state.setdefault(p, {})
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = p.grad.clone()
                else:
                    buf.mul_(momentum).add_(p.grad)
                p.add_(buf, alpha=-lr)


@pytest.mark.parametrize("setting, value", [("lr", 0.5), ("momentum", 0.5)])
def test_a_baked_setting_is_guarded_by_value(setting: str, value: float) -> None:
    """A setting baked into the graph while it held still, changed later, traces again
    rather than replaying the old value (it replayed the old learning rate before)."""

    def run(compiled: bool) -> tuple:
        model = _model("numpy")
        opt = _BakingSGD(model.parameters(), lr=0.1, momentum=0.9)
        x = tw.tensor(np.linspace(-1, 1, 30, dtype=np.float32).reshape(5, 6))
        y = tw.tensor([0, 1, 2, 1, 0])

        def step() -> tw.Tensor:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = tw.compile(step) if compiled else step
        losses = [fn() for _ in range(5)]
        opt.param_groups[0][setting] = value
        losses += [fn() for _ in range(3)]
        return losses + list(model.parameters()), fn

    (want, _), (got, fn) = run(False), run(True)
    for a, b in zip(want, got):
        assert tw.equal(a, b)
    assert fn.traces == 5  # the changed setting was traced (twice), not replayed as before
