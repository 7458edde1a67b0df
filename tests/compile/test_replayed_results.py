"""What a replayed step returns looks to autograd as the eager step's result: requires_grad,
is_leaf, grad_fn (its name and links), and the error of a backward through a graph the
step's own backward freed; a result whose graph is still whole is not replayed."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
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
