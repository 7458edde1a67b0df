"""Review of tw.compile's replay of module attribute writes (commit 989ea28): each case runs
the same calls eagerly in PyTorch 2.13, eagerly in TensorWeaver and under ``tw.compile``,
in float64, and compares every output, rebound attribute and gradient."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.utils.prune as tw_prune
import torch
import torch.nn.utils.prune as torch_prune
from tensorweaver.compiler import CompileWarning

RNG = np.random.default_rng(11)
W = RNG.standard_normal((3, 4))
B = RNG.standard_normal(3)
XS = RNG.standard_normal((24, 2, 4))


def _linear(m: Any) -> Any:
    lin = m.nn.Linear(4, 3, dtype=m.float64)
    with m.no_grad():
        lin.weight.copy_(m.tensor(W))
        lin.bias.copy_(m.tensor(B))
    return lin


def _pruned(m: Any) -> Any:
    lin = _linear(m)
    (tw_prune if m is tw else torch_prune).l1_unstructured(lin, "weight", 0.5)
    return lin


def _host(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().numpy().copy()
    return np.asarray(value.detach()).copy()


def _same(want: list, got: list) -> None:
    assert len(want) == len(got)
    for k, (a, b) in enumerate(zip(want, got)):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-12, err_msg=str(k))


def _three_ways(run: Callable[[Any, bool], tuple[list, Any]]) -> Any:
    """``run(module, compiled)`` in torch, tw and compiled tw: the same pictures, and no
    CompileWarning (the compiled calls replay); the compiled function."""
    want, _ = run(torch, False)
    eager, _ = run(tw, False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        got, compiled = run(tw, True)
    _same(want, eager)
    _same(eager, got)
    return compiled


def _epochs(m: Any, compiled: bool) -> tuple[list, Any]:
    """Training steps of a pruned Linear, a no_grad validation after every four."""
    lin = _pruned(m)
    forward = tw.compile(lin) if compiled else lin
    opt = m.optim.SGD(lin.parameters(), lr=0.05, momentum=0.9)
    pictures = []
    for i, x in enumerate(XS):
        if i % 6 < 4:
            opt.zero_grad()
            out = forward(m.tensor(x))
            (out**2).sum().backward()
            opt.step()
            pictures += [_host(out), _host(lin.weight), _host(lin.weight_orig.grad)]
        else:
            with m.no_grad():
                out = forward(m.tensor(x))
            pictures += [_host(out), _host(lin.weight)]
    return pictures, forward


def test_a_no_grad_validation_between_epochs_keeps_the_pruned_forward_replayed() -> None:
    # Before: each no_grad call after a training call (and each training call after one)
    # found the pruned weight's requires_grad flipped, traced, and counted towards "each
    # call changes a module" although the calls in between replayed: after three epochs
    # the forward ran eagerly for good, with a warning.
    compiled = _three_ways(_epochs)
    assert compiled.traces <= 2 * 4 + 3  # (each flip may retrace once; not eagerly)


def test_fit_with_compile_and_validation_over_a_pruned_model_keeps_replaying() -> None:
    # tw.fit validates eagerly under no_grad, which rebinds the pruned weight without a
    # graph; before, the compiled batch ran eagerly from the fourth epoch on, with a warning.
    x = RNG.standard_normal((32, 4))
    y = x @ RNG.standard_normal((4, 2))

    def fit(compiled: bool) -> tuple[Any, Any]:
        tw.manual_seed(0)
        model = tw.nn.Sequential(tw.nn.Linear(4, 6), tw.nn.Tanh(), tw.nn.Linear(6, 2)).double()
        tw_prune.l1_unstructured(model[0], "weight", 0.5)
        history = tw.fit(
            model,
            (x, y),
            epochs=5,
            batch_size=8,
            loss="mse",
            optimizer="sgd",
            lr=0.05,
            val=(x[:8], y[:8]),
            progress=False,
            shuffle=False,
            compile=compiled,
        )
        return history, model

    want, eager = fit(False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        got, compiled = fit(True)
    assert got.train_loss == want.train_loss and got.val_loss == want.val_loss
    for a, b in zip(eager.parameters(), compiled.parameters()):
        np.testing.assert_array_equal(np.asarray(b.detach()), np.asarray(a.detach()))


def _stored_row(m: Any, compiled: bool) -> tuple[list, Any]:
    """A forward that keeps a view of its result; the result is then written in place."""

    class Rows(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = _linear(m)

        def forward(self, x: Any) -> Any:
            y = self.lin(x) * 1.0
            self.row = y[0]
            return y

    model = Rows()
    forward = tw.compile(model) if compiled else model
    pictures = []
    for x in XS[:5]:
        model.lin.zero_grad()
        out = forward(m.tensor(x))
        with m.no_grad():
            out.mul_(2.0)  # reaches model.row eagerly
        (out.sum() + (model.row * 3.0).sum()).backward()
        pictures += [_host(out), _host(model.row), _host(model.lin.weight.grad)]
    return pictures, forward


def _viewed_attribute(m: Any, compiled: bool) -> tuple[list, Any]:
    """A forward that keeps a tensor of its graph and returns a view of it; the attribute
    is then written in place."""

    class Kept(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = _linear(m)

        def forward(self, x: Any) -> Any:
            self.hidden = self.lin(x) * 1.0
            return self.hidden[0]

    model = Kept()
    forward = tw.compile(model) if compiled else model
    pictures = []
    for x in XS[:5]:
        out = forward(m.tensor(x))
        with m.no_grad():
            model.hidden.mul_(2.0)  # reaches the returned view eagerly
        pictures += [_host(out), _host(model.hidden)]
    return pictures, forward


@pytest.mark.parametrize("run", [_stored_row, _viewed_attribute], ids=["row", "hidden"])
def test_a_stored_view_and_its_base_stay_one_memory(run: Callable) -> None:
    # Before: the replayed Function returned the view and its base as separate tensors, so
    # a write into one no longer reached the other (the kept row, or the returned row,
    # kept the values before the write). Such a step now runs eagerly, with a warning, as
    # the same step under no_grad already did.
    want, _ = run(torch, False)
    eager, _ = run(tw, False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CompileWarning)
        got, _ = run(tw, True)
    _same(want, eager)
    _same(eager, got)
    assert any("view" in str(w.message) for w in caught)


def test_grad_and_no_grad_calls_in_turn_replay_the_pruned_forward() -> None:
    # Before: every call flipped the pruned weight's requires_grad, so each traced and
    # the third ran the forward eagerly for good, with a warning.
    def alternate(m: Any, compiled: bool) -> tuple[list, Any]:
        lin = _pruned(m)
        forward = tw.compile(lin) if compiled else lin
        pictures = []
        for i, x in enumerate(XS):
            with m.set_grad_enabled(i % 2 == 0):
                out = forward(m.tensor(x))
            if out.requires_grad:
                lin.weight_orig.grad = None
                (out**2).sum().backward()
                pictures.append(_host(lin.weight_orig.grad))
            pictures += [_host(out), _host(lin.weight)]
        return pictures, forward

    compiled = _three_ways(alternate)
    assert compiled.traces <= 8


def test_a_hidden_state_kept_by_the_forward_and_detached_by_the_caller_replays() -> None:
    # Truncated backpropagation through time: the forward keeps its hidden state in an
    # attribute (with a graph), the caller detaches it after each step. Before: the kept
    # state's requires_grad differed after every call from before it, so the forward ran
    # eagerly from the third call on, with a warning.
    def recurrent(m: Any, compiled: bool) -> tuple[list, Any]:
        class Cell(m.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = _linear(m)
                self.mix = m.nn.Linear(3, 3, bias=False, dtype=m.float64)
                with m.no_grad():
                    self.mix.weight.copy_(m.tensor(W[:, :3] * 0.3))
                self.hidden = m.zeros(2, 3, dtype=m.float64)

            def forward(self, x: Any) -> Any:
                self.hidden = (self.lin(x) + self.mix(self.hidden)).tanh()
                return self.hidden.sum(1)

        cell = Cell()
        forward = tw.compile(cell) if compiled else cell
        opt = m.optim.SGD(cell.parameters(), lr=0.05)
        pictures = []
        for x in XS:
            opt.zero_grad()
            out = forward(m.tensor(x))
            (out**2).sum().backward()
            opt.step()
            cell.hidden = cell.hidden.detach()
            pictures += [_host(out), _host(cell.hidden), _host(cell.mix.weight)]
        return pictures, forward

    compiled = _three_ways(recurrent)
    assert compiled.traces <= 5


def test_a_kept_activation_with_a_smaller_last_batch_each_epoch_replays() -> None:
    # A forward that keeps its activation in an attribute; every fifth batch is smaller
    # (an epoch's last). Before: the batches either side of the small one found the kept
    # tensor's shape changed, traced, and after two epochs the forward ran eagerly for
    # good, with a warning.
    def epochs(m: Any, compiled: bool) -> tuple[list, Any]:
        class Keeping(m.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.lin = _linear(m)
                self.kept = m.zeros(2, 3, dtype=m.float64)

            def forward(self, x: Any) -> Any:
                self.kept = self.lin(x).tanh()
                return self.kept * 2.0

        model = Keeping()
        forward = tw.compile(model) if compiled else model
        opt = m.optim.SGD(model.parameters(), lr=0.05)
        pictures = []
        for i, x in enumerate(XS[:20]):
            batch = m.tensor(x[:1] if i % 5 == 4 else x)
            opt.zero_grad()
            out = forward(batch)
            (out**2).sum().backward()
            opt.step()
            pictures += [_host(out), _host(model.kept), _host(model.lin.weight)]
        return pictures, forward

    compiled = _three_ways(epochs)
    assert compiled.traces <= 10


def test_a_second_backward_through_the_replayed_weight_raises_as_eagerly() -> None:
    def twice(m: Any, compiled: bool) -> tuple[list, Any]:
        lin = _pruned(m)
        forward = tw.compile(lin) if compiled else lin
        raised = []
        for x in XS[:5]:
            forward(m.tensor(x)).sum().backward()
            with pytest.raises(RuntimeError, match="second time") as caught:
                (lin.weight * 2.0).sum().backward()
            raised.append(np.array(caught.value is not None, dtype=float))
        return raised, forward

    _three_ways(twice)
