"""tw.compile on torch:cpu hands a float32 LSTM step to torch.compile whole: make_fx traces
torch's LSTM into oneDNN's RNN layers, which the graph calls through the torch plugin's
opaque operators (inductor's own wrapper passes no workspace to the layer's backward), so
that inductor runs them as external kernels and fuses the rest of the step. Steps whose
recurrent kernel torch runs step by step (float64) or that draw (dropout between layers)
stay with the core's replay."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver import nn
from tensorweaver_torch.compile import _Faster, _rnn_layer_operators

aten = torch.ops.aten
#: torch runs float32 LSTMs on oneDNN's layers where its build has oneDNN (the wheels do).
pytestmark = pytest.mark.skipif(
    not torch.backends.mkldnn.is_available(), reason="this torch build has no oneDNN"
)


def _layer_arguments() -> tuple:
    """mkldnn_rnn_layer's arguments for one float32 LSTM layer (L 3, N 2, H 4), training."""
    g = torch.Generator().manual_seed(0)
    x, h, c = (torch.randn(s, generator=g) for s in ((3, 2, 4), (2, 4), (2, 4)))
    w = [torch.randn(s, generator=g) for s in ((16, 4), (16, 4), (16,), (16,))]
    return (x, *w, h, c, False, [], 2, 4, 1, True, False, False, True)


def test_the_opaque_rnn_layer_keeps_its_workspace_with_grad_mode_off() -> None:
    args = _layer_arguments()
    opaque = _rnn_layer_operators()
    forward, backward = (opaque[op] for op in (aten.mkldnn_rnn_layer.default,
                                               aten.mkldnn_rnn_layer_backward.default))  # fmt: skip
    with torch.no_grad():  # as compiled code runs
        out, hy, cy, workspace = forward(*args)
    with torch.enable_grad():
        want = aten.mkldnn_rnn_layer.default(*args)
    for a, b in zip((out, hy, cy), want):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
    x, w0, w1, w2, w3, h, c = args[:7]
    grads = [torch.randn_like(t, generator=torch.Generator().manual_seed(1)) for t in (out, hy, cy)]
    static = (False, 2, 4, 1, True, True, False, [], False)
    with torch.no_grad():
        got = backward(x, w0, w1, w2, w3, h, c, out, hy, cy, *grads, *static, workspace)
    expected = aten.mkldnn_rnn_layer_backward.default(
        x, w0, w1, w2, w3, h, c, *want[:3], *grads, *static, want[3]
    )
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def _lstm_step(dtype: Any, dropout: float = 0.0, layers: int = 1) -> tuple[Any, Any]:
    """An LSTM step with a linear head, a sum loss and a plain SGD update, on torch:cpu."""
    tw.manual_seed(0)
    with tw.device("torch:cpu"):
        lstm = nn.LSTM(4, 5, num_layers=layers, dropout=dropout).to(dtype)
        head = nn.Linear(5, 3).to(dtype)
        x = tw.tensor(np.random.default_rng(0).standard_normal((6, 2, 4)), dtype=dtype)
    params = [*lstm.parameters(), *head.parameters()]

    def step() -> tw.Tensor:
        for p in params:
            p.grad = None
        out, _ = lstm(x)
        loss = head(out).tanh().sum()
        loss.backward()
        with tw.no_grad():
            for p in params:
                p.sub_(0.05 * p.grad)
        return loss

    return step, params


def _compiled_and_eager(steps: int) -> tuple[Any, Any]:
    """The float32 LSTM step through tw.compile, checked against its eager twin on every
    step and in the weights at the end; the compiled step's replay function."""
    step, params = _lstm_step(tw.float32)
    eager_step, eager_params = _lstm_step(tw.float32)
    compiled = tw.compile(step)
    for _ in range(steps):
        np.testing.assert_allclose(float(compiled()), float(eager_step()), rtol=1e-5)
    for p, q in zip(params, eager_params):
        np.testing.assert_allclose(np.asarray(p.detach()), np.asarray(q.detach()), rtol=1e-5,
                                   atol=1e-6)  # fmt: skip
    (graph,) = compiled._cache.values()
    return graph.run.__globals__["compute"]


def test_a_float32_lstm_step_goes_to_torch_compile_with_opaque_rnn_layers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # torch.compile stood in for by the traced graph run as compiled code runs it (grad
    # mode off), so that this costs no inductor compilation (tens of seconds).
    graphs = []

    def compile_stand_in(graph: torch.fx.GraphModule, **options: Any) -> Any:
        graphs.append(graph)
        return torch.no_grad()(graph)

    monkeypatch.setattr(torch, "compile", compile_stand_in)
    compute = _compiled_and_eager(6)  # traces, the compiling replay, two trials
    assert isinstance(compute, _Faster)  # the hook took the graph (it declined before)
    (graph,) = graphs
    targets = {node.target for node in graph.graph.nodes}
    opaque = _rnn_layer_operators()
    assert set(opaque.values()) <= targets and not set(opaque) & targets
    assert compute.times[compute.compiled]  # and ran it


@pytest.mark.skipif(
    not os.environ.get("TW_INDUCTOR_LSTM"),
    reason="inductor compiles for 10-30 s: TW_INDUCTOR_LSTM=1",
)
def test_a_float32_lstm_step_is_compiled_by_inductor_and_equals_the_eager_step() -> None:
    compute = _compiled_and_eager(10)  # traces, the compiling replay, the trials
    traced = compute.compiled
    assert traced.compiled is not traced.fn  # torch.compile's, not the replay's
    assert len(compute.times[traced]) >= _Faster.TRIALS


@pytest.mark.parametrize(
    ("dtype", "dropout", "layers"),
    [(tw.float64, 0.0, 1), (tw.float32, 0.5, 2)],
    ids=["float64: torch's per-step kernels", "dropout between layers: draws"],
)
def test_other_lstm_steps_stay_with_the_replay(
    dtype: Any, dropout: float, layers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    step, _ = _lstm_step(dtype, dropout, layers)
    backend = tw.zeros(1, device="torch:cpu").backend
    hook, answers = type(backend).compile_graph, []
    monkeypatch.setattr(
        type(backend), "compile_graph", lambda self, g: answers.append(hook(self, g))
    )
    compiled = tw.compile(step)
    for _ in range(5):
        compiled()
    assert answers == [None] or (dropout and not answers)  # a drawing graph may not be offered
