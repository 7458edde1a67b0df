"""RNN, LSTM, GRU and their cells against torch.nn with identical float64 weights: outputs,
final states, input and initial-state gradients, every parameter gradient."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch
from seq_reference import assert_close, compare_with_torch, load_torch_weights
from tensorweaver.nn.modules import rnn as nn

rng = np.random.default_rng(0)
INPUT, HIDDEN, LENGTH, BATCH = 3, 4, 5, 2

LAYER_CONFIGS = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "num_layers": 2}),
    ("RNN", {"bidirectional": True, "bias": False}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"batch_first": True, "bias": False}),
    ("LSTM", {"proj_size": 2}),
    ("LSTM", {"proj_size": 3, "num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
]


def initial_state(name: str, kwargs: dict, batch: tuple[int, ...]) -> list[np.ndarray]:
    """Random h_0 (and c_0 for LSTM) for a layer built with ``kwargs``."""
    count = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h = rng.standard_normal((count, *batch, kwargs.get("proj_size") or HIDDEN))
    return [h, rng.standard_normal((count, *batch, HIDDEN))] if name == "LSTM" else [h]


def run_layer(module, x, *state):
    if not state:
        return module(x)
    return module(x, tuple(state) if len(state) == 2 else state[0])


@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize(("name", "kwargs"), LAYER_CONFIGS)
def test_layer_matches_torch(backend: str, name: str, kwargs: dict, with_state: bool) -> None:
    layout = (BATCH, LENGTH) if kwargs.get("batch_first") else (LENGTH, BATCH)
    x = rng.standard_normal((*layout, INPUT))
    state = initial_state(name, kwargs, (BATCH,)) if with_state else []
    compare_with_torch(
        getattr(nn, name)(INPUT, HIDDEN, **kwargs),
        getattr(torch.nn, name)(INPUT, HIDDEN, **kwargs),
        [x, *state],
        call=run_layer,
    )


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_unbatched_input(backend: str, name: str) -> None:
    kwargs = {"num_layers": 2, "bidirectional": True, "batch_first": True}
    x = rng.standard_normal((LENGTH, INPUT))  # (L, H_in) whatever batch_first says
    outs = compare_with_torch(
        getattr(nn, name)(INPUT, HIDDEN, **kwargs),
        getattr(torch.nn, name)(INPUT, HIDDEN, **kwargs),
        [x, *initial_state(name, kwargs, ())],
        call=run_layer,
    )
    assert tuple(outs[0].shape) == (LENGTH, 2 * HIDDEN)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_single_step_sequence(backend: str, name: str) -> None:
    compare_with_torch(
        getattr(nn, name)(INPUT, HIDDEN, num_layers=2),
        getattr(torch.nn, name)(INPUT, HIDDEN, num_layers=2),
        [rng.standard_normal((1, BATCH, INPUT))],
    )


def test_dropout_between_layers(backend: str) -> None:
    # p = 1 zeroes the second layer's input exactly, so training mode is deterministic and
    # must match torch; in eval mode dropout is off and the output differs from that.
    tw_lstm, torch_lstm = (
        nn.LSTM(INPUT, HIDDEN, 2, dropout=1.0),
        torch.nn.LSTM(INPUT, HIDDEN, 2, dropout=1.0),
    )
    x = rng.standard_normal((LENGTH, BATCH, INPUT))
    train_out = compare_with_torch(tw_lstm, torch_lstm, [x])[0]
    tw_lstm.eval()
    torch_lstm.eval()
    eval_out = compare_with_torch(tw_lstm, torch_lstm, [x])[0]
    assert not np.allclose(eval_out.detach().numpy(), train_out.detach().numpy())


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("RNNCell", {}),
        ("RNNCell", {"nonlinearity": "relu", "bias": False}),
        ("LSTMCell", {}),
        ("GRUCell", {}),
    ],
)
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_state", [False, True])
def test_cell_matches_torch(
    backend: str, name: str, kwargs: dict, batched: bool, with_state: bool
) -> None:
    batch = (BATCH,) if batched else ()
    states = 2 if name == "LSTMCell" else 1
    state = [rng.standard_normal((*batch, HIDDEN)) for _ in range(states)] if with_state else []
    compare_with_torch(
        getattr(nn, name)(INPUT, HIDDEN, **kwargs),
        getattr(torch.nn, name)(INPUT, HIDDEN, **kwargs),
        [rng.standard_normal((*batch, INPUT)), *state],
        call=run_layer,
    )


def test_cell_unrolled_equals_layer(backend: str) -> None:
    # A GRUCell stepped by hand over the sequence gives the GRU layer's output.
    layer, cell = nn.GRU(INPUT, HIDDEN), nn.GRUCell(INPUT, HIDDEN)
    with tw.no_grad():
        for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(cell, kind).copy_(getattr(layer, kind + "_l0"))
    x = tw.randn(LENGTH, BATCH, INPUT)
    h = tw.randn(BATCH, HIDDEN)
    output, h_n = layer(x, h.unsqueeze(0))
    for t in range(LENGTH):
        h = cell(x[t], h)
        assert_close(output[t], h)
    assert_close(h_n[0], h)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_init_and_parameter_layout(backend: str, name: str) -> None:
    cell = name.endswith("Cell")
    kwargs = {} if cell else {"num_layers": 2, "bidirectional": True}
    module = getattr(nn, name)(INPUT, HIDDEN, **kwargs)
    reference = getattr(torch.nn, name)(INPUT, HIDDEN, **kwargs)
    shapes = {k: tuple(v.shape) for k, v in module.state_dict().items()}
    assert shapes == {k: tuple(v.shape) for k, v in reference.state_dict().items()}
    bound = 1 / math.sqrt(HIDDEN)
    values = np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])
    assert np.all(np.abs(values) <= bound)
    assert values.std() > bound / 4  # spread over the interval, not constant
    here = tw.empty(0).device
    assert all(p.device == here for p in module.parameters())


def test_all_weights_order(backend: str) -> None:
    tw_gru = nn.GRU(INPUT, HIDDEN, num_layers=2, bidirectional=True)
    torch_gru = torch.nn.GRU(INPUT, HIDDEN, num_layers=2, bidirectional=True)
    load_torch_weights(tw_gru, torch_gru)
    for ours, theirs in zip(tw_gru.all_weights, torch_gru.all_weights):
        assert len(ours) == len(theirs) == 4
        for a, e in zip(ours, theirs):
            assert_close(a, e)


def test_state_dict_loads_into_torch(backend: str) -> None:
    tw_lstm = nn.LSTM(INPUT, HIDDEN, num_layers=2, bidirectional=True)
    torch_lstm = torch.nn.LSTM(INPUT, HIDDEN, num_layers=2, bidirectional=True).double()
    torch_lstm.load_state_dict(
        {k: torch.tensor(v.numpy()) for k, v in tw_lstm.state_dict().items()}
    )
    x = rng.standard_normal((LENGTH, BATCH, INPUT))
    assert_close(tw_lstm(tw.tensor(x))[0], torch_lstm(torch.tensor(x))[0])


def test_errors_name_the_layer_and_shapes(backend: str) -> None:
    lstm = nn.LSTM(INPUT, HIDDEN)
    with pytest.raises(RuntimeError, match=r"LSTM.*input_size. Expected 3, got 7"):
        lstm(tw.randn(LENGTH, BATCH, 7))
    with pytest.raises(RuntimeError, match=r"LSTM.*hidden\[0\] size \(1, 2, 4\), got \[2, 2, 4\]"):
        lstm(
            tw.randn(LENGTH, BATCH, INPUT), (tw.randn(2, BATCH, HIDDEN), tw.randn(1, BATCH, HIDDEN))
        )
    # (one tensor as an LSTM's state: PyTorch indexes hx[0], hx[1], as tw since session 33)
    with pytest.raises(IndexError, match="index 1 is out of bounds for dimension 0 with size 1"):
        lstm(tw.randn(LENGTH, BATCH, INPUT), tw.randn(1, BATCH, HIDDEN))
    with pytest.raises(RuntimeError, match="GRU: Expected sequence length to be larger than 0"):
        nn.GRU(INPUT, HIDDEN)(tw.randn(0, BATCH, INPUT))
    with pytest.raises(ValueError, match="RNN: unknown nonlinearity 'sigmoid'"):
        nn.RNN(INPUT, HIDDEN, nonlinearity="sigmoid")
    for name, proj_size in (("LSTM", -1), ("LSTM", HIDDEN), ("GRU", 2), ("RNN", 1)):
        with pytest.raises(ValueError, match="proj_size"):  # torch raises ValueError too
            getattr(torch.nn, name)(INPUT, HIDDEN, proj_size=proj_size)
        with pytest.raises(ValueError, match=f"{name}: proj_size"):
            getattr(nn, name)(INPUT, HIDDEN, proj_size=proj_size)
    with pytest.raises(RuntimeError, match="GRUCell: hidden0 has inconsistent hidden_size: got 3"):
        nn.GRUCell(INPUT, HIDDEN)(tw.randn(INPUT), tw.randn(3))
    with pytest.warns(UserWarning, match="num_layers=1"):
        nn.GRU(INPUT, HIDDEN, dropout=0.5)
