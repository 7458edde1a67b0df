"""Where a TensorWeaver training step spends its time: backend primitives against core Python.

Run: python benchmarks/profile_step.py [--model mlp|cnn|lm] [--device numpy|torch:cpu]
                                       [--steps 20] [--top 25] [--cprofile 30]

Every method of the backend object is wrapped with a timer (this process's CPU time,
so other processes on the machine do not count), then ``--steps`` training steps of
the model (as in benchmarks/mlp_step.py and benchmarks/torch_models.py, SGD, one thread)
are run. It prints the step time, the part spent inside backend primitives and the rest
(the core's Python: ops, graph, engine, optimizer; and freeing arrays), then the
costliest primitives by name, operand shapes and layout (``T``: a transposed view,
``nc``: otherwise not contiguous), which shows work the core adds over what the model
needs. ``--cprofile N`` then profiles the same steps with cProfile (which slows the
core's Python code several times over, not the primitives) and lists the N functions of
the core and of the backend plugin with the most time of their own.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import pstats
import time
from typing import Any, Callable

import harness
import mlp_step
import numpy as np
import tensorweaver as tw
import torch
import torch_models

CLOCK = time.process_time


def layout(a: Any) -> str:
    """``a``'s shape, marked when it is a transposed or otherwise non-contiguous view."""
    text = "x".join(map(str, tuple(a.shape))) or "()"
    if a.ndim < 2:
        return text
    if isinstance(a, np.ndarray) and not a.flags.c_contiguous:
        return text + ("(T)" if a.flags.f_contiguous else "(nc)")
    if isinstance(a, torch.Tensor) and not a.is_contiguous():
        return text + ("(T)" if a.mT.is_contiguous() else "(nc)")
    return text


class PrimitiveTimer:
    """Wraps the backend object's methods; totals CPU time per (method, operand layouts)."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.totals: collections.defaultdict = collections.defaultdict(lambda: [0, 0.0])
        self.names = [
            n for n in dir(type(backend)) if not n.startswith("_") and callable(getattr(backend, n))
        ]
        for name in self.names:
            setattr(backend, name, self._wrap(name, getattr(backend, name)))

    def _wrap(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        totals = self.totals

        def timed(*args: Any) -> Any:
            start = CLOCK()
            out = method(*args)
            spent = CLOCK() - start
            key = (name, " ".join(layout(a) for a in args if hasattr(a, "shape")))
            entry = totals[key]
            entry[0] += 1
            entry[1] += spent
            return out

        return timed

    def remove(self) -> None:
        for name in self.names:
            delattr(self.backend, name)


def trainer(model: str, device: str) -> Any:
    """A training step of ``model`` on ``device``, with a fixed batch."""
    rng = np.random.default_rng(0)
    if model == "mlp":
        params = mlp_step.init_weights(rng)
        net = mlp_step.tw_mlp(params, device)
    else:
        with tw.device(device):
            net = torch_models.MODELS[model][0](tw)
    x, y = torch_models.MODELS[model][2](rng)
    return mlp_step.tw_trainer(net, x, y, device)


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--threads", type=int, default=1, help="as in the other benchmarks")
    p.add_argument("--model", choices=tuple(torch_models.MODELS), default="mlp")
    p.add_argument("--device", default="numpy", help="numpy or torch:cpu")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--top", type=int, default=25, help="primitives to list")
    p.add_argument("--cprofile", type=int, default=0, metavar="N", help="functions to list")
    args = p.parse_args()
    harness.setup_torch(torch)
    train = trainer(args.model, args.device)
    for _ in range(3):
        train.step()

    start = CLOCK()
    for _ in range(args.steps):
        train.step()
    plain = (CLOCK() - start) / args.steps

    timer = PrimitiveTimer(next(iter(train.model.parameters())).backend)
    for _ in range(3):
        train.step()
    timer.totals.clear()
    start = CLOCK()
    for _ in range(args.steps):
        train.step()
    timed = (CLOCK() - start) / args.steps
    timer.remove()

    calls = sum(n for n, _ in timer.totals.values()) / args.steps
    inside = sum(t for _, t in timer.totals.values()) / args.steps
    print(
        f"{args.model} on {args.device}: CPU time, {args.steps} steps, {harness.THREADS} thread(s)"
    )
    print(f"step {plain * 1e3:.2f} ms ({timed * 1e3:.2f} ms with the primitives timed)")
    print(
        f"inside backend primitives {inside * 1e3:.2f} ms ({calls:.0f} calls); "
        f"outside {(timed - inside) * 1e3:.2f} ms (the timers' own cost included)"
    )
    print("costliest primitives (ms per step, calls per step, method, operands):")
    ranked = sorted(timer.totals.items(), key=lambda kv: -kv[1][1])
    for (name, operands), (n, t) in ranked[: args.top]:
        print(f"  {t / args.steps * 1e3:8.3f}  {n / args.steps:5.1f}  {name:24s} {operands}")

    if args.cprofile:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(args.steps):
            train.step()
        profile.disable()
        print(f"\ncProfile over {args.steps} steps: the core's and the plugins' functions")
        stats = pstats.Stats(profile).sort_stats("tottime")
        stats.print_stats(r"tensorweaver", args.cprofile)


if __name__ == "__main__":
    main()
