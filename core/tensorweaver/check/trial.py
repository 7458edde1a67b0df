"""Differentiable checks: run a computation on the device and on the reference, compare
outputs and gradients, and check the device's gradients by finite differences.

A case supplies ``build(maker) -> forward``: ``maker`` creates the inputs and modules on
the current device from host values seeded by the case id and the tensor's name, so the
device and the reference see the same numbers; ``forward()`` returns a tensor or a tuple.
The loss is ``sum(output * w)`` with fixed random weights ``w``, so every output element
gets its own gradient.

The reference is the NumPy backend in float64 with every fused composite hidden: the
core's own decompositions on NumPy primitives, which the primitive cases check directly.
Finite differences (on the device, when it has float64) compare the directional
derivative along a random direction with backward's, which takes two extra forwards
instead of two per element.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver import registry
from tensorweaver.check.case import Measure
from tensorweaver.check.compare import measure_array
from tensorweaver.check.context import Context
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops.fusion import reference_only

#: Step and tolerance of the directional finite difference (float64: error ~ 1e-10).
EPS = 1e-6
SLOPE_TOLERANCE = 1e-6
INF = float("inf")


class Maker:
    """Creates a case's tensors and modules on the current device and dtype."""

    def __init__(self, key: str, dtype: DType) -> None:
        self.key = key
        self.dtype = dtype
        #: name -> the tensors gradients are taken for (inputs and parameters)
        self.leaves: dict[str, tw.Tensor] = {}

    def rng(self, name: str) -> np.random.Generator:
        return np.random.default_rng(zlib.crc32(f"{self.key}/{name}".encode()))

    def input(
        self, name: str, *shape: int, low: float = -1.0, high: float = 1.0, grad: bool = True
    ) -> tw.Tensor:
        """A float tensor of uniform values in [low, high); a leaf unless ``grad=False``."""
        t = tw.tensor(self.rng(name).uniform(low, high, shape), dtype=self.dtype)
        if grad:
            self.leaves[name] = t.requires_grad_()
        return t

    def integers(self, name: str, shape: tuple[int, ...], high: int) -> tw.Tensor:
        """An int64 tensor of values in [0, high)."""
        return tw.tensor(self.rng(name).integers(0, high, shape), dtype=tw.int64)

    def module(self, module: Any, prefix: str = "") -> Any:
        """``module`` (built in this scope) with its parameters set from seeded host values."""
        with tw.no_grad():
            for name, p in module.named_parameters():
                # Weights scaled as Linear's init does; vectors (biases, norms) in [-0.5, 0.5).
                fan_in = int(np.prod(p.shape[1:])) if p.dim() > 1 else 4
                values = self.rng(prefix + name).uniform(-1, 1, tuple(p.shape)) / np.sqrt(fan_in)
                p.copy_(tw.tensor(values, dtype=p.dtype))
                self.leaves[prefix + name] = p
        return module


def _as_tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


@dataclass
class Outcome:
    """What one run produced, on the host."""

    outputs: list[np.ndarray]
    grads: dict[str, np.ndarray | None]
    #: (by finite differences, by backward, sum of |terms| of the latter), or None
    slope: tuple[float, float, float] | None = None


def _loss(maker: Maker, outputs: tuple) -> tw.Tensor:
    total = None
    for i, out in enumerate(outputs):
        # Outputs that need no grad (running statistics, indices) are compared, not differentiated.
        if out.requires_grad:
            w = tw.tensor(maker.rng(f"loss/{i}").standard_normal(tuple(out.shape)), dtype=out.dtype)
            term = (out * w).sum()
            total = term if total is None else total + term
    if total is None:
        raise TypeError("the case's forward returned no output that requires grad")
    return total


def _slope(maker: Maker, forward: Callable[[], Any], grads: dict) -> tuple[float, float, float]:
    directions = {
        n: maker.rng(f"direction/{n}").standard_normal(tuple(t.shape))
        for n, t in maker.leaves.items()
    }
    terms = [grads[n] * v for n, v in directions.items() if grads[n] is not None]
    analytic = float(sum(t.sum() for t in terms))
    size = float(sum(np.abs(t).sum() for t in terms))
    bases = {n: t.detach().numpy() for n, t in maker.leaves.items()}

    def loss_at(step: float) -> float:
        with tw.no_grad():
            for n, t in maker.leaves.items():
                t.copy_(tw.tensor(bases[n] + step * directions[n], dtype=t.dtype))
        # with grad enabled: a forward may itself differentiate (double backward)
        return float(_loss(maker, _as_tuple(forward())).item())

    try:
        up, down = loss_at(EPS), loss_at(-EPS)
    finally:
        with tw.no_grad():
            for n, t in maker.leaves.items():
                t.copy_(tw.tensor(bases[n], dtype=t.dtype))
    return (up - down) / (2 * EPS), analytic, size


def run(
    ctx: Context, key: str, build: Callable[[Maker], Callable[[], Any]], dtype: DType, slope: bool
) -> Outcome:
    """Build and run the case on ``ctx``'s device in ``dtype``, backward included."""
    with ctx.scope(dtype):
        maker = Maker(key, dtype)
        forward = build(maker)
        outputs = _as_tuple(forward())
        _loss(maker, outputs).backward()
        grads = {
            n: (t.grad.numpy() if t.grad is not None else None) for n, t in maker.leaves.items()
        }
        found = Outcome([o.detach().numpy() for o in outputs], grads)
        if slope:
            found.slope = _slope(maker, forward, grads)
    return found


def reference(key: str, build: Callable[[Maker], Callable[[], Any]]) -> Outcome:
    """The case on the NumPy backend in float64, composites decomposed by the core."""
    ctx = Context(registry.backend_object(registry.DEFAULT_BACKEND))
    with reference_only():
        return run(ctx, key, build, d.float64, slope=False)


def compare(
    ctx: Context,
    key: str,
    build: Callable[[Maker], Callable[[], Any]],
    dtype: DType | None = None,
    names: Callable[[str], str] = lambda what: what,
) -> Iterator[Measure]:
    """Measures of the case on the device against the reference: outputs, gradients, slope.

    ``names`` turns ``output``/``grad of x``/``finite differences`` into the culprit's name.
    """
    dtype = dtype or ctx.float
    ctx.require(dtype)
    want = reference(key, build)
    got = run(ctx, key, build, dtype, slope=dtype is d.float64)
    for i, (g, w) in enumerate(zip(got.outputs, want.outputs)):
        what = names(f"output {i}" if len(want.outputs) > 1 else "output")
        yield measure_array(
            what,
            g.astype(np.float64),
            w.astype(np.float64),
            dtype,
            None if w.dtype.kind == "f" else 0.0,
        )
    for n, w in want.grads.items():
        g = got.grads.get(n)
        what = names(f"grad of {n}")
        if w is None or g is None:
            if (w is None) != (g is None):
                detail = (
                    "no gradient reached it" if g is None else "a gradient where NumPy has none"
                )
                yield Measure(what, INF, 0.0, detail)
            continue
        yield measure_array(what, g.astype(np.float64), w, dtype)
    if got.slope is not None:
        fd, analytic, size = got.slope
        yield Measure(
            names("finite differences"),
            abs(fd - analytic) / max(1.0, size),
            SLOPE_TOLERANCE,
            f"directional derivative {analytic:.10g} by backward, {fd:.10g} by finite differences",
        )
