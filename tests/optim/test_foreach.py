"""The foreach path of SGD, Adam and AdamW steps (one backend call per group) against the
per-parameter path: bit for bit on NumPy (the same ufuncs in the same order), within rounding
on torch, and both against ``torch.optim`` with ``foreach=True``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import optim
from tensorweaver.optim.foreach import foreach_backend
from test_optimizers import CASES as OPTIMIZER_CASES

torch = pytest.importorskip("torch")

#: test_optimizers.py's settings of the optimizers that have a foreach step, and maximize.
CASES = [case for case in OPTIMIZER_CASES if case[0] in ("SGD", "Adam", "AdamW")]
CASES.append(("AdamW", {"lr": 0.01, "weight_decay": 0.2, "amsgrad": True, "maximize": True}))
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]
SHAPES = [(3, 4), (5,), (), (2, 3, 2)]
STEPS = 4


def _steps(
    name: str, options: dict, device: str, dtype: Any, foreach: bool, seed: int = 0
) -> list[np.ndarray]:
    """The parameters after STEPS steps with fixed gradients; the last parameter gets a
    gradient from the second step on (a momentum buffer that starts late)."""
    rng = np.random.default_rng(seed)
    params = [
        tw.tensor(rng.standard_normal(s), dtype=dtype, device=device, requires_grad=True)
        for s in SHAPES
    ]
    opt = getattr(optim, name)(params, foreach=foreach, **options)
    for step in range(STEPS):
        for i, p in enumerate(params):
            g = rng.standard_normal(p.shape)
            p.grad = (
                None
                if (i == len(params) - 1 and step == 0)
                else tw.tensor(g, dtype=dtype, device=device)
            )
        opt.step()
    return [p.detach().numpy().copy() for p in params]


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
@pytest.mark.parametrize("dtype", [tw.float32, tw.float64], ids=["f32", "f64"])
def test_numpy_foreach_is_bit_identical(name: str, options: dict, dtype: Any) -> None:
    fast = _steps(name, options, "numpy", dtype, foreach=True)
    slow = _steps(name, options, "numpy", dtype, foreach=False)
    for a, b in zip(fast, slow):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
def test_torch_foreach_matches_per_parameter(name: str, options: dict) -> None:
    fast = _steps(name, options, "torch:cpu", tw.float32, foreach=None)
    slow = _steps(name, options, "torch:cpu", tw.float32, foreach=False)
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("name", "options"), CASES, ids=IDS)
@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_foreach_matches_torch_optim(name: str, options: dict, device: str) -> None:
    got = _steps(name, options, device, tw.float64, foreach=True)
    rng = np.random.default_rng(0)
    params = [
        torch.tensor(rng.standard_normal(s), dtype=torch.float64, requires_grad=True)
        for s in SHAPES
    ]
    opt = getattr(torch.optim, name)(params, foreach=True, **options)
    for step in range(STEPS):
        for i, p in enumerate(params):
            g = torch.from_numpy(rng.standard_normal(tuple(p.shape)))
            p.grad = None if (i == len(params) - 1 and step == 0) else g
        opt.step()
    for a, p in zip(got, params):
        np.testing.assert_allclose(a, p.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_foreach_is_chosen_only_when_it_can_be() -> None:
    group = {"foreach": None}
    on_numpy = [tw.zeros(2, device="numpy"), tw.zeros(3, device="numpy")]
    assert foreach_backend(on_numpy, group) is on_numpy[0].backend
    assert foreach_backend(on_numpy, {"foreach": False}) is None
    mixed = [on_numpy[0], tw.zeros(2, device="torch:cpu")]
    assert foreach_backend(mixed, group) is None  # two backends: one parameter at a time


@pytest.mark.parametrize(
    ("name", "primitive"), [("SGD", "foreach_add"), ("Adam", "foreach_addcdiv")]
)
@pytest.mark.parametrize("foreach", [None, True, False])
def test_foreach_option_decides(
    monkeypatch: pytest.MonkeyPatch, name: str, primitive: str, foreach: Any
) -> None:
    from tensorweaver_numpy.backend import NumpyBackend

    calls = []
    method = getattr(NumpyBackend, primitive)
    in_place = NumpyBackend.foreach_inplace

    def spy(self: Any, *args: Any) -> Any:
        if len(args[0]) > 1:  # a single tensor's add_(other, alpha=) is one foreach_add too
            calls.append(len(args[0]))
        return method(self, *args)

    def spy_in_place(self: Any, op: str, xs: list, *args: Any) -> Any:
        if "foreach_" + op == primitive and len(xs) > 1:  # the update written in place
            calls.append(len(xs))
        return in_place(self, op, xs, *args)

    monkeypatch.setattr(NumpyBackend, primitive, spy)
    monkeypatch.setattr(NumpyBackend, "foreach_inplace", spy_in_place)
    _steps(name, {"lr": 0.1}, "numpy", tw.float64, foreach=foreach)
    # One call per step over every parameter with a gradient; none with foreach=False.
    assert calls == ([] if foreach is False else [len(SHAPES) - 1] + [len(SHAPES)] * (STEPS - 1))
