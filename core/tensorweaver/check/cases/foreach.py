"""Optimizer steps over whole parameter groups (the optional foreach primitives of API 2.4):
SGD, Adam and AdamW steps on the device against the per-parameter path on NumPy in float64.

A backend need not define the primitives: without them the optimizers step one parameter at
a time, and the case must pass all the same. A failure names the ``foreach_*`` primitives
when the device has them.

The updates written in place (API 2.7, ``owns_memory`` and ``foreach_inplace``): each
``foreach_inplace`` write gives the out-of-place primitive's bits in the arrays themselves
and leaves the other operands alone; ``owns_memory`` is False for a view of another array
and, for an array that a view uses, True only when the view refers to that array object.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver import registry
from tensorweaver.check.case import Case, Failure, Measure, Skip
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


#: Each foreach_inplace name with its arguments after xs (ys and zs: one array per x).
WRITES: dict[str, Callable[[list, list], tuple]] = {
    "add": lambda ys, zs: (ys, -0.3),
    "mul": lambda ys, zs: (0.7,),
    "add_scalar": lambda ys, zs: (0.25,),
    "div_scalars": lambda ys, zs: ([1.5, 2.5, 3.5, 4.5],),
    "sqrt": lambda ys, zs: (),
    "maximum": lambda ys, zs: (ys,),
    "lerp": lambda ys, zs: (ys, 0.3),
    "addcmul": lambda ys, zs: (ys, zs, -0.2),
    "addcdiv": lambda ys, zs: (ys, zs, [-0.1, -0.2, -0.3, -0.4]),
}
INF = float("inf")


def _in_place_pair(ctx: Context) -> tuple[Any, Any]:
    write = getattr(ctx.backend, "foreach_inplace", None)
    owns = getattr(ctx.backend, "owns_memory", None)
    if write is None and owns is None:
        raise Skip("no updates written in place (owns_memory, foreach_inplace: optional)")
    if write is None or owns is None:
        raise Failure("foreach_inplace", "a backend defines owns_memory and foreach_inplace both")
    return write, owns


def _writes(dtype: DType) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        ctx.require(dtype)
        write, _ = _in_place_pair(ctx)
        rng = np.random.default_rng(1)

        def arrays() -> list[Any]:
            return [tw.tensor(rng.uniform(0.5, 2, s), dtype=dtype).native for s in SHAPES]

        with ctx.scope(dtype):
            for name, extra in WRITES.items():
                xs, ys, zs = arrays(), arrays(), arrays()
                args = extra(ys, zs)
                want = [
                    ctx.fetch(w, dtype, f"foreach_{name}")
                    for w in getattr(ctx.backend, f"foreach_{name}")(xs, *args)
                ]
                others = [ctx.fetch(a, dtype, "to_host").copy() for a in ys + zs]
                objects = list(xs)
                if not write(name, xs, *args):
                    continue  # it may decline a name
                got = [ctx.fetch(x, dtype, f"foreach_inplace({name})") for x in xs]
                same = all(a is b for a, b in zip(objects, xs)) and all(
                    g.tobytes() == w.tobytes() for g, w in zip(got, want)
                )
                yield Measure(
                    f"foreach_inplace({name!r})",
                    0.0 if same else INF,
                    0.0,
                    f"the arrays do not hold foreach_{name}'s values, bit for bit",
                )
                kept = all(
                    ctx.fetch(a, dtype, "to_host").tobytes() == b.tobytes()
                    for a, b in zip(ys + zs, others)
                )
                yield Measure(
                    f"foreach_inplace({name!r})",
                    0.0 if kept else INF,
                    0.0,
                    "it wrote into an operand other than xs",
                )

    return run


def _ownership(ctx: Context) -> Iterator[Measure]:
    _, owns = _in_place_pair(ctx)
    storage = getattr(ctx.backend, "storage", None)
    if storage is None:
        raise Skip("the backend does not say which arrays share memory (storage)")
    with ctx.scope(d.float32):
        a = tw.tensor(np.arange(12.0).reshape(3, 4)).native
    before = sys.getrefcount(a)
    view = ctx.backend.permute(a, (1, 0))
    if storage(view) is not storage(a):
        raise Skip("permute copied: no view to check owns_memory with")
    refers = sys.getrefcount(a) > before
    yield Measure(
        "owns_memory",
        INF if owns(view) else 0.0,
        0.0,
        "True for a view of another array (a write into it changes that array)",
    )
    yield Measure(
        "owns_memory",
        INF if owns(a) and not refers else 0.0,
        0.0,
        "True for an array a view uses without referring to it (the core cannot see it)",
    )


def cases() -> list[Case]:
    return [
        *(
            Case(f"foreach/{key}/{t.name}", _case(key, t))
            for key in OPTIMIZERS
            for t in (d.float32, d.float64)
        ),
        *(
            Case(f"foreach/inplace/{t.name}", _writes(t))
            for t in (d.float16, d.bfloat16, d.float32, d.float64)
        ),
        Case("foreach/owns_memory", _ownership),
    ]
