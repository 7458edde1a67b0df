"""tw.compile: a replayed step equals the eager step, and guards retrace when they should."""

from __future__ import annotations

import math
import types
import warnings

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning, HostRead
from tensorweaver_torch.compile import CompiledGraphs

DEVICES = ["numpy", "torch:cpu"]


@pytest.fixture(autouse=True)
def core_replay(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are of the core's replay, bit-identical to eager on every backend; the
    torch backend's compile_graph hook (torch.compile: seconds a graph, results within
    rounding) has its own tests in test_compile_graph.py."""
    monkeypatch.setattr(CompiledGraphs, "compile_graph", None)


def mlp(device: str, dropout: float = 0.0) -> nn.Module:
    tw.manual_seed(0)
    with tw.device(device):
        return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 5))


def batch(device: str, n: int = 8, seed: int = 0) -> tuple:
    rng = np.random.default_rng(seed)
    x = tw.tensor(rng.standard_normal((n, 12)).astype(np.float32), device=device)
    y = tw.tensor(np.arange(n) % 5, device=device)
    return x, y


def train(device: str, compiled: bool, optimizer: str = "sgd", dropout: float = 0.0) -> tuple:
    """Losses and parameters after five steps, and the step function."""
    model = mlp(device, dropout)
    if optimizer == "adam":
        opt = tw.optim.Adam(model.parameters(), lr=0.01)
    else:
        opt = tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9 if optimizer else 0)

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    fn = tw.compile(step) if compiled else step
    x, y = batch(device)
    tw.manual_seed(1)
    losses = [fn(x, y) for _ in range(5)]
    return losses, list(model.parameters()), fn


def assert_same(eager: tuple, compiled: tuple) -> None:
    for a, b in zip(eager[0] + eager[1], compiled[0] + compiled[1]):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert tw.equal(a, b), (a, b)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("optimizer", ["sgd", "momentum"])
def test_training_step_replays_bit_identically(device: str, optimizer: str) -> None:
    optimizer = "" if optimizer == "sgd" else optimizer
    compiled = train(device, True, optimizer)
    assert_same(train(device, False, optimizer), compiled)
    # Three traces (the first step creates gradients and state, then two that agree),
    # then two replays.
    assert compiled[2].traces == 3
    assert len(compiled[2].graph_source()) == 1


@pytest.mark.parametrize("device", DEVICES)
def test_dropout_masks_follow_the_seed(device: str) -> None:
    compiled = train(device, True, dropout=0.5)
    assert_same(train(device, False, dropout=0.5), compiled)
    assert compiled[2].traces == 3


@pytest.mark.parametrize("device", DEVICES)
def test_adam_replays_with_its_step_count_recomputed(device: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        compiled = train(device, True, "adam")
    assert_same(train(device, False, "adam"), compiled)
    # Three traces (state appears, then two that agree although the step count, a Python
    # number the graph recomputes, differs), then replays.
    assert compiled[2].traces == 3
    assert "['step']" in compiled[2].graph_source()[0]


class SqrtDecaySGD(tw.optim.Optimizer):
    """SGD with lr / sqrt(step) computed by math.sqrt: a number the graph cannot follow."""

    def __init__(self, params, lr: float) -> None:
        super().__init__(params, {"lr": lr})

    def _init_state(self, param, group):
        return {"step": 0.0}

    def _update(self, param, group) -> None:
        state = self._state_of(param, group)
        state["step"] += 1
        param.add_(param.grad, alpha=-group["lr"] / math.sqrt(state["step"]))


def test_a_number_that_escapes_its_expression_runs_eagerly() -> None:
    def run(compiled: bool) -> list:
        model = mlp("numpy")
        opt = SqrtDecaySGD(model.parameters(), lr=0.1)
        x, y = batch("numpy")

        def step():
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

        fn = tw.compile(step) if compiled else step
        for _ in range(5):
            fn()
        return list(model.parameters())

    with pytest.warns(CompileWarning, match="cannot recompute"):
        compiled = run(True)
    for a, b in zip(run(False), compiled):
        assert tw.equal(a, b)


def test_learning_rate_schedule_is_followed() -> None:
    def run(compiled: bool) -> tuple:
        model = mlp("numpy")
        opt = tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        sched = tw.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        x, y = batch("numpy")

        def step():
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = tw.compile(step) if compiled else step
        losses = []
        for _ in range(6):
            losses.append(fn())
            sched.step()
        return losses + list(model.parameters()), fn

    (want, _), (got, fn) = run(False), run(True)
    for a, b in zip(want, got):
        assert tw.equal(a, b)
    assert fn.traces == 3  # not one per learning rate


def test_guards_retrace() -> None:
    model = mlp("numpy")
    calls = []

    @tw.compile
    def forward(x, scale):
        calls.append(1)
        return model(x) * scale

    def settle(x, scale: float) -> int:
        """Three calls, each equal to the eager forward; the traces they took."""
        before = forward.traces
        for _ in range(3):
            assert tw.equal(forward(x, scale), model(x) * scale)
        return forward.traces - before

    x8, _ = batch("numpy", 8)
    x4, _ = batch("numpy", 4, seed=1)
    with tw.no_grad():
        # two traces that agree, then replays: the Python body runs no more
        assert settle(x8, 2.0) == 2 and len(calls) == 2
        # a new batch size, a changed Python number, eval mode: each traces anew
        assert settle(x4, 2.0) == 2
        assert settle(x4, 3.0) == 2
        model.eval()
        assert settle(x4, 3.0) == 2
        model.train()
        assert settle(x4, 3.0) == 0
        assert settle(x8, 2.0) == 0
        # the replay reads the current arguments, not the traced ones
        x4b, _ = batch("numpy", 4, seed=2)
        assert settle(x4b, 3.0) == 0
    assert len(calls) == 8


def test_a_numpy_read_in_the_step_runs_eagerly_with_a_warning() -> None:
    # .item() is replayed with guards (test_graph_breaks.py); a read through NumPy is not.
    a = tw.tensor([1.0, 2.0, 3.0])

    def step(x):
        total = (a * x).sum()
        if total.numpy() > 0:  # read through NumPy: not replayed
            return total * 2
        return total

    fn = tw.compile(step)
    with pytest.warns(CompileWarning, match=r"test_compile\.py:\d+"):
        fn(tw.tensor([1.0, 1.0, 1.0]))
    for x in ([1.0, 1.0, 1.0], [-5.0, 0.0, 0.0]):
        assert tw.equal(fn(tw.tensor(x)), step(tw.tensor(x)))
    strict = tw.compile(step, fullgraph=True)
    with pytest.raises(HostRead, match=r"test_compile\.py:\d+"):
        strict(tw.tensor([1.0, 1.0, 1.0]))


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_module_gives_the_eager_forward(device: str) -> None:
    model = mlp(device)
    compiled = tw.compile(model)
    x, _ = batch(device)
    with tw.no_grad():
        want = model(x)
        for _ in range(3):
            assert tw.equal(compiled(x), want)
    assert compiled.traces == 2
    assert list(compiled.parameters()) == list(model.parameters())  # the module's API


@pytest.mark.parametrize("device", DEVICES)
def test_compiled_module_trains_like_the_eager_one(device: str) -> None:
    """The replayed forward carries a recorded backward: loss.backward() outside the
    compiled module fills .grad as eagerly (batch norm, dropout, Adam included)."""

    def run(compiled: bool) -> tuple:
        tw.manual_seed(0)
        with tw.device(device):
            model = nn.Sequential(
                nn.Linear(12, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 5)
            )
        x, y = batch(device)
        x.requires_grad_()
        opt = tw.optim.Adam(model.parameters(), lr=0.01)
        forward = tw.compile(model) if compiled else model
        tw.manual_seed(1)
        out = []
        for _ in range(5):
            opt.zero_grad()
            x.grad = None
            loss = F.cross_entropy(forward(x), y)
            loss.backward()
            opt.step()
            out += [loss, x.grad]
        return out + list(model.parameters()) + list(model.buffers()), forward

    (want, _), (got, forward) = run(False), run(True)
    assert all(tw.equal(a, b) for a, b in zip(want, got))
    assert forward.traces == 2


def test_tiny_step_accumulates_gradients() -> None:
    def make() -> tuple:
        a = tw.tensor(np.linspace(-1, 1, 16), dtype=tw.float32, requires_grad=True)
        b = tw.tensor(np.linspace(2, 3, 16), dtype=tw.float32, requires_grad=True)
        return a, b

    def step(a, b):
        y = ((a * b) + a).sum()
        y.backward()
        return y

    eager, compiled = make(), make()
    fn = tw.compile(step)
    for _ in range(4):
        assert tw.equal(step(*eager), fn(*compiled))
    for e, c in zip(eager, compiled):
        assert tw.equal(e.grad, c.grad)
    assert fn.traces == 3  # gradients appear, then two traces that agree


def test_decorator_with_options_and_errors() -> None:
    @tw.compile(fullgraph=True, mode="reduce-overhead")
    def double(x):
        return x * 2

    x = tw.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tw.equal(double(x), x * 2) and tw.equal(double(x), x * 2)
    with pytest.raises(ValueError, match="unknown mode"):
        tw.compile(double, mode="fastest")
    with pytest.raises(TypeError, match="function or module"):
        tw.compile(3)


def test_values_the_core_checks_are_checked_again_on_replay() -> None:
    """cross_entropy reads its targets' range back to check it: a replay holds while every
    target is a class (whatever the batch's least and greatest), and stops where the eager
    check would raise, which then raises as eagerly."""
    x, y = batch("numpy")

    def run(compiled: bool, targets: list) -> tuple:
        model = mlp("numpy")
        opt = tw.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss

        fn = tw.compile(step) if compiled else step
        return [fn(x, t) for t in targets] + list(model.parameters()), fn

    # another range every step (0..1, 0..2, 1..3, ...): one graph serves them all
    changing = [y, y, y] + [tw.tensor(np.arange(8) % k + k // 4) for k in (2, 3, 4, 2, 3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        got, fn = run(True, changing)
    want, _ = run(False, changing)
    assert all(tw.equal(a, b) for a, b in zip(want, got)) and fn.traces == 3
    # a target out of range: the replay stops at the check, the trace raises as eagerly
    with pytest.raises(IndexError, match="target 5 is out of bounds"):
        run(True, [y, y, y, tw.tensor(np.arange(8) % 6)])
    # ignored targets take the check's other path, which compares the values read exactly
    ignored = tw.tensor(np.where(np.arange(8) % 3 == 0, -100, np.arange(8) % 5))
    steady = [y, y, y, ignored, ignored, ignored, ignored, y]
    (want, _), (got, fn) = run(False, steady), run(True, steady)
    assert all(tw.equal(a, b) for a, b in zip(want, got))


@pytest.mark.parametrize("device", DEVICES)
def test_embedding_indices_that_change_replay(device: str) -> None:
    """A language model's step: embedding rows read by other token ids every batch."""
    rng = np.random.default_rng(3)
    tokens = [tw.tensor(rng.integers(0, 20, (4, 6)), device=device) for _ in range(6)]
    tokens[4] = tw.tensor(np.full((4, 6), 19), device=device)  # one id only

    def run(compiled: bool) -> tuple:
        tw.manual_seed(0)
        with tw.device(device):
            emb, head = nn.Embedding(20, 8), nn.Linear(8, 20)
        opt = tw.optim.SGD([*emb.parameters(), *head.parameters()], lr=0.5)

        def step(ids):
            opt.zero_grad()
            loss = F.cross_entropy(head(emb(ids)).reshape(-1, 20), ids.reshape(-1))
            loss.backward()
            opt.step()
            return loss

        fn = tw.compile(step) if compiled else step
        return [fn(t) for t in tokens] + list(emb.parameters()) + list(head.parameters()), fn

    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        (want, _), (got, fn) = run(False), run(True)
    assert all(tw.equal(a, b) for a, b in zip(want, got)) and fn.traces == 3
    with pytest.raises(IndexError, match="index 20 is out of bounds"):
        emb = nn.Embedding(20, 8).to(device)
        step = tw.compile(lambda ids: emb(ids).sum().backward())
        for ids in tokens[:4] + [tw.tensor(np.full((4, 6), 20), device=device)]:
            step(ids)


def test_host_randomness_is_not_baked_in() -> None:
    """randperm draws on the host and copies in: two traces differ, so it stays eager."""
    x = tw.arange(8.0)

    def shuffled(x):
        return x[tw.randperm(8)] * 2

    fn = tw.compile(shuffled)
    tw.manual_seed(3)
    with pytest.warns(CompileWarning, match="two traces gave different graphs"):
        got = [fn(x) for _ in range(4)]
    tw.manual_seed(3)
    want = [shuffled(x) for _ in range(4)]
    assert all(tw.equal(a, b) for a, b in zip(want, got))


def test_arguments_sharing_an_array_are_a_guard() -> None:
    fn = tw.compile(lambda a, b: a * 2 + b)
    x, y = tw.tensor([1.0, 2.0]), tw.tensor([10.0, 20.0])
    for _ in range(3):
        assert tw.equal(fn(x, x), x * 2 + x)
    for _ in range(3):
        assert tw.equal(fn(x, y), x * 2 + y)
    assert fn.traces == 4


class Composites(nn.Module):
    """Convolution, batch norm, pooling, embedding, layer norm, attention and an LSTM:
    fused backend calls whose saved state passes from forward to backward."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.emb = nn.Embedding(10, 8)
        self.ln = nn.LayerNorm(8)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.lstm = nn.LSTM(8, 8, num_layers=2, dropout=0.3, batch_first=True)
        self.fc = nn.Linear(4 * 16 + 8, 3)

    def forward(self, img, tok):
        h = F.max_pool2d(F.relu(self.bn(self.conv(img))), 2).flatten(1)
        e = self.ln(self.emb(tok))
        a, _ = self.attn(e, e, e)
        r, _ = self.lstm(a)
        return self.fc(tw.cat([h, r[:, -1]], 1))


@pytest.mark.parametrize("device", DEVICES)
def test_composite_layers_replay_bit_identically(device: str) -> None:
    def run(compiled: bool) -> tuple:
        tw.manual_seed(0)
        rng = np.random.default_rng(0)
        with tw.device(device):
            model = Composites()
            img = tw.tensor(rng.standard_normal((6, 1, 8, 8)).astype(np.float32))
            tok = tw.tensor(rng.integers(0, 10, (6, 5)))
            y = tw.tensor(np.arange(6) % 3)
        opt = tw.optim.AdamW(model.parameters(), lr=1e-2)

        def step(img, tok, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(img, tok), y)
            loss.backward()
            opt.step()
            return loss

        fn = tw.compile(step) if compiled else step
        tw.manual_seed(1)
        losses = [fn(img, tok, y) for _ in range(5)]
        return losses + list(model.parameters()) + list(model.buffers()), fn

    (want, _), (got, fn) = run(False), run(True)
    assert all(tw.equal(a, b) for a, b in zip(want, got))
    assert fn.traces == 3


class Trainer:
    """A training step as a compiled method: the model and optimizer are attributes."""

    def __init__(self, device: str) -> None:
        self.model = mlp(device)
        self.opt = tw.optim.SGD(self.model.parameters(), lr=0.1, momentum=0.9)

    def train_step(self, x, y):
        self.opt.zero_grad()
        loss = F.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()
        return loss

    compiled_step = tw.compile(train_step)


def test_compiled_method_follows_its_instance() -> None:
    x, y = batch("numpy")
    eager, compiled = Trainer("numpy"), Trainer("numpy")
    for _ in range(5):
        assert tw.equal(eager.train_step(x, y), compiled.compiled_step(x, y))
    for a, b in zip(eager.model.parameters(), compiled.model.parameters()):
        assert tw.equal(a, b)
    assert Trainer.compiled_step.traces == 3


def test_a_module_the_roots_miss_is_not_baked_in() -> None:
    """Model and optimizer reached only through an attribute of an object the function
    names: the step rebinds parameters the graph cannot locate, so it runs eagerly."""
    x, y = batch("numpy")

    def run(compiled: bool) -> list:
        model = mlp("numpy")
        parts = types.SimpleNamespace(model=model, opt=tw.optim.SGD(model.parameters(), lr=0.1))

        def step(x, y):
            parts.opt.zero_grad()
            F.cross_entropy(parts.model(x), y).backward()
            parts.opt.step()

        fn = tw.compile(step) if compiled else step
        for _ in range(4):
            fn(x, y)
        return list(model.parameters())

    with pytest.warns(CompileWarning, match="does not follow"):
        got = run(True)
    for a, b in zip(run(False), got):
        assert tw.equal(a, b)


def test_double_backward_through_a_replayed_forward_gives_the_eager_gradient() -> None:
    """``create_graph=True`` through a replay runs the forward again eagerly (it raised
    "once_differentiable" before; torch.compile's raises too, the eager module does not)."""
    model = mlp("numpy")
    compiled = tw.compile(model)
    x, _ = batch("numpy")
    x.requires_grad_()
    for _ in range(3):
        compiled(x).sum().backward()
    assert compiled.traces == 3 and len(compiled.graph_source()) == 1  # now replaying
    grads = []
    for f in (compiled, model):
        model.zero_grad(set_to_none=True)
        (gx,) = tw.autograd.grad(f(x).square().sum(), [x], create_graph=True)
        gx.sum().backward()
        grads.append([p.grad for p in model.parameters()])
    for a, b in zip(*grads):
        assert tw.equal(a, b)
