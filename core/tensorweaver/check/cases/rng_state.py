"""The optional random stream states (API 2.5): ``get_rng_state`` and ``set_rng_state``.

Cases ``rng_state/<what>``, each skipped where the backend defines neither (the core then
reseeds its stream where it must put it back, and says so). A state must put the stream
back exactly: the draws of every random primitive, and of the fused kernels that draw
without a generator argument (dropout), repeat bit for bit after ``set_rng_state``; reading
a state must not move the stream; a state must replace a stream that was reseeded since;
and ``tw.random.fork_rng`` built on them must leave the device's later draws as they are
without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.check.case import Case, Failure, Measure, Skip
from tensorweaver.check.context import Context
from tensorweaver.contract import dtypes as d

INF = float("inf")
N = 257  # samples per draw


def _verdict(what: str, ok: bool, detail: str) -> Measure:
    return Measure(what, 0.0 if ok else INF, 0.0, detail)


def _pair(ctx: Context) -> None:
    """Skip without the pair; fail with only one of them."""
    defined = [
        n for n in ("get_rng_state", "set_rng_state") if callable(getattr(ctx.backend, n, None))
    ]
    if not defined:
        raise Skip(f"{ctx.device} defines no get_rng_state/set_rng_state (optional)")
    if len(defined) == 1:
        missing = ({"get_rng_state", "set_rng_state"} - set(defined)).pop()
        raise Failure(missing, f"defined {defined[0]} without {missing}: define both or neither")


def _state(ctx: Context) -> bytes:
    state = ctx.call("get_rng_state")
    if not isinstance(state, bytes):
        raise Failure("get_rng_state", f"returned {type(state).__name__}, not bytes")
    return state


def _draws(ctx: Context) -> list[np.ndarray]:
    """Draws of each random primitive, in each float dtype, on the host."""
    i = d.int64 if d.int64 in ctx.dtypes else d.int32
    floats = [f for f in (d.float32, d.float64) if f in ctx.dtypes]
    found = []
    for f in floats:
        found.append(ctx.fetch(ctx.call("random_uniform", (N,), -1.0, 2.0, f), f, "random_uniform"))
        found.append(ctx.fetch(ctx.call("random_normal", (N,), 0.5, 3.0, f), f, "random_normal"))
    found.append(ctx.fetch(ctx.call("random_integers", (N,), -5, 1000, i), i, "random_integers"))
    found.append(
        ctx.fetch(
            ctx.call("random_uniform", (3, 5), 0.0, 1.0, floats[0]), floats[0], "random_uniform"
        )
    )
    return found


def _single_draws(ctx: Context) -> list[tuple[str, Callable[[], Any]]]:
    """One draw of each random primitive in each dtype. A state taken after each holds
    whatever the generator buffers at that point: half of a 64-bit word after a 32-bit draw
    (NumPy's), a spare normal (Box-Muller pairs), a partly used integer word; a state that
    leaves one out fails the round trip after that draw."""
    floats = [x for x in (d.float32, d.float16, d.bfloat16, d.float64) if x in ctx.dtypes]
    found: list[tuple[str, Callable[[], Any]]] = []
    for f in floats:
        found.append(
            (f"a uniform {f.name}", lambda f=f: ctx.call("random_uniform", (1,), 0.0, 1.0, f))
        )
        found.append(
            (f"a normal {f.name}", lambda f=f: ctx.call("random_normal", (1,), 0.0, 1.0, f))
        )
    for i in (x for x in (d.int32, d.int64) if x in ctx.dtypes):
        found.append((f"an {i.name}", lambda i=i: ctx.call("random_integers", (1,), 0, 7, i)))
    return found


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(x.shape == y.shape and np.array_equal(x, y) for x, y in zip(a, b))


def _round_trip(ctx: Context) -> Iterator[Measure]:
    _pair(ctx)
    ctx.call("seed", 2024)
    for what, draw in _single_draws(ctx):  # states mid-stream, after each kind of draw
        draw()
        state = _state(ctx)
        first = _draws(ctx)
        after = _state(ctx)
        yield _verdict(
            "get_rng_state",
            len(after) == len(state),
            f"states of {len(state)} then {len(after)} bytes",
        )
        ctx.call("set_rng_state", state)
        yield _verdict(
            "set_rng_state",
            _same(_draws(ctx), first),
            f"after {what}, the draws after set_rng_state(state) differ from those that "
            "followed the state",
        )
        yield _verdict(
            "get_rng_state",
            _state(ctx) == after,
            f"after {what}, the same draws from the same state ended in another state",
        )


def _read_keeps_stream(ctx: Context) -> Iterator[Measure]:
    _pair(ctx)
    ctx.call("seed", 77)
    want = _draws(ctx)
    ctx.call("seed", 77)
    _state(ctx)
    _state(ctx)
    yield _verdict(
        "get_rng_state", _same(_draws(ctx), want), "reading the state moved the stream on"
    )


def _replaces_reseeded(ctx: Context) -> Iterator[Measure]:
    _pair(ctx)
    ctx.call("seed", 5)
    _single_draws(ctx)[0][1]()  # one 32-bit uniform: mid-word where words are 64-bit
    state = _state(ctx)
    want = _draws(ctx)
    ctx.call("seed", 6)
    _draws(ctx)
    ctx.call("set_rng_state", state)
    yield _verdict(
        "set_rng_state",
        _same(_draws(ctx), want),
        "after seed() then set_rng_state(state), the draws differ from those after the state",
    )


def _through_core(body: Callable[[Context], Any]) -> Callable[[Context], Iterator[Measure]]:
    def run(ctx: Context) -> Iterator[Measure]:
        _pair(ctx)
        # A backend created after the last tw.manual_seed gets it on first use: first.
        tw.random.seeded(ctx.backend)
        with ctx.scope():
            yield from body(ctx)

    return run


def _fused_draws(ctx: Context) -> Iterator[Measure]:
    """Dropout (a fused kernel where the backend has one) repeats its mask from a state."""
    x = tw.ones(N, 4)
    state = _state(ctx)
    first = np.asarray(tw.nn.functional.dropout(x, 0.5, True))
    ctx.call("set_rng_state", state)
    again = np.asarray(tw.nn.functional.dropout(x, 0.5, True))
    yield _verdict(
        "set_rng_state", np.array_equal(first, again), "dropout drew another mask from one state"
    )


def _fork_rng(ctx: Context) -> Iterator[Measure]:
    """Draws after ``tw.random.fork_rng`` are those without it."""
    state = _state(ctx)
    want = np.asarray(tw.rand(N))
    ctx.call("set_rng_state", state)
    with tw.random.fork_rng():
        tw.rand(N + 1)
        tw.randn(3, 3)
    yield _verdict(
        "set_rng_state", np.array_equal(np.asarray(tw.rand(N)), want), "draws after fork_rng moved"
    )


def cases() -> list[Case]:
    return [
        Case("rng_state/round-trip", _round_trip),
        Case("rng_state/read-keeps-stream", _read_keeps_stream),
        Case("rng_state/replaces-reseeded", _replaces_reseeded),
        Case("rng_state/fused-draws", _through_core(_fused_draws)),
        Case("rng_state/fork_rng", _through_core(_fork_rng)),
    ]
