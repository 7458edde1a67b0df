"""What a replayed step returns looks to autograd as the eager step's result: requires_grad,
is_leaf, grad_fn (its name and links), .grad, and the error of a backward through a graph
the step's own backward freed; a result whose graph is still whole is not replayed. A
returned or stored tensor is the object eager code leaves there (a location's tensor, one
object when returned twice), and a returned detach() still writes into its base."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning

SECOND_TIME = "Trying to backward through the graph a second time"
CALLS = 6  # three traces, then replays


def lstm_step(device: str) -> tuple[Callable, list, tuple]:
    """The word-LM shape of step (embedding, 2-layer LSTM, decoder, cross-entropy, SGD),
    detaching the hidden state at its start as pytorch/examples does, and returning it."""
    tw.manual_seed(0)
    with tw.device(device):
        emb, lstm, dec = nn.Embedding(11, 4), nn.LSTM(4, 5, 2), nn.Linear(5, 11)
        emb, lstm, dec = emb.double(), lstm.double(), dec.double()
    params = [*emb.parameters(), *lstm.parameters(), *dec.parameters()]
    opt = tw.optim.SGD(params, lr=0.1)
    rng = np.random.default_rng(0)
    x = tw.tensor(rng.integers(0, 11, (6, 3)), device=device)
    y = tw.tensor(rng.integers(0, 11, 18), device=device)

    def step(hidden: tuple) -> tuple:
        hidden = tuple(h.detach() for h in hidden)
        opt.zero_grad()
        out, hidden = lstm(emb(x), hidden)
        loss = nn.functional.cross_entropy(dec(out).reshape(-1, 11), y)
        loss.backward()
        opt.step()
        return loss, hidden

    zeros = tw.zeros(2, 3, 5, dtype=tw.float64, device=device)
    return step, params, (zeros, zeros.clone())


def run(step: Callable, hidden: tuple) -> tuple:
    for _ in range(CALLS):
        loss, hidden = step(hidden)
    return loss, hidden


def face(t: Any) -> tuple:
    """What autograd shows of ``t``: requires_grad, is_leaf, grad_fn's class name and
    the names of the functions it links to."""
    fn = t.grad_fn
    links = () if fn is None else tuple(type(f).__name__ for f, _ in fn.next_functions)
    return t.requires_grad, t.is_leaf, type(fn).__name__, links


def backward_error(t: Any) -> str:
    with pytest.raises(RuntimeError) as caught:
        t.backward()
    return str(caught.value)


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_a_returned_loss_and_hidden_state_look_as_eagerly(device: str) -> None:
    eager_step, eager_params, hidden = lstm_step(device)
    want_loss, want_hidden = run(eager_step, hidden)
    step, params, hidden = lstm_step(device)
    compiled = tw.compile(step, backend="tensorweaver")  # the core's replay: equal bits
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        loss, got_hidden = run(compiled, hidden)
    # A returned hidden state that requires grad, fed back in, is the signature the graph
    # was traced for: no trace beyond the first three.
    assert compiled.traces == 3
    assert tw.equal(loss, want_loss) and all(map(tw.equal, params, eager_params))
    for got, want in [(loss, want_loss), *zip(got_hidden, want_hidden)]:
        assert face(got) == face(want)
        assert got.requires_grad and not got.is_leaf  # (face compares them to eager)
        assert repr(got) == repr(want)  # ..., grad_fn=<NllLossBackward0>)
        # The step's backward freed the graph: a second one raises, as eagerly, and
        # leaves the parameters' gradients alone.
        grads = [p.grad.clone() for p in params]
        assert SECOND_TIME in backward_error(got.sum()) == backward_error(want.sum())
        assert all(tw.equal(p.grad, g) for p, g in zip(params, grads))


def test_each_replay_returns_its_own_graph_nodes() -> None:
    step, _, hidden = lstm_step("numpy")
    compiled = tw.compile(step)
    first, hidden = run(compiled, hidden)
    second, _ = compiled(hidden)
    assert first.grad_fn is not second.grad_fn
    assert type(first.grad_fn) is type(second.grad_fn)


def test_a_result_whose_graph_is_still_whole_runs_eagerly() -> None:
    """After ``backward(retain_graph=True)`` a later backward through the result gives
    gradients eagerly; a replay could not, so the step runs eagerly, with a warning."""

    def make() -> tuple[Callable, Any]:
        w = tw.tensor([1.0, -2.0, 0.5], dtype=tw.float64, requires_grad=True)

        def step(x: Any) -> Any:
            loss = (w * x).square().sum()
            loss.backward(retain_graph=True)
            return loss

        return step, w

    x = tw.tensor([0.5, 1.5, -1.0], dtype=tw.float64)
    eager, w_eager = make()
    step, w = make()
    compiled = tw.compile(step)
    with pytest.warns(CompileWarning, match="still whole"):
        losses = [compiled(x) for _ in range(CALLS)]
    want = [eager(x) for _ in range(CALLS)]
    losses[-1].backward()
    want[-1].backward()
    assert tw.equal(w.grad, w_eager.grad)
    assert face(losses[-1]) == face(want[-1])


def test_a_returned_leaf_is_the_tensor_itself_or_a_new_leaf() -> None:
    w = tw.tensor([1.0, 2.0], dtype=tw.float64, requires_grad=True)

    def step(x: Any) -> tuple:
        loss = (w * x).sum()
        loss.backward()
        with tw.no_grad():
            w.sub_(0.1 * w.grad)
        w.grad = None
        return w, tw.zeros(2, requires_grad=True), x

    x = tw.tensor([3.0, 4.0], dtype=tw.float64)
    compiled = tw.compile(step)
    for _ in range(CALLS):
        got_w, fresh, got_x = compiled(x)
    assert compiled.traces == 2  # (no gradient is left after the step: two traces agree)
    assert got_w is w and fresh.requires_grad and fresh.is_leaf and fresh.grad_fn is None
    assert not got_x.requires_grad
    np.testing.assert_allclose(np.asarray(w.detach()), [1.0 - 0.3 * CALLS, 2.0 - 0.4 * CALLS])


def test_a_step_that_takes_its_gradients_with_autograd_grad_replays() -> None:
    """Its loss requires grad but its graph is freed: no forward to differentiate later
    (tracing one raised the second-backward error)."""

    def make() -> tuple[Callable, Any]:
        w = tw.tensor([1.0, 2.0, -1.0], dtype=tw.float64, requires_grad=True)

        def step(x: Any) -> Any:
            loss = (w * x).square().sum()
            (g,) = tw.autograd.grad(loss, [w])
            with tw.no_grad():
                w.sub_(0.01 * g)
            return loss

        return step, w

    x = tw.tensor([3.0, 4.0, 0.5], dtype=tw.float64)
    eager, w_eager = make()
    step, w = make()
    compiled = tw.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        for _ in range(CALLS):
            got, want = compiled(x), eager(x)
            assert tw.equal(got, want) and tw.equal(w, w_eager)
    assert compiled.traces == 2
    assert face(got) == face(want)
    assert SECOND_TIME in backward_error(got) == backward_error(want)


DEVICES = ["numpy", "torch:cpu"]


def eager_and_compiled(make: Callable, *inputs: Any) -> tuple:
    """``make()``'s step run CALLS times compiled (the core's replay, so bits equal) and
    eagerly, each on its own state: (eager results, eager state, compiled results,
    compiled state, the compiled function). The compiled step runs first, so it is the
    first to make the constants it needs (the core caches some)."""
    step, state = make()
    compiled = tw.compile(step, backend="tensorweaver")
    for _ in range(CALLS):
        got = compiled(*inputs)
    compiled_state = state
    step, state = make()
    for _ in range(CALLS):
        want = step(*inputs)
    return want, state, got, compiled_state, compiled


@pytest.mark.parametrize("device", DEVICES)
def test_returned_tensors_keep_their_grad(device: str) -> None:
    """A new leaf (an input made to require grad, as for a saliency map) and a
    ``retain_grad()`` intermediate come back with the ``.grad`` the step's backward gave."""

    def make() -> tuple[Callable, Any]:
        w = tw.tensor([1.0, -2.0], dtype=tw.float64, requires_grad=True, device=device)

        def step(x: Any) -> tuple:
            w.grad = None
            xl = x.clone().requires_grad_()
            out = w * xl
            out.retain_grad()
            loss = out.square().sum()
            loss.backward()
            return loss, xl, out

        return step, w

    x = tw.tensor([3.0, 4.0], dtype=tw.float64, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        want, _, got, _, compiled = eager_and_compiled(make, x)
    assert compiled.traces == 3
    for g, e in zip(got, want):
        assert face(g) == face(e) and g.retains_grad == e.retains_grad
    for g, e in zip(got[1:], want[1:]):
        assert g.grad is not None and tw.equal(g.grad, e.grad)
    wt = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    xt = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    out = wt * xt
    out.retain_grad()
    out.square().sum().backward()
    np.testing.assert_array_equal(np.asarray(got[1].grad), xt.grad.numpy())
    np.testing.assert_array_equal(np.asarray(got[2].grad), out.grad.numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_a_returned_tensor_that_a_location_holds_is_that_tensor(device: str) -> None:
    """A returned gradient, optimizer state or a new leaf the step also stored in its
    state dict is the object now at that place: a later change there shows in it."""

    def make() -> tuple[Callable, Any]:
        w = tw.tensor([1.0, 2.0], dtype=tw.float64, requires_grad=True, device=device)
        opt = tw.optim.Adam([w], lr=0.1)

        def step(x: Any, state: dict) -> tuple:
            opt.zero_grad(set_to_none=False)
            h = w * x + state["h"]
            loss = h.sum()
            loss.backward()
            opt.step()
            state["h"] = h.detach().requires_grad_()
            return loss, state["h"], w.grad, opt.state[w]["exp_avg"]

        return step, (w, opt)

    x = tw.tensor([3.0, 4.0], dtype=tw.float64, device=device)
    results = []
    for compiled in (False, True):
        st = {"h": tw.zeros(2, dtype=tw.float64, device=device, requires_grad=True)}
        step, (w, opt) = make()
        f = tw.compile(step, backend="tensorweaver") if compiled else step
        for _ in range(CALLS):
            loss, h, g, m = f(x, st)
        assert h is st["h"] and g is w.grad and m is opt.state[w]["exp_avg"]
        (h * 2).sum().backward()
        opt.zero_grad(set_to_none=False)
        results.append((loss, st["h"].grad, g, m, w.detach()))
        assert not compiled or f.traces == 3
    for got, want in zip(results[1], results[0]):
        assert tw.equal(got, want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["detach", "data", "detached_twice"])
def test_a_returned_detach_of_a_parameter_still_writes_into_it(device: str, kind: str) -> None:
    def make() -> tuple[Callable, Any]:
        w = tw.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=tw.float64, requires_grad=True)
        w = w.to(device).detach().requires_grad_()
        opt = tw.optim.SGD([w], lr=0.01)

        def step(x: Any) -> tuple:
            v = w.detach() if kind != "data" else w.data  # before the update, too
            opt.zero_grad()
            (w * x).square().sum().backward()
            opt.step()
            if kind == "detached_twice":
                return v, w.detach(), v
            return v, w.detach() if kind == "detach" else w.data

        return step, w

    x = tw.tensor([3.0, 4.0], dtype=tw.float64, device=device)
    want, w_eager, got, w, compiled = eager_and_compiled(make, x)
    assert compiled.traces == 3
    assert all(map(tw.equal, got, want)) and tw.equal(w, w_eager)
    assert (got[0] is got[2]) == (want[0] is want[2]) if kind == "detached_twice" else True
    before = w.detach().clone()
    with tw.no_grad():
        got[1].mul_(2.0)
        want[1].mul_(2.0)
    assert tw.equal(w, w_eager) and tw.equal(w, 2.0 * before)
    with tw.no_grad():
        got[0].zero_()  # the alias taken before the step's update: it overwrites w, too
        want[0].zero_()
    assert tw.equal(w, w_eager) and not w.detach().any()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kind", ["row_of_parameter", "row_of_result"])
def test_a_returned_view_of_a_reachable_tensor_runs_eagerly(device: str, kind: str) -> None:
    """A write through a returned view reaches its base (a parameter, another result),
    which a replay does not rebuild: the step runs eagerly, with a warning."""

    def make() -> tuple[Callable, Any]:
        w = tw.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=tw.float64, device=device)
        w.requires_grad_()
        opt = tw.optim.SGD([w], lr=0.01)

        def step(x: Any) -> tuple:
            opt.zero_grad()
            out = w * x
            loss = out.square().sum()
            loss.backward()
            opt.step()
            if kind == "row_of_result":
                d = out.detach()
                return loss, d, d[0]
            with tw.no_grad():
                return loss, w, w[0]

        return step, w

    x = tw.tensor([3.0, 4.0], dtype=tw.float64, device=device)
    with pytest.warns(CompileWarning, match="view"):
        want, w_eager, got, w, _ = eager_and_compiled(make, x)
    assert all(map(tw.equal, got, want)) and tw.equal(w, w_eager)
    with tw.no_grad():
        got[2].zero_()
        want[2].zero_()
    assert tw.equal(got[1], want[1]) and tw.equal(w, w_eager)
    assert not got[1][0].any()


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_grad_with_retain_graph_then_an_update_runs_eagerly(device: str) -> None:
    """The graph is whole after the step, but a backward through it raises (the parameter
    changed in place): the trace raised; now the step runs eagerly, as it is."""

    def make() -> tuple[Callable, Any]:
        w = tw.tensor([1.0, 2.0, -1.0], dtype=tw.float64, device=device, requires_grad=True)

        def step(x: Any) -> Any:
            loss = (w * w * x).square().sum()  # w * w saves w (w * x alone would not)
            (g,) = tw.autograd.grad(loss, [w], retain_graph=True)
            with tw.no_grad():
                w.sub_(0.01 * g)
            return loss

        return step, w

    x = tw.tensor([3.0, 4.0, 0.5], dtype=tw.float64, device=device)
    with pytest.warns(CompileWarning, match="modified by an in-place operation"):
        want, w_eager, got, w, _ = eager_and_compiled(make, x)
    assert tw.equal(got, want) and tw.equal(w, w_eager)
    assert face(got) == face(want)
    assert "in-place" in backward_error(got) == backward_error(want)


@pytest.mark.parametrize("device", DEVICES)
# (factors no other test uses: the first trace makes each, the second finds it cached)
@pytest.mark.parametrize("scale", [lambda t: t / 4.125, lambda t: t * 3.0625, lambda t: 2.8125 * t])
def test_a_scaled_result_of_a_freed_graph_replays(device: str, scale: Callable) -> None:
    """``return loss / 4``: the division's node keeps the cached scalar operand alive, which
    is a constant, not a tensor to read on each replay (two traces differed)."""

    def make() -> tuple[Callable, Any]:
        w = tw.tensor([1.0, 1.0], dtype=tw.float64, device=device, requires_grad=True)

        def step(x: Any) -> Any:
            loss = (w * x).tanh().sum()
            loss.backward()
            with tw.no_grad():
                w.sub_(0.01 * w.grad)
            w.grad = None
            return scale(loss)

        return step, w

    x = tw.tensor([0.5, 1.0], dtype=tw.float64, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        want, w_eager, got, w, compiled = eager_and_compiled(make, x)
    assert compiled.traces == 2
    assert tw.equal(got, want) and tw.equal(w, w_eager)
    assert face(got) == face(want)
    assert SECOND_TIME in backward_error(got) == backward_error(want)


def test_a_tensor_returned_twice_is_one_object_and_leaves_show_as_eagerly() -> None:
    w = tw.tensor([1.0, -2.0], dtype=tw.float64, requires_grad=True)

    def step(x: Any) -> tuple:
        w.grad = None
        loss = (w * x).square().sum()
        loss.backward()
        return loss, loss, loss * w

    x = tw.tensor([3.0, 4.0], dtype=tw.float64)
    want = [step(x) for _ in range(CALLS)][-1]
    compiled = tw.compile(step)
    got = [compiled(x) for _ in range(CALLS)][-1]
    assert compiled.traces == 2
    assert got[0] is got[1] and want[0] is want[1]
    assert (
        face(got[2])
        == face(want[2])
        == (True, False, "MulBackward0", ("SumBackward0", "AccumulateGrad"))
    )
    assert got[2].grad_fn.next_functions[1][0].variable is w


@pytest.mark.parametrize("device", DEVICES)
def test_a_stored_tensor_is_one_object_and_a_stored_detach_writes_into_its_base(
    device: str,
) -> None:
    def make() -> tuple[Callable, Any]:
        w = tw.tensor([1.0, 2.0], dtype=tw.float64, device=device, requires_grad=True)

        def step(x: Any, state: dict) -> Any:
            w.grad = None
            h = w * x + state["h"]
            h.sum().backward()
            with tw.no_grad():
                w.sub_(0.1 * w.grad)
            state["a"] = state["b"] = h.detach().requires_grad_()
            state["h"] = w.detach()
            return h.sum().detach()

        return step, w

    x = tw.tensor([3.0, 4.0], dtype=tw.float64, device=device)
    results = []
    for compiled in (True, False):
        step, w = make()
        f = tw.compile(step, backend="tensorweaver") if compiled else step
        state = {"h": tw.zeros(2, dtype=tw.float64, device=device), "a": None, "b": None}
        with warnings.catch_warnings():
            warnings.simplefilter("error", CompileWarning)
            losses = [f(x, state) for _ in range(CALLS)]
        assert state["a"] is state["b"] and state["a"].requires_grad
        with tw.no_grad():
            state["h"].mul_(0.5)  # writes into w, as eagerly
        results.append((*losses, state["a"], w))
    assert all(map(tw.equal, *results))
