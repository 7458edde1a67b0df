"""The optional compile_graph hook: what a backend is offered, and torch's torch.compile."""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import tensorweaver_torch.compile as torch_compile
import torch
from tensorweaver import nn
from tensorweaver.compiler.record import GraphRecord
from tensorweaver.selection import backend_of


def adam_step(device: str, seed: int = 0, optimizer: str = "adam") -> tuple:
    """A training step (linear, ReLU, linear, cross-entropy, Adam or SGD with momentum) and
    its parameters."""
    tw.manual_seed(seed)
    with tw.device(device):
        model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    if optimizer == "adam":
        opt = tw.optim.Adam(model.parameters(), lr=0.01)
    else:
        opt = tw.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    rng = np.random.default_rng(seed)
    x = tw.tensor(rng.standard_normal((8, 12)).astype(np.float32), device=device)
    y = tw.tensor(np.arange(8) % 5, device=device)

    def step() -> Any:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, list(model.parameters())


class Hook:
    """A compile_graph that keeps what it was offered and counts the calls of its result."""

    def __init__(self, decline: bool = False) -> None:
        self.records: list[GraphRecord] = []
        self.calls = 0
        self.decline = decline

    def __call__(self, graph: GraphRecord) -> Any:
        self.records.append(graph)
        if self.decline:
            return None

        def run(*inputs: Any) -> tuple:
            self.calls += 1
            return graph.fn(*inputs)

        return run


@pytest.fixture
def hook(monkeypatch: pytest.MonkeyPatch) -> Hook:
    """A compile_graph on the NumPy backend."""
    found = Hook()
    backend = type(backend_of("numpy"))
    monkeypatch.setattr(backend, "compile_graph", found.__call__, raising=False)
    return found


def test_the_hook_gets_the_steps_calls_and_its_callable_replays(hook: Hook) -> None:
    step, params = adam_step("numpy")
    eager_step, eager_params = adam_step("numpy")
    compiled = tw.compile(step, mode="max-autotune")
    losses = [compiled() for _ in range(6)]
    want = [eager_step() for _ in range(6)]
    assert len(hook.records) == 1 and hook.calls == 3  # three traces, then three replays
    for a, b in zip(losses + params, want + eager_params):
        assert tw.equal(a, b)
    record = hook.records[0]
    assert record.mode == "max-autotune"
    backend = backend_of("numpy")
    assert all(callable(getattr(backend, c.primitive)) for c in record.calls)
    # The core's check of the class targets (a read back to the host) ran before it.
    assert not any(c.primitive in ("to_host", "host_view") for c in record.calls)
    assert record.source.startswith(f"def compute({', '.join(record.inputs)}):")
    made = {line.split(" = ")[0].strip() for line in record.source.splitlines() if " = " in line}
    assert record.outputs and set(record.outputs) <= made | set(record.inputs)
    assert {c.result for c in record.calls} <= made
    shapes = {record.values[n][0] for n in record.inputs if n in record.values}
    assert {(16, 12), (16,), (5, 16), (5,), (8, 12)} <= shapes
    numbers = [n for n in record.inputs if n not in record.values]
    assert numbers  # the learning rate and Adam's bias corrections, recomputed every step
    assert set(record.methods.values()) == {c.primitive for c in record.calls}


def test_rebind_sends_a_method_to_another_callable(hook: Hook) -> None:
    step, _ = adam_step("numpy")
    compiled = tw.compile(step)
    for _ in range(3):
        compiled()
    record = hook.records[0]
    seen: list[str] = []
    backend = backend_of("numpy")

    def maximum(*args: Any) -> Any:
        seen.append("maximum")
        return backend.maximum(*args)

    assert "maximum" in record.methods.values()
    fn = record.rebind({"maximum": maximum})
    args = [np.ones(record.values[n][0], record.values[n][1]) if n in record.values else 0.5
            for n in record.inputs]  # fmt: skip
    out = fn(*args)
    assert seen == ["maximum"] and len(out) == len(record.outputs)


def test_a_declined_graph_and_backend_tensorweaver_replay_in_the_core(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    declining = Hook(decline=True)
    backend = type(backend_of("numpy"))
    monkeypatch.setattr(backend, "compile_graph", declining.__call__, raising=False)
    step, params = adam_step("numpy")
    eager_step, eager_params = adam_step("numpy")
    compiled = tw.compile(step)
    for _ in range(5):
        compiled(), eager_step()
    assert len(declining.records) == 1
    assert all(tw.equal(a, b) for a, b in zip(params, eager_params))
    never = Hook()
    monkeypatch.setattr(backend, "compile_graph", never.__call__, raising=False)
    step, _ = adam_step("numpy")
    compiled = tw.compile(step, backend="tensorweaver")
    for _ in range(5):
        compiled()
    assert never.records == [] and compiled.traces == 3


def test_torch_compiled_step_equals_the_eager_one() -> None:
    # SGD: one torch.compile (Adam's bias corrections cost a second one; the kit's
    # compile/training_step case runs Adam).
    step, params = adam_step("torch:cpu", optimizer="sgd")
    eager_step, eager_params = adam_step("torch:cpu", optimizer="sgd")
    compiled = tw.compile(step)
    got = [compiled().item() for _ in range(7)]
    want = [eager_step().item() for _ in range(7)]
    graph = next(iter(compiled._cache.values()))
    assert graph.run.__globals__["compute"] is not graph.record.fn  # torch.compile's
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for a, b in zip(params, eager_params):
        np.testing.assert_allclose(
            np.asarray(a.detach()), np.asarray(b.detach()), rtol=1e-5, atol=1e-7
        )
    # torch.compile's first use turns torch.distributions' checks off process-wide; the
    # hook puts them back as they were
    assert torch.distributions.Distribution._validate_args


class InvalidCxxCompiler(RuntimeError):
    """Named as inductor's exception for a missing or broken C++ compiler."""


def test_torch_falls_back_to_the_replay_once_torch_compile_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(fn: Any, **_: Any) -> Any:
        def run(*inputs: Any) -> Any:
            try:
                raise InvalidCxxCompiler("no C++ compiler\nsecond line")
            except InvalidCxxCompiler as inner:  # wrapped, as Dynamo wraps backend errors
                raise RuntimeError("backend compiler failed") from inner

        return run

    monkeypatch.setattr(torch_compile, "_unavailable", [])
    monkeypatch.setattr(torch_compile.torch, "compile", broken)
    step, params = adam_step("torch:cpu")
    eager_step, eager_params = adam_step("torch:cpu")
    compiled = tw.compile(step)
    with pytest.warns(RuntimeWarning, match="cannot build code.*backend compiler failed"):
        for _ in range(5):
            compiled(), eager_step()
    assert all(tw.equal(a, b) for a, b in zip(params, eager_params))
    other, _ = adam_step("torch:cpu", seed=1)
    other = tw.compile(other)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per process
        for _ in range(5):
            other()
    graph = next(iter(other._cache.values()))
    assert graph.run.__globals__["compute"] is graph.record.fn  # not offered again


def test_a_graph_torch_compile_fails_on_replays_and_the_next_is_still_compiled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tried = []

    def broken(fn: Any, **_: Any) -> Any:
        def run(*inputs: Any) -> Any:
            tried.append(fn)
            raise RuntimeError("this graph only")

        return run

    monkeypatch.setattr(torch_compile, "_unavailable", [])
    monkeypatch.setattr(torch_compile, "_failed_graphs", set())
    monkeypatch.setattr(torch_compile.torch, "compile", broken)
    step, params = adam_step("torch:cpu")
    eager_step, eager_params = adam_step("torch:cpu")
    compiled = tw.compile(step)
    with pytest.warns(RuntimeWarning, match="failed on this graph.*this graph only"):
        for _ in range(5):
            compiled(), eager_step()
    assert all(tw.equal(a, b) for a, b in zip(params, eager_params))
    other, _ = adam_step("torch:cpu", seed=1)
    other = tw.compile(other)
    for _ in range(5):
        other()
    assert len(tried) == 2 and not torch_compile._unavailable  # the second graph was tried


def test_numpy_writes_into_dying_arrays_and_stays_bit_identical() -> None:
    step, params = adam_step("numpy", optimizer="sgd")
    eager_step, eager_params = adam_step("numpy", optimizer="sgd")
    compiled = tw.compile(step)
    for _ in range(6):
        assert tw.equal(compiled(), eager_step())
    assert all(tw.equal(a, b) for a, b in zip(params, eager_params))
    graph = next(iter(compiled._cache.values()))
    rewritten = graph.run.__globals__["compute"]
    assert rewritten is not graph.record.fn
    assert {"_np_maximum", "_zero_where", "_foreach_add"} <= set(rewritten.__code__.co_names)


def test_numpy_leaves_arrays_that_are_still_used() -> None:
    """A ReLU's input that is used afterwards, or read by a view, is not written into."""

    def step(a: Any, w: Any) -> Any:
        z = a @ w
        h = tw.maximum(z, tw.zeros(()))  # z dies here: written into
        z2 = h @ w
        r = tw.maximum(z2, tw.zeros(()))  # z2 is used below: not written into
        z3 = h @ w + 1
        view = z3.reshape(-1)
        r3 = tw.maximum(z3, tw.zeros(()))  # z3 dies here, but a view of it lives on
        return r.sum() + r3.sum() + view[1:].sum(), z2

    rng = np.random.default_rng(0)
    a = tw.tensor(rng.standard_normal((4, 4)))
    w = tw.tensor(rng.standard_normal((4, 4)))
    compiled = tw.compile(step)
    for _ in range(4):
        got, want = compiled(a, w), step(a, w)
        assert all(tw.equal(x, y) for x, y in zip(got, want))
    graph = next(iter(compiled._cache.values()))
    assert "_np_maximum" in graph.run.__globals__["compute"].__code__.co_names


def test_torch_keeps_whichever_of_compiled_and_replay_is_faster() -> None:
    def slow(x: float) -> tuple:
        time.sleep(0.002)
        return (x + 1,)

    def fast(x: float) -> tuple:
        return (x + 1,)

    for compiled, plain, winner in ((slow, fast, fast), (fast, slow, fast)):
        chooser = torch_compile._Faster(compiled, plain)
        calls = 1 + 2 * chooser.TRIALS  # the compiling call, then the timed trials
        assert [chooser(1.0) for _ in range(calls)] == [(2.0,)] * calls
        assert chooser.chosen is winner


@pytest.mark.parametrize("zero", [0.0, -0.0])
def test_numpy_where_with_a_zero_branch_keeps_the_sign_of_zero(zero: float) -> None:
    # where(c, a, 0) and where(c, 0, a) write into a dying a; a -0.0 branch must stay -0.0
    def step(x: Any) -> Any:
        y = x * 2
        z = x * 3
        return tw.where(x > 0, y, zero) + 0 * x, tw.where(x > 0, zero, z)

    x = tw.tensor(np.linspace(-1, 1, 8))
    compiled = tw.compile(step)
    for _ in range(4):
        for got, want in zip(compiled(x), step(x)):
            np.testing.assert_array_equal(np.signbit(got.numpy()), np.signbit(want.numpy()))
            assert tw.equal(got, want)


def test_numpy_calls_the_ufunc_itself_for_operands_of_at_most_one_axis() -> None:
    """Binary elementwise calls on vectors, 0-d tensors and numbers call NumPy's ufunc with
    no layout tests (none applies below two axes), bit for bit as the eager calls; a
    matrix's call keeps the backend's method."""

    def step(a: Any, b: Any, s: Any, m: Any, k: Any) -> Any:
        return (
            a * b,
            a - s,
            s / a,
            tw.maximum(a, b),
            tw.minimum(b, s),
            (s + s) * 3,
            a + k,  # (float32 with int64)
            (m * a).sum(0),
        )

    rng = np.random.default_rng(0)
    a = tw.tensor(rng.standard_normal(5), dtype=tw.float32)
    b = tw.tensor(np.array([np.nan, -0.0, 0.0, np.inf, 1.5]), dtype=tw.float32)
    s = tw.tensor(-0.75, dtype=tw.float32)
    m = tw.tensor(rng.standard_normal((3, 5)), dtype=tw.float32)
    k = tw.arange(5)
    compiled = tw.compile(step)
    for _ in range(4):
        got, want = compiled(a, b, s, m, k), step(a, b, s, m, k)
        for x, y in zip(got, want):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), strict=True)
    names = next(iter(compiled._cache.values())).run.__globals__["compute"].__code__.co_names
    assert {"_np_multiply", "_np_subtract", "_np_true_divide", "_np_maximum"} <= set(names)
