"""tw.compile on steps that read tensor values into Python (.item(), .tolist(), bool(t)):
the read is replayed where the step made it, branches on it are guarded, other uses run
eagerly."""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning, HostRead
from tensorweaver.compiler.draws import DRAWS

DEVICES = ["numpy", "torch:cpu"]


def line_of(fn: Callable, marker: str = "# the read") -> int:
    """The line of ``fn``'s source that holds ``marker``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, text in enumerate(lines) if marker in text)


def batches(device: str, seeds: list[int]) -> list[tuple]:
    out = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        x = rng.standard_normal((8, 12)).astype(np.float32) * (1 + seed)
        # The same targets: the core checks their values, and the replay compares them.
        y = np.arange(8) % 5
        out.append((tw.tensor(x, device=device), tw.tensor(y, device=device)))
    return out


def training(device: str, threshold: float | None = None) -> tuple:
    """A model, its optimizer and a step returning ``loss.item()`` (scaling the gradient
    down when the loss is above ``threshold``, if given)."""
    tw.manual_seed(0)
    with tw.device(device):
        model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 5))
    opt = tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x: tw.Tensor, y: tw.Tensor) -> float:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        if threshold is not None and loss.item() > threshold:  # the branch
            (loss * 0.25).backward()
        else:
            loss.backward()
        opt.step()
        return loss.item()  # the read

    return model, step


def run(device: str, compiled: bool, data: list[tuple], threshold: float | None = None) -> tuple:
    """Each step's returned value, the parameters after them, and the step."""
    model, step = training(device, threshold)
    fn = tw.compile(step) if compiled else step
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        returned = [fn(x, y) for x, y in data]
    return returned, list(model.parameters()), fn


def assert_same_parameters(a: list, b: list) -> None:
    for p, q in zip(a, b):
        assert p.dtype == q.dtype and tw.equal(p, q), (p, q)


@pytest.mark.parametrize("device", DEVICES)
def test_a_returned_item_is_read_afresh_by_the_replay(device: str) -> None:
    data = batches(device, [0]) * 5
    want, want_params, _ = run(device, False, data)
    got, params, fn = run(device, True, data)
    # Each step's own loss, bit for bit: no fallback (warnings are errors), no baked value.
    assert all(type(v) is float for v in got)
    assert got == want and len(set(got)) == 5
    assert_same_parameters(params, want_params)
    assert fn.traces == 3  # gradients and momentum appear, then two traces that agree
    assert ".item()" in fn.graph_source()[0]


@pytest.mark.parametrize("device", DEVICES)
def test_a_branch_on_item_follows_each_step(device: str) -> None:
    seeds = [0, 3, 3, 0, 0, 3, 0, 3, 3, 0, 3, 0]
    data = batches(device, seeds)
    losses, _, _ = run(device, False, data)
    threshold = float(np.median(losses))
    want, want_params, _ = run(device, False, data, threshold)
    taken = [v > threshold for v in want]
    assert 3 <= sum(taken) <= len(taken) - 3  # both branches, in a mixed order
    got, params, fn = run(device, True, data, threshold)
    assert got == want
    assert_same_parameters(params, want_params)
    # The first step creates state; then two traces per branch (the second confirms the
    # first), and the other eight steps replay whichever branch they take.
    assert fn.traces == 5
    assert len(fn.graph_source()) == 2


@pytest.mark.parametrize("device", DEVICES)
def test_bool_of_a_tensor_is_a_guard(device: str) -> None:
    w = tw.tensor([1.0, -2.0, 0.5], device=device)

    def forward(x: tw.Tensor) -> tw.Tensor:
        s = (w * x).sum()
        if s > 0:
            return x * s
        return x - s

    fn = tw.compile(forward)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for _ in range(10):
            x = tw.tensor(rng.standard_normal(3), device=device)
            assert tw.equal(fn(x), forward(x))
    assert fn.traces == 4 and len(fn.graph_source()) == 2


def test_tolist_and_integer_reads_are_returned() -> None:
    tw.manual_seed(0)
    model = nn.Linear(4, 3)
    y = tw.tensor([0, 1, 2, 0, 1, 2])

    def evaluate(x: tw.Tensor) -> tuple:
        with tw.no_grad():
            out = model(x)
            correct = (out.argmax(1) == y).sum().item()  # an int: guarded on its value
            return out.mean(0).tolist(), correct

    fn = tw.compile(evaluate)
    rng = np.random.default_rng(0)
    xs = [tw.tensor(rng.standard_normal((6, 4)).astype(np.float32)) for _ in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for x in xs * 3:
            got = fn(x)
            assert got == evaluate(x)
            assert all(type(v) is float for v in got[0]) and type(got[1]) is int
    assert fn.traces == 4  # two values of ``correct``: two traces each, then replays


@pytest.mark.parametrize("device", DEVICES)
def test_random_draws_before_a_changed_branch_are_not_drawn_twice(
    device: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay stopped by a guard hands its dropout masks to the run that takes over."""
    stopped = []
    again = DRAWS.again
    monkeypatch.setattr(DRAWS, "again", lambda: stopped.append(1) or again())

    def run(compiled: bool) -> tuple:
        tw.manual_seed(0)
        with tw.device(device):
            model = nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Dropout(0.5), nn.Linear(16, 5))
        opt = tw.optim.Adam(model.parameters(), lr=0.01)
        x, y = batches(device, [0])[0]

        def step() -> tuple:
            opt.zero_grad()
            out = model(x)
            F.cross_entropy(out, y).backward()
            opt.step()
            return (out.argmax(1) == y).sum().item()  # changes as the model learns

        fn = tw.compile(step) if compiled else step
        tw.manual_seed(1)
        return [fn() for _ in range(12)], list(model.parameters()), fn

    want, want_params, _ = run(False)
    assert len(set(want)) > 2  # several paths
    got, params, fn = run(True)
    assert got == want
    assert_same_parameters(params, want_params)
    assert stopped and fn.traces < 12  # some replays, some stopped by the guard


def test_a_compiled_module_branching_on_a_read_is_differentiated_as_eagerly() -> None:
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(4, 8), nn.Linear(8, 2)

        def forward(self, x: tw.Tensor) -> tw.Tensor:
            h = self.a(x)
            if h.abs().max().item() > 1.0:
                h = h / 2
            return self.b(tw.relu(h)).sum()

    def run(compiled: bool) -> tuple:
        tw.manual_seed(0)
        net = Net()
        opt = tw.optim.SGD(net.parameters(), lr=0.05)
        forward = tw.compile(net) if compiled else net
        rng = np.random.default_rng(0)
        losses = []
        for k in range(10):
            x = tw.tensor(rng.standard_normal((3, 4)) * (0.1 if k % 3 else 3), dtype=tw.float32)
            opt.zero_grad()
            loss = forward(x)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, list(net.parameters()), forward

    want, want_params, _ = run(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        got, params, forward = run(True)
    assert got == want
    assert_same_parameters(params, want_params)
    assert len(forward.graph_source()) == 2  # one forward-and-backward per branch


def test_a_write_into_shared_memory_before_a_branch_runs_eagerly() -> None:
    """A replay stopped by the guard would have written once already."""

    def run(compiled: bool) -> tuple:
        host = np.ones(3)
        w = tw.from_numpy(host)

        def step(x: tw.Tensor) -> tw.Tensor:
            w.add_(x)  # writes into ``host``
            if w.sum().item() > 5:
                return w * 2
            return w * 1

        fn = tw.compile(step) if compiled else step
        return [fn(tw.tensor([0.5, 0.5, 0.5])) for _ in range(4)], host

    want, want_host = run(False)
    with pytest.warns(CompileWarning, match="shares with NumPy"):
        got, host = run(True)
    assert all(tw.equal(a, b) for a, b in zip(got, want))
    np.testing.assert_array_equal(host, want_host)


def test_a_branch_that_changes_every_call_runs_eagerly_after_a_few_traces() -> None:
    def step(x: tw.Tensor) -> tuple:
        return x * 2, (x > 0).sum().item()  # an int that differs on every call

    fn = tw.compile(step)
    with pytest.warns(CompileWarning, match="8 new paths"):
        for k in range(12):
            x = tw.arange(12.0) - k
            got, want = fn(x), step(x)
            assert tw.equal(got[0], want[0]) and got[1] == want[1]
    assert fn.traces == 8


def test_results_of_replay_change_with_the_read_values() -> None:
    """A number computed from a read (not only the read itself) is recomputed."""
    a = tw.tensor([1.0, 2.0, 3.0])

    def step(x: tw.Tensor) -> tuple:
        v = (a * x).sum().item()
        w = x.amin().item()
        return 2 * v + 1, -v, abs(v) / 4, v - w, w / v, v > w

    fn = tw.compile(step)
    for k in (0, 0, 1, 1, 2, 3, 0):
        x = tw.tensor([1.0 * k, -2.0, 0.5])
        assert fn(x) == step(x)
    assert fn.traces == 4  # two per outcome of v > w


def test_a_read_number_kept_from_an_earlier_call_is_not_mistaken_for_this_calls() -> None:
    a = tw.tensor([1.0, 2.0, 3.0])

    def run(compiled: bool) -> list:
        first: list = []

        def step(x: tw.Tensor) -> float:
            v = (a * x).sum().item()
            if not first:
                first.append(v)  # kept: a later call reads it as a Python number
            return v - first[0]

        fn = tw.compile(step) if compiled else step
        return [fn(tw.tensor([k, 0.0, 0.0])) for k in (3.0, 2.0, 2.0, 1.0, 5.0, 0.5)]

    want = run(False)
    with pytest.warns(CompileWarning, match="eagerly"):
        assert run(True) == want


def scaled(x: tw.Tensor) -> tw.Tensor:
    t = (x * x).sum()
    return t * t.item()  # the read flows into a tensor op


def converted(x: tw.Tensor) -> Any:
    t = (x * x).sum()
    return float(t)  # the read: float() gives a plain number


LOG: list = []


def logged(x: tw.Tensor) -> tw.Tensor:
    t = (x * x).sum()
    LOG.append(t.item())  # the read: a side effect a replay would not repeat
    return t


@pytest.mark.parametrize("step", [scaled, converted, logged], ids=lambda f: f.__name__)
def test_other_uses_of_a_read_run_eagerly_naming_the_line(step: Callable) -> None:
    fn = tw.compile(step)
    line = line_of(step)
    with pytest.warns(CompileWarning, match=rf"test_graph_breaks\.py:{line}\b.*eagerly"):
        fn(tw.tensor([1.0, 2.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)  # one warning only
        for k in range(4):
            x = tw.tensor([1.0 + k, -2.0])
            got, want = fn(x), step(x)
            assert tw.equal(got, want) if isinstance(want, tw.Tensor) else got == want
    assert fn.traces == 1
    if step is logged:
        assert len(LOG) == 9  # the eager step's side effect, every call


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("threshold", [None, 1.0], ids=["returned", "branch"])
def test_fullgraph_raises_at_the_read(device: str, threshold: float | None) -> None:
    _, step = training(device, threshold)
    strict = tw.compile(step, fullgraph=True)
    line = line_of(step, "# the branch" if threshold is not None else "# the read")
    x, y = batches(device, [0])[0]
    with pytest.raises(HostRead, match=rf"test_graph_breaks\.py:{line}\b"):
        strict(x, y)
