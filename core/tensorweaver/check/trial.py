"""Differentiable checks: run a computation on the device and on the reference, compare
outputs and gradients, and check the device's gradients by finite differences.

A case supplies ``build(maker) -> forward``: ``maker`` creates the inputs and modules on
the current device from host values seeded by the case id and the tensor's name, so the
device and the reference see the same numbers; ``forward()`` returns a tensor or a tuple.
The loss is ``sum(output * w)`` with fixed random weights ``w``, so every output element
gets its own gradient; backward starts from ``w`` itself, the loss's gradient at the
output. A case may run in a layout (:mod:`tensorweaver.check.layouts`): its inputs and
each ``w`` are then arrays in that layout, as the core hands a composite's forward and its
backward views (a gradient from ``sum`` is an ``expand``). In the ``empty`` layout the
case's batch (:meth:`Maker.batch`) is 0 and every array with no rows is a zero-row slice.

The reference is the NumPy backend in float64 with every fused composite hidden: the
core's own decompositions on NumPy primitives, which the primitive cases check directly.
Finite differences (on the device, when it has float64, in the standard layout) compare
the directional derivative along a random direction with backward's, which takes two
extra forwards instead of two per element.
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
from tensorweaver.check.compare import measure_array, to_dtype
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import SAME_SHAPE, arrange
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.dtypes import DType
from tensorweaver.ops.fusion import reference_only
from tensorweaver.tensor import Tensor

#: Step and tolerance of the directional finite difference (float64: error ~ 1e-10).
EPS = 1e-6
SLOPE_TOLERANCE = 1e-6
INF = float("inf")
#: The layouts a case runs in besides standard: those that keep its shapes, and an empty batch.
LAYOUTS = (*SAME_SHAPE, "empty")


class Maker:
    """Creates a case's tensors and modules on the current device and dtype; inputs and
    upstream gradients in ``layout`` (see :mod:`tensorweaver.check.layouts`)."""

    def __init__(self, ctx: Context, key: str, dtype: DType, layout: str = "standard") -> None:
        self.ctx = ctx
        self.key = key
        self.dtype = dtype
        self.layout = layout
        #: name -> the tensors gradients are taken for (inputs and parameters)
        self.leaves: dict[str, tw.Tensor] = {}
        #: output index -> the gradient backward starts from there
        self._upstream: dict[int, tw.Tensor] = {}

    def rng(self, name: str) -> np.random.Generator:
        return np.random.default_rng(zlib.crc32(f"{self.key}/{name}".encode()))

    def input(
        self, name: str, *shape: int, low: float = -1.0, high: float = 1.0, grad: bool = True
    ) -> tw.Tensor:
        """A float tensor of uniform values in [low, high) in the maker's layout (broadcast
        repeats the first row); a leaf unless ``grad=False``."""
        t = self._arranged(self.rng(name).uniform(low, high, shape), self.dtype)
        if grad:
            self.leaves[name] = t.requires_grad_()
        return t

    def batch(self, n: int) -> int:
        """The size of a batch axis of ``n``: 0 in the ``empty`` layout."""
        return 0 if self.layout == "empty" else n

    def _arranged(self, values: np.ndarray, dtype: DType) -> tw.Tensor:
        layout = self.layout
        if layout == "empty":
            # Only an array with no rows can be their slice; the rest (weights) stay whole.
            empty = values.ndim > 0 and values.shape[0] == 0
            values = np.zeros((2, *values.shape[1:])) if empty else values
            layout = "empty" if empty else "standard"
        _, native = arrange(self.ctx, to_dtype(values, dtype), dtype, layout)
        return Tensor(native, self.ctx.backend, dtype)

    def upstream(self, i: int, output: tw.Tensor) -> tw.Tensor:
        """The gradient of the loss with respect to output ``i``: fixed random values, in
        the maker's layout, so that backward starts from an array in that layout."""
        if i not in self._upstream:
            values = self.rng(f"loss/{i}").standard_normal(tuple(output.shape))
            self._upstream[i] = self._arranged(values, output.dtype)
        return self._upstream[i]

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


def _differentiated(maker: Maker, outputs: tuple) -> list[tuple[tw.Tensor, tw.Tensor]]:
    """(output, its upstream gradient) for each output that requires grad; the loss is
    ``sum(output * gradient)`` over them."""
    # Outputs that need no grad (running statistics, indices) are compared, not differentiated.
    pairs = [(out, maker.upstream(i, out)) for i, out in enumerate(outputs) if out.requires_grad]
    if not pairs:
        raise TypeError("the case's forward returned no output that requires grad")
    return pairs


def _loss(maker: Maker, outputs: tuple) -> float:
    return sum(float((out * g).sum().item()) for out, g in _differentiated(maker, outputs))


def _slope(maker: Maker, forward: Callable[[], Any], grads: dict) -> tuple[float, float, float]:
    directions = {
        n: maker.rng(f"direction/{n}").standard_normal(tuple(t.shape))
        for n, t in maker.leaves.items()
    }
    terms = [grads[n] * v for n, v in directions.items() if grads[n] is not None]
    analytic = float(sum(t.sum() for t in terms))
    size = float(sum(np.abs(t).sum() for t in terms))
    bases = {n: np.array(t.detach()) for n, t in maker.leaves.items()}  # a copy

    def loss_at(step: float) -> float:
        with tw.no_grad():
            for n, t in maker.leaves.items():
                t.copy_(tw.tensor(bases[n] + step * directions[n], dtype=t.dtype))
        # with grad enabled: a forward may itself differentiate (double backward)
        return _loss(maker, _as_tuple(forward()))

    try:
        up, down = loss_at(EPS), loss_at(-EPS)
    finally:
        with tw.no_grad():
            for n, t in maker.leaves.items():
                t.copy_(tw.tensor(bases[n], dtype=t.dtype))
    return (up - down) / (2 * EPS), analytic, size


def run(
    ctx: Context,
    key: str,
    build: Callable[[Maker], Callable[[], Any]],
    dtype: DType,
    slope: bool,
    layout: str = "standard",
) -> Outcome:
    """Build and run the case on ``ctx``'s device in ``dtype`` and ``layout``, backward
    included."""
    with ctx.scope(dtype):
        maker = Maker(ctx, key, dtype, layout)
        forward = build(maker)
        outputs = _as_tuple(forward())
        differentiated = _differentiated(maker, outputs)
        found_grads = tw.autograd.grad(
            [out for out, _ in differentiated],
            list(maker.leaves.values()),
            grad_outputs=[g for _, g in differentiated],
            allow_unused=True,
        )
        grads = {
            n: (g.numpy() if g is not None else None) for n, g in zip(maker.leaves, found_grads)
        }
        found = Outcome([o.detach().numpy() for o in outputs], grads)
        if slope:
            found.slope = _slope(maker, forward, grads)
    return found


def reference(
    key: str, build: Callable[[Maker], Callable[[], Any]], layout: str = "standard"
) -> Outcome:
    """The case on the NumPy backend in float64, composites decomposed by the core."""
    ctx = Context(registry.backend_object(registry.DEFAULT_BACKEND))
    with reference_only():
        return run(ctx, key, build, d.float64, slope=False, layout=layout)


def compare(
    ctx: Context,
    key: str,
    build: Callable[[Maker], Callable[[], Any]],
    dtype: DType | None = None,
    names: Callable[[str], str] = lambda what: what,
    layout: str = "standard",
) -> Iterator[Measure]:
    """Measures of the case on the device against the reference: outputs, gradients, slope.

    ``names`` turns ``output``/``grad of x``/``finite differences`` into the culprit's name.
    In a ``layout`` other than standard, the case's inputs and the gradients backward
    starts from are arrays in that layout, on the device and in the reference alike.
    """
    dtype = dtype or ctx.float
    ctx.require(dtype)
    want = reference(key, build, layout)
    # Finite differences check the gradient rules, which the standard layout does; a
    # layout changes only how arrays reach the backend, which the reference checks.
    slope = dtype is d.float64 and layout == "standard"
    got = run(ctx, key, build, dtype, slope=slope, layout=layout)
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
