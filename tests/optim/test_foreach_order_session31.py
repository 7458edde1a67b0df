"""Session 31: ``foreach=True`` steps in PyTorch's foreach order where the order shows (a
gradient sharing memory with what the step writes, a parameter listed twice), a param
group's tensor lr or betas refused at ``step()`` as PyTorch does, and float32 ``add`` with
alpha rounded once on NumPy (torch's fused multiply-add); each compared with real torch."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
from snippet_outcomes import FLOAT32_ALPHA_ROUNDED_TWICE, same

DEVICES = ["numpy", "torch:cpu"]

#: optimizer, options: every branch of PyTorch's _multi_tensor_ step that tw follows
CASES = {
    "rmsprop-centered-momentum": ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.9}),
    "rmsprop-maximize-decay": ("RMSprop", {"lr": 0.01, "maximize": True, "weight_decay": 0.1}),
    "adagrad-decay": ("Adagrad", {"lr": 0.1, "lr_decay": 0.5, "weight_decay": 0.1}),
    "adagrad-maximize": ("Adagrad", {"lr": 0.1, "maximize": True}),
    "adadelta-decay": ("Adadelta", {"lr": 0.5, "weight_decay": 0.1, "maximize": True}),
    "nadam-decay": ("NAdam", {"lr": 0.1, "weight_decay": 0.1}),
    "nadamw": ("NAdam", {"lr": 0.1, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    "asgd-averaging": ("ASGD", {"lr": 0.1, "t0": 1, "weight_decay": 0.1}),
    "asgd-maximize": ("ASGD", {"lr": 0.1, "maximize": True}),
    "adamax-decay": ("Adamax", {"lr": 0.1, "weight_decay": 0.1}),
    "adamax-maximize": ("Adamax", {"lr": 0.1, "maximize": True}),
    "radam-decay": ("RAdam", {"lr": 0.1, "weight_decay": 0.1}),  # (rectified from step 6)
    "radamw": ("RAdam", {"lr": 0.1, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    "rprop": ("Rprop", {"lr": 0.1}),
    "rprop-maximize": ("Rprop", {"lr": 0.1, "maximize": True, "etas": (0.4, 1.5)}),
    "adam-amsgrad": ("Adam", {"lr": 0.1, "amsgrad": True}),
    "adamw": ("AdamW", {"lr": 0.1}),
    "sgd-nesterov": ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
}


def _values(m: Any, n: int, start: float) -> Any:
    return m.arange(float(n), dtype=m.float64) / n + start


def _sharing_memory(case: str) -> Callable:
    name, options = CASES[case]

    def program(m: Any) -> Any:
        p = m.nn.Parameter(_values(m, 3, 1.0))
        q = m.nn.Parameter(_values(m, 3, 3.0))
        r = m.nn.Parameter(_values(m, 3, 2.0))
        opt = getattr(m.optim, name)([p, q, r], foreach=True, **options)
        for i in range(6):
            p.grad = _values(m, 3, 0.5 + i)
            q.grad = p.data  # q steps along p's memory, which the step changes first
            r.grad = q.data.flip(0)  # a view of q's memory
            opt.step()
        state = opt.state[q]
        return p, q, r, {k: v for k, v in state.items() if k != "momentum_buffer"}

    return program


def _listed_twice(case: str) -> Callable:
    name, options = CASES[case]

    def program(m: Any) -> Any:
        p = m.nn.Parameter(_values(m, 3, 1.0))
        q = m.nn.Parameter(_values(m, 2, 2.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (both warn of the duplicate)
            opt = getattr(m.optim, name)([p, q, p], foreach=True, **options)
        for i in range(6):
            p.grad = _values(m, 3, 0.5 + i)
            q.grad = _values(m, 2, -1.0 - i)
            opt.step()
        return p, q, opt.state[p]

    return program


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(CASES))
def test_foreach_step_of_gradients_sharing_memory(case: str, device: str) -> None:
    # before: every optimizer but Adam and SGD stepped each parameter alone (q read p's
    # stepped values); ASGD wrote the parameter before adding lambd * param to the gradient
    same(_sharing_memory(case), device, decimals=9)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", list(CASES))
def test_foreach_step_of_a_parameter_listed_twice(case: str, device: str) -> None:
    # before: each listing stepped whole, one after the other (the single-tensor order)
    same(_listed_twice(case), device, decimals=9)


def test_foreach_order_on_cunumeric() -> None:
    same(_sharing_memory("nadam-decay"), "cunumeric", decimals=9)


def _tensor_option_in_a_group(option: str) -> Callable:
    def program(m: Any) -> Any:
        p = m.nn.Parameter(m.ones(3, dtype=m.float64))
        q = m.nn.Parameter(m.ones(3, dtype=m.float64))
        r = m.nn.Parameter(m.ones(2, dtype=m.float64))
        value = m.tensor(0.05) if option == "lr" else (m.tensor(0.8), m.tensor(0.9))
        groups = [{"params": [p]}, {"params": [q, r], option: value}]
        opt = m.optim.Adam(groups, lr=0.1, foreach=True)  # accepted here
        for t in (p, q, r):
            t.grad = m.ones(t.shape, dtype=m.float64)
        try:
            opt.step()
        except (RuntimeError, ValueError) as error:  # raised by the step, as torch's
            return type(error).__name__, p, len(opt.state), opt.state[q]
        return p, q

    return program


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("option", ["lr", "betas"])
def test_tensor_option_of_a_group_refused_at_step(option: str, device: str) -> None:
    # before: ValueError at construction (torch: RuntimeError for lr, ValueError for betas,
    # from step(), after the first group stepped and the state was made)
    same(_tensor_option_in_a_group(option), device, decimals=9)


def test_tensor_lr_default_refused_at_construction() -> None:
    def program(m: Any) -> Any:
        return m.optim.Adam([m.nn.Parameter(m.ones(2))], lr=m.tensor(0.1), foreach=True)

    same(program, "numpy")


# -- float32 add with alpha: one rounding ------------------------------------------------


def _float32(m: Any, rng: np.random.RandomState, n: int) -> Any:
    values = rng.uniform(-4, 4, n) * 10.0 ** rng.randint(-3, 3, n)
    return m.tensor(values.astype(np.float32))


@FLOAT32_ALPHA_ROUNDED_TWICE
@pytest.mark.parametrize("n", [37, 4_000, 70_000])
def test_float32_add_and_sub_with_alpha_round_once(n: int) -> None:
    def program(m: Any) -> Any:
        rng = np.random.RandomState(31)
        x, y = _float32(m, rng, n), _float32(m, rng, n)
        z = x.clone()
        z.add_(y, alpha=-0.37)
        w = x.clone()
        w.sub_(y, alpha=1.7)
        return x.add(y, alpha=0.1)[::97], x.sub(y, alpha=3.3)[::97], z[::97], w[::97]

    same(program, "numpy", decimals=None)


def _sgd_float32(options: dict, compiled: bool = False) -> Callable:
    def program(m: Any) -> Any:
        rng = np.random.RandomState(32)
        p = m.nn.Parameter(_float32(m, rng, 200))
        opt = m.optim.SGD([p], **options)

        def step() -> None:
            opt.step()

        # (tw.compile's replay; torch's own step: its compiler needs a C toolchain)
        run = m.compile(step) if compiled and m.__name__ == "tensorweaver" else step
        for _ in range(3):
            p.grad = _float32(m, rng, 200)
            run()
        return p

    return program


@pytest.mark.parametrize(
    "options",
    [
        {"lr": 0.1},
        {"lr": 0.1, "momentum": 0.9, "nesterov": True},
        {"lr": 0.1, "momentum": 0.9, "nesterov": True, "foreach": False},
        {"lr": 0.1, "weight_decay": 0.3, "foreach": False},
    ],
)
@FLOAT32_ALPHA_ROUNDED_TWICE
def test_float32_sgd_steps_as_torch(options: dict) -> None:
    # before: an ulp off torch in about 1 element of 10 (y * alpha rounded before the add)
    same(_sgd_float32(options), "numpy", decimals=None)


@FLOAT32_ALPHA_ROUNDED_TWICE
def test_float32_compiled_sgd_step_as_torch() -> None:
    # (the numpy backend's compiled replay runs its own _foreach_add)
    same(_sgd_float32({"lr": 0.1}, compiled=True), "numpy", decimals=None)


@FLOAT32_ALPHA_ROUNDED_TWICE
def test_float32_sgd_step_as_torch_on_cunumeric() -> None:
    # before: an ulp off torch in about 1 element of 10 (ops/elementwise.py
    # _fused_with_alpha rounded b * alpha before the add where there is no foreach_add)
    same(_sgd_float32({"lr": 0.1}), "cunumeric", decimals=None)
