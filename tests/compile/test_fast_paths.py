"""tw.compile's fast paths: the generated guard of the last signature, graph-time
simplification of calls that give their argument back, and the NumPy hook's in-place
foreach updates. Each must be exactly as strict, and give exactly the eager bits."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.compiler.guards import make_guard
from tensorweaver.compiler.state import StepState

SCALE = 2.0


def scaled(a: Any, b: Any, k: float) -> Any:
    return (a * b * k * SCALE).sum()


def leaf(values: Any, dtype: Any = tw.float32, requires_grad: bool = True) -> Any:
    return tw.tensor(np.asarray(values, dtype=np.float64), dtype=dtype, requires_grad=requires_grad)


def with_grad(t: Any, dtype: Any = tw.float32) -> Any:
    if dtype is not t.dtype:
        t.grad_dtype = None  # (a gradient of another dtype: as PyTorch, say so first)
    t.grad = tw.zeros(t.shape, dtype=dtype)
    return t


def agrees(fn: Callable, state: StepState, key: tuple, guard: Callable, args: tuple, **kw) -> bool:
    """The guard's answer, which must not accept a call of another signature (it may
    refuse more: a call it refuses computes its signature)."""
    accepted = guard(args, kw)
    assert accepted in (True, False)
    assert not accepted or StepState(fn, args, kw, state).signature(args, kw) == key
    return accepted


def test_the_guard_accepts_exactly_the_calls_of_its_signature(monkeypatch: Any) -> None:
    a, b = leaf([1.0, 2.0]), with_grad(leaf([3.0, 4.0]))
    args = (a, b, 3)
    state = StepState(scaled, args, {})
    key = state.signature(args, {})
    guard = make_guard(state, scaled, args, key)
    assert guard is not None

    def check(*call: Any, **kw: Any) -> bool:
        return agrees(scaled, state, key, guard, call, **kw)

    assert check(a, b, 3)
    assert check(leaf([5.0, 6.0]), with_grad(leaf([7.0, 8.0])), 3)  # other tensors alike
    assert not check(leaf([1.0, 2.0, 3.0]), b, 3)  # shape
    assert not check(leaf([1.0, 2.0], tw.float64), b, 3)  # dtype
    assert not check(leaf([1.0, 2.0], requires_grad=False), b, 3)  # requires_grad
    assert not check(with_grad(leaf([1.0, 2.0])), b, 3)  # a gradient appeared
    assert not check(a, leaf([3.0, 4.0]), 3)  # a gradient went
    assert not check(a, with_grad(leaf([3.0, 4.0]), tw.float64), 3)  # the gradient's dtype
    assert not check(a, b, 4)  # a Python number's value
    assert not check(a, b, 3.0)  # its type
    assert not check(a, b)  # the number of arguments
    assert not check(a, b, k=3)  # keywords
    assert not check(a, tw.Tensor(a.native, a.backend, a.dtype), 3)  # two share an array
    with tw.no_grad():
        assert not check(a, b, 3)  # grad mode
    tw.set_default_dtype(tw.float64)
    try:
        assert not check(a, b, 3)  # default dtype
    finally:
        tw.set_default_dtype(tw.float32)
    assert check(a, b, 3)
    # A global the code names, rebound: the objects named differ (and the signature, which
    # holds the numbers the code reads): refused.
    monkeypatch.setitem(globals(), "SCALE", 3.0)
    assert not check(a, b, 3)


def test_the_guard_of_a_method_follows_its_instance_and_its_modules() -> None:
    class Step:
        def __init__(self) -> None:
            self.model = nn.Linear(3, 2)
            self.x = tw.ones(4, 3)

        def __call__(self) -> Any:
            return self.model(self.x).sum()

    step = Step()
    fn = step.__call__
    state = StepState(fn, (), {})
    key = state.signature((), {})
    guard = make_guard(state, fn, (), key)
    assert guard is not None and agrees(fn, state, key, guard, ())
    step.model.eval()  # a training flag
    assert not agrees(fn, state, key, guard, ())
    step.model.train()
    step.model.weight.grad = tw.zeros(2, 3)  # a parameter's gradient
    assert not agrees(fn, state, key, guard, ())
    step.model.weight.grad = None
    assert agrees(fn, state, key, guard, ())
    step.model = nn.Linear(3, 2)  # another module in the instance
    assert not agrees(fn, state, key, guard, ())


def test_a_closure_cell_that_changes_fails_the_guard() -> None:
    scale = 2.0

    def fn(a: Any) -> Any:
        return a * scale

    a = leaf([1.0])
    state = StepState(fn, (a,), {})
    key = state.signature((a,), {})
    guard = make_guard(state, fn, (a,), key)
    assert agrees(fn, state, key, guard, (a,))
    scale = tw.ones(1)  # noqa: F841  (read through fn's closure)
    assert not agrees(fn, state, key, guard, (a,))


def test_compiled_calls_take_the_fast_path_and_leave_it_when_a_guard_changes() -> None:
    def step(a: Any, b: Any) -> Any:
        y = ((a * b) + a).sum()
        y.backward()
        return y

    eager = [leaf(np.linspace(-1, 1, 16)), leaf(np.linspace(2, 3, 16))]
    ours = [leaf(np.linspace(-1, 1, 16)), leaf(np.linspace(2, 3, 16))]
    fn = tw.compile(step)
    for _ in range(5):
        assert tw.equal(step(*eager), fn(*ours))
    assert fn._fast is not None and fn.traces == 3
    ours[1].grad = None  # the signature changes: the guard refuses, and a trace follows
    eager[1].grad = None
    for _ in range(4):
        assert tw.equal(step(*eager), fn(*ours))
    for e, c in zip(eager, ours):
        assert tw.equal(e.grad, c.grad)


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_multiplying_by_ones_is_dropped_but_never_aliases_a_result(device: str) -> None:
    def step(a: Any, b: Any) -> Any:
        a.grad = b.grad = None
        y = ((a * b) + a).sum()  # a's gradient: ones * b + ones, b's: ones * a (a result)
        y.backward()
        return y

    with tw.device(device):
        eager = [leaf(np.linspace(-1, 1, 16)), leaf(np.linspace(2, 3, 16))]
        ours = [leaf(np.linspace(-1, 1, 16)), leaf(np.linspace(2, 3, 16))]
    fn = tw.compile(step, backend="tensorweaver")
    for _ in range(5):
        assert tw.equal(step(*eager), fn(*ours))
        for e, c in zip(eager, ours):
            assert tw.equal(e.grad, c.grad)
        # b's gradient is a * 1: the graph still makes it a new array, as eagerly
        assert not np.shares_memory(np.asarray(ours[1].grad.native), np.asarray(ours[0].native))
    graph = next(iter(fn._cache.values()))
    primitives = [c.primitive for c in graph.record.calls]
    assert primitives.count("mul") == 2  # a * b, and b's gradient; a's ones * b is gone


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_numpy_foreach_updates_write_into_dying_lists_bit_identically(optimizer: str) -> None:
    def run(compiled: bool) -> tuple:
        tw.manual_seed(0)
        model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
        if optimizer == "adam":
            opt = tw.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.1)
        else:
            opt = tw.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
        rng = np.random.default_rng(0)
        x = tw.tensor(rng.standard_normal((8, 12)).astype(np.float32))
        y = tw.tensor(np.arange(8) % 5)

        def step() -> Any:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = tw.compile(step) if compiled else step
        losses = [fn() for _ in range(7)]
        return losses, list(model.parameters()), fn

    want, want_params, _ = run(False)
    got, params, fn = run(True)
    assert all(tw.equal(a, b) for a, b in zip(got, want))
    assert all(tw.equal(a, b) for a, b in zip(params, want_params))
    compute = next(iter(fn._cache.values())).run.__globals__["compute"]
    if optimizer == "adam":
        assert {"_foreach_lerp", "_foreach_addcdiv"} <= set(compute.__code__.co_names)
        assert ("into",) in compute.__code__.co_consts  # a dying list written into


def test_numbers_the_code_reads_are_not_replayed_stale() -> None:
    """A global, a closure variable and an attribute of a method's object, changed after the
    graph exists, give the eager result (they replayed the traced value before)."""
    state = {"scale": 2.0}

    def closure() -> Any:
        factor = state["scale"]

        def step(x: Any) -> Any:
            return x * factor

        return step

    class Scaled:
        def __init__(self) -> None:
            self.scale = 2.0

        def step(self, x: Any) -> Any:
            return x * self.scale

    scaled = Scaled()
    x = tw.ones(3)
    for name, step, change in (
        ("global", _times_global, lambda v: globals().update(SCALE_READ=v)),
        ("method", scaled.step, lambda v: setattr(scaled, "scale", v)),
    ):
        change(2.0)
        fn = tw.compile(step)
        for value in (2.0, 2.0, 2.0, 2.0, 3.0, -0.0, 0.0):
            change(value)
            assert fn(x).tolist() == [value] * 3, (name, value)
            assert math.copysign(1, fn(x)[0].item()) == math.copysign(1, value), (name, value)
    fn = tw.compile(lambda x, s: x * s)
    for value in (0.0, 0.0, 0.0, -0.0, 0.0, -0.0):  # an argument: the sign counts too
        assert math.copysign(1, fn(x, value)[0].item()) == math.copysign(1, value)
    # a closure variable: a new closure is a new function, compiled anew; the same one with
    # its cell changed is checked by identity and value
    step = closure()
    fn = tw.compile(step)
    for value in (2.0, 2.0, 2.0, 5.0):
        step.__closure__[0].cell_contents = value
        assert fn(x).tolist() == [value] * 3


SCALE_READ = 2.0


def _times_global(x: Any) -> Any:
    return x * SCALE_READ
