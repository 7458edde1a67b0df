"""A backend's optional ``compile_graph`` hook (API 2.4) against the eager steps.

The same small training step (linear, ReLU, linear, cross-entropy, Adam, whose bias
corrections reach the graph as Python numbers that change every step) runs eagerly and
through ``tw.compile`` from the same weights; once the compiled step replays through the
hook, its losses and the weights after it must equal the eager ones within a model's
rounding. Skipped where the backend has no hook (the core's replay serves it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.check.case import Case, Failure, Measure, Skip
from tensorweaver.check.compare import MODEL_TOLERANCE, measure_array
from tensorweaver.check.context import Context

STEPS = 7  # three traces (the first creates gradients and Adam's state), then replays
REPLAYED = 4


def _trainer(ctx: Context, weights: list[np.ndarray]) -> tuple[Callable[[], Any], list]:
    model = tw.nn.Sequential(tw.nn.Linear(6, 8), tw.nn.ReLU(), tw.nn.Linear(8, 3))
    with tw.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(tw.tensor(w))
    opt = tw.optim.Adam(model.parameters(), lr=0.05)
    rng = np.random.default_rng(1)
    x = tw.tensor(rng.standard_normal((5, 6)))
    y = tw.tensor(rng.integers(0, 3, 5))

    def step() -> Any:
        opt.zero_grad()
        loss = tw.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, list(model.parameters())


def _training_step(ctx: Context) -> Iterator[Measure]:
    if getattr(ctx.backend, "compile_graph", None) is None:
        raise Skip(f"{ctx.device} has no compile_graph (optional: the core replays graphs)")
    rng = np.random.default_rng(0)
    shapes = ((8, 6), (8,), (3, 8), (3,))
    weights = [rng.uniform(-0.5, 0.5, s) for s in shapes]
    with ctx.scope():
        eager, eager_params = _trainer(ctx, weights)
        step, params = _trainer(ctx, weights)
        compiled = tw.compile(step)
        want = [float(eager().item()) for _ in range(STEPS)]
        try:
            got = [float(compiled().item()) for _ in range(STEPS)]
        except Exception as exc:  # the hook's callable failed on a replay
            raise Failure("compile_graph", f"the compiled step raised {exc!r}") from exc
    if compiled.traces != STEPS - REPLAYED:
        raise Failure("compile_graph", f"the step traced {compiled.traces} times, not 3")
    tolerance = MODEL_TOLERANCE[ctx.float]
    yield measure_array(
        "losses of the replayed steps",
        np.array(got[-REPLAYED:]),
        np.array(want[-REPLAYED:]),
        ctx.float,
        tolerance,
    )
    for i, (a, b) in enumerate(zip(params, eager_params)):
        what = f"parameter {i} after the steps"
        yield measure_array(what, np.asarray(a.detach()), np.asarray(b.detach()), ctx.float)


def cases() -> list[Case]:
    return [Case("compile/training_step", _training_step)]
