"""Optimizer settings a user or scheduler changes between compiled steps: every step's loss
and parameters are the eager step's bit for bit (no replay of an old value), a step that
returns a recomputed setting replays, and the generated guard of tuple arguments accepts
exactly the calls of its signature."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning
from tensorweaver.compiler.state import StepState

STEPS = 8
OPTIMIZERS: dict[str, Callable] = {
    "sgd": lambda p: tw.optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, foreach=False),
    "sgd-foreach": lambda p: tw.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01, foreach=True),
    "adam": lambda p: tw.optim.Adam(p, lr=0.01, betas=(0.9, 0.99), foreach=False),
    "adamw-foreach": lambda p: tw.optim.AdamW(p, lr=0.01, betas=(0.9, 0.99), foreach=True),
    "rmsprop": lambda p: tw.optim.RMSprop(p, lr=0.01, momentum=0.5, centered=True),
}
#: setting -> its value at step i (None: left as it is); the numbers every step, as a
#: scheduler does, the others once, as a user does.
CHANGES: dict[str, Callable[[Any, int], Any]] = {
    "lr": lambda v, i: 0.01 + 0.003 * i,
    "momentum": lambda v, i: 0.5 + 0.04 * i,
    "betas": lambda v, i: (0.8 + 0.01 * i, 0.95 + 0.003 * i),
    "weight_decay": lambda v, i: 0.05 if i == 5 else None,
    "eps": lambda v, i: 1e-3 if i == 5 else None,
    "dampening": lambda v, i: 0.3 if i == 5 else None,
    "nesterov": lambda v, i: True if i == 5 else None,
    "maximize": lambda v, i: not v if i == 5 else None,
    "amsgrad": lambda v, i: not v if i == 5 else None,
    "centered": lambda v, i: not v if i == 5 else None,
}


def _train(optimizer: str, setting: str, compiled: bool) -> list:
    tw.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).double()
    opt = OPTIMIZERS[optimizer](list(model.parameters()))
    rng = np.random.default_rng(1)
    x = tw.tensor(rng.standard_normal((5, 6)))
    y = tw.tensor([0, 1, 2, 1, 0])

    def step(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = tw.compile(step) if compiled else step
    seen = []
    for i in range(STEPS):
        group = opt.param_groups[0]
        value = CHANGES[setting](group[setting], i)
        if value is not None:
            if setting == "nesterov":
                group["dampening"] = 0
            group[setting] = value
        try:
            loss = fn(x, y)
        except KeyError as exc:  # amsgrad turned on after the first step: as PyTorch
            return [*seen, repr(exc)]
        seen += [loss, *(p.detach().clone() for p in model.parameters())]
    return seen


def _settings(optimizer: str) -> set:
    return set(OPTIMIZERS[optimizer]([tw.zeros(1, requires_grad=True)]).param_groups[0])


@pytest.mark.parametrize(
    "optimizer, setting", [(o, s) for o in OPTIMIZERS for s in CHANGES if s in _settings(o)]
)
def test_a_changed_setting_is_never_replayed_stale(optimizer: str, setting: str) -> None:
    want = _train(optimizer, setting, False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        got = _train(optimizer, setting, True)
    assert len(got) == len(want)
    for a, b in zip(want, got):
        assert a == b if isinstance(a, str) else tw.equal(a, b)


@pytest.mark.parametrize("what", ["lr", "momentum", "betas", "step"])
def test_a_step_returning_a_recomputed_number_replays(what: str) -> None:
    """A step that returns its learning rate (or momentum, betas, Adam's step count), as
    logging code does, replays with the current value (it ran eagerly: "returned a Sym")."""

    def run(compiled: bool) -> tuple:
        tw.manual_seed(0)
        model = nn.Linear(4, 2).double()
        opt = tw.optim.Adam(model.parameters(), lr=0.01, betas=(0.9, 0.99))
        if what == "momentum":
            opt = tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = tw.randn(3, 4, dtype=tw.float64), tw.tensor([0, 1, 1])

        def step(x: tw.Tensor, y: tw.Tensor) -> tuple:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if what == "step":
                return loss, opt.state[model.weight]["step"]
            return loss, opt.param_groups[0][what]

        fn = tw.compile(step) if compiled else step
        seen = []
        for i in range(6):
            group = opt.param_groups[0]
            group["lr"] = 0.1 - 0.01 * i
            if what in ("momentum", "betas"):
                group[what] = 0.9 - 0.05 * i if what == "momentum" else (0.9 - 0.01 * i, 0.99)
            loss, number = fn(x, y)
            seen.append((np.asarray(loss.detach()).tolist(), number, type(number)))
        return seen, fn

    (want, _), (got, fn) = run(False), run(True)
    assert got == want
    assert fn.traces == 3


def _tuple_fn(h: Any) -> Any:
    return h[0] * 2.0


@pytest.mark.parametrize("traced", ["pair", "list", "nested", "with_none", "with_number"])
def test_the_tuple_guard_accepts_exactly_its_signature(traced: str) -> None:
    """The generated guard of a tuple argument, replayed with each other structure: it
    accepts a call exactly when the call's signature is the traced one."""
    x, y, z = (tw.randn(3, dtype=tw.float64) for _ in range(3))
    calls = {
        "pair": (x, y),
        "list": [x, y],
        "nested": (x, (y, z)),
        "nested_list": (x, [y, z]),
        "with_none": (x, y, None),
        "with_number": (x, y, 2.0),
        "negative_zero": (x, y, -0.0),
        "int": (x, y, 2),
        "bool": (x, y, True),
        "longer": (x, y, z),
        "shorter": (x,),
        "number_for_tensor": (x, 1.5),
        "shared": (x, x),
        "other_shape": (x, tw.randn(2, dtype=tw.float64)),
        "other_dtype": (x, y.float()),
        "other_pair": (z, x),
    }
    fn = tw.compile(_tuple_fn, backend="tensorweaver")
    for _ in range(3):
        fn(calls[traced])
    assert fn._fast is not None  # replayed through the generated guard
    guard, key, _ = fn._fast
    accepted = set()
    for name, h in calls.items():
        same = StepState(_tuple_fn, (h,), {}).signature((h,), {}) == key
        assert guard((h,), {}) is same, name
        accepted.add(name) if same else None
        np.testing.assert_array_equal(np.asarray(fn(h)), np.asarray(_tuple_fn(h)))
    assert traced in accepted and len(accepted) < len(calls)


@pytest.mark.parametrize("setting", ["lr", "momentum"])
def test_a_setting_the_step_keeps_is_a_plain_number_later(setting: str) -> None:
    """A setting the step keeps from its first call (a base rate for warm-up) and uses
    later: it is the number it was (the replay raised IndexError, evaluating the kept
    expression against another trace's holders) and hashes as that float."""

    def run(compiled: bool) -> tuple:
        tw.manual_seed(0)
        model = nn.Linear(4, 2).double()
        opt = tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x, y = tw.randn(3, 4, dtype=tw.float64), tw.tensor([0, 1, 1])
        kept: dict = {}

        def step(x: tw.Tensor, y: tw.Tensor) -> tw.Tensor:
            first = kept.setdefault("first", opt.param_groups[0][setting])
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            with tw.no_grad():
                model.bias.add_(model.bias, alpha=-0.1 * first)
            return loss

        fn = tw.compile(step) if compiled else step
        losses = []
        for i in range(7):
            opt.param_groups[0][setting] = 0.09 - 0.01 * i
            losses.append(np.asarray(fn(x, y).detach()).tolist())
        params = [np.asarray(p.detach()).tolist() for p in model.parameters()]
        return losses, params, {kept["first"]: "found"}.get(0.1 if setting == "lr" else 0.9), fn

    *want, _ = run(False)
    *got, fn = run(True)
    assert got == want
    assert fn.traces == 3
