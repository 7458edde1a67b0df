"""Optimizer steps over whole parameter groups (the optional foreach primitives of API 2.4):
SGD, Adam and AdamW steps on the device against the per-parameter path on NumPy in float64.

A backend need not define the primitives: without them the optimizers step one parameter at
a time, and the case must pass all the same. A failure names the ``foreach_*`` primitives
when the device has them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver import registry
from tensorweaver.check.case import Case, Measure
from tensorweaver.check.compare import measure_array
from tensorweaver.check.context import Context
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType

#: Options that take every branch of each optimizer's step between them.
OPTIMIZERS: dict[str, tuple[str, dict[str, Any]]] = {
    "sgd": ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}),
    "sgd_dampened": ("SGD", {"lr": 0.1, "momentum": 0.8, "dampening": 0.3, "maximize": True}),
    "adam": ("Adam", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1, "amsgrad": True}),
    "adamw": ("AdamW", {"lr": 0.01, "weight_decay": 0.2, "maximize": True}),
}
SHAPES = ((3, 4), (5,), (), (2, 3, 2))
STEPS = 3


def _steps(name: str, options: dict[str, Any], dtype: DType, foreach: bool) -> list[np.ndarray]:
    """The parameters (made on the current device) after STEPS steps with fixed gradients;
    the last one gets its first gradient on the second step (state that starts late)."""
    rng = np.random.default_rng(0)
    params = [tw.tensor(rng.uniform(-1, 1, s), dtype=dtype, requires_grad=True) for s in SHAPES]
    opt = getattr(tw.optim, name)(params, foreach=foreach, **options)
    for step in range(STEPS):
        for i, p in enumerate(params):
            g = tw.tensor(rng.uniform(-1, 1, tuple(p.shape)), dtype=dtype)
            p.grad = None if (i == len(params) - 1 and step == 0) else g
        opt.step()
    return [np.asarray(p.detach()) for p in params]


def _case(key: str, dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        ctx.require(dtype)
        name, options = OPTIMIZERS[key]
        with Context(registry.backend_object(registry.DEFAULT_BACKEND)).scope(d.float64):
            want = _steps(name, options, d.float64, foreach=False)
        with ctx.scope(dtype):
            got = _steps(name, options, dtype, foreach=True)
        fused = callable(getattr(ctx.backend, "foreach_add", None))
        culprit = "foreach primitives" if fused else f"{name}.step (one parameter at a time)"
        for i, (g, w) in enumerate(zip(got, want)):
            yield measure_array(f"{culprit}: parameter {i}", g.astype(np.float64), w, dtype)

    return run


def cases() -> list[Case]:
    return [
        Case(f"foreach/{key}/{t.name}", _case(key, t))
        for key in OPTIMIZERS
        for t in (d.float32, d.float64)
    ]
