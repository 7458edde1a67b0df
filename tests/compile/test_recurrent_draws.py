"""Recurrent kernels count as random draws only when they draw: dropout between layers, in
training. Without it, a graph's LSTM call is an ordinary call (no ``_draw`` wrapper behind
a guard, foldable on constants) and the step is offered to the backend's compile_graph."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import nn
from tensorweaver.compiler.draws import is_random

#: fused_rnn's trailing static arguments: mode, num_layers, bidirectional, has_bias,
#: dropout, training (the IR's rnn composite).
CASES = [
    (("LSTM", 2, False, True, 0.5, True), True),
    (("LSTM", 2, False, True, 0.0, True), False),  # no dropout
    (("LSTM", 2, False, True, 0.5, False), False),  # evaluation
    (("GRU", 1, True, True, 0.5, True), False),  # one layer: nothing between layers
]


@pytest.mark.parametrize(("static", "draws"), CASES)
@pytest.mark.parametrize("name", ["fused_rnn", "fused_rnn_packed"])
def test_a_recurrent_kernel_draws_only_with_dropout_between_layers(
    name: str, static: tuple, draws: bool
) -> None:
    arrays = ("x", "h0", "c0", "w_ih", "w_hh")
    extra = ((3, 2),) if name == "fused_rnn_packed" else ()  # batch_sizes
    assert is_random(name, (*arrays, *extra, *static)) is draws


def test_other_primitives_draw_by_name() -> None:
    assert is_random("dropout", ("x", 0.5))
    assert is_random("random_normal", ((2,),))
    assert is_random("fused_rnn")  # no arguments to tell: counted as drawing
    assert not is_random("fused_rnn_backward", ("saved", "g", (True,)))
    assert not is_random("mul", ("x", "y"))


def _lstm_step(dropout: float, guard: bool) -> tuple[Any, Any]:
    tw.manual_seed(0)
    with tw.device("torch:cpu"):
        lstm = nn.LSTM(4, 5, num_layers=2, dropout=dropout).double()
        x = tw.tensor(np.random.default_rng(0).standard_normal((3, 2, 4)))

    def step() -> tw.Tensor:
        lstm.zero_grad()
        out, _ = lstm(x)
        loss = out.sum()
        if guard and loss.item() > 1e9:  # a read: the graph holds while its value repeats
            loss = loss * 2
        loss.backward()
        return loss

    return step, lstm


@pytest.mark.parametrize(("dropout", "drawn"), [(0.0, False), (0.5, True)])
def test_a_guarded_lstm_step_wraps_the_kernel_only_when_it_draws(
    dropout: float, drawn: bool
) -> None:
    step, _ = _lstm_step(dropout, guard=True)
    fn = tw.compile(step, backend="tensorweaver")
    for _ in range(5):
        fn()
    (source,) = fn.graph_source()
    assert ("_draw(" in source) is drawn


def test_an_lstm_step_without_dropout_is_offered_to_the_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    step, lstm = _lstm_step(0.0, guard=False)
    backend = tw.zeros(1, device="torch:cpu").backend
    offered = []
    monkeypatch.setattr(type(backend), "compile_graph", lambda self, g: offered.append(g))
    fn = tw.compile(step)
    eager_step, eager = _lstm_step(0.0, guard=False)
    for _ in range(5):
        got, want = fn(), eager_step()
        assert float(got) == float(want)
    assert len(offered) == 1
    assert "fused_rnn" in [c.primitive for c in offered[0].calls]
    for p, q in zip(lstm.parameters(), eager.parameters()):
        np.testing.assert_array_equal(np.asarray(p.grad), np.asarray(q.grad))
