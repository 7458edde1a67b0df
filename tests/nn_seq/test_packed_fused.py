"""RNN, LSTM and GRU on a ``PackedSequence`` through the ``rnn_packed`` composite: torch's
fused packed kernel on torch:cpu, the core's decomposition on NumPy. Both must give what
``torch.nn`` gives on the same float64 weights and inputs: the packed output, the final
states and the gradients of the input, the initial states and every parameter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
import torch.nn.utils.rnn as torch_rnn
from seq_reference import ATOL, RTOL, host
from tensorweaver.nn.modules import rnn as nn
from tensorweaver.nn.utils import rnn as tw_rnn
from tw_backends import entered

INPUT, HIDDEN = 3, 4
UNSORTED = [2, 5, 1, 3]  # distinct lengths: the sorted order does not depend on tie-breaking
SORTED = [5, 3, 3, 1]

Result = dict[str, np.ndarray]


def run(
    layer: Any,
    module: Any,
    utils: Any,
    x: np.ndarray,
    lengths: list[int],
    state: list[np.ndarray],
    cotangents: list[np.ndarray],
) -> Result:
    """Pack ``x`` (time-major), run ``module`` (tw or torch) on it with ``state`` (or none),
    backprop ``cotangents`` into the packed output and final states; the outputs and every
    gradient (input, states, parameters by name) as float64 arrays."""
    leaves = [layer.tensor(a, requires_grad=True) for a in (x, *state)]
    packed = utils.pack_padded_sequence(leaves[0], lengths, enforce_sorted=lengths == SORTED)
    hx = None if not state else tuple(leaves[1:]) if len(state) == 2 else leaves[1]
    out, last = module(packed, hx)
    outputs = [out.data, *(last if isinstance(last, tuple) else (last,))]
    loss = sum((o * layer.tensor(c)).sum() for o, c in zip(outputs, cotangents))
    loss.backward()
    result = {f"output {i}": host(o) for i, o in enumerate(outputs)}
    result.update({f"grad of input {i}": host(leaf.grad) for i, leaf in enumerate(leaves)})
    result.update({f"grad of {n}": host(p.grad) for n, p in module.named_parameters()})
    return result


def compare(name: str, kwargs: dict, lengths: list[int], with_state: bool) -> None:
    """tw on torch:cpu and on NumPy against torch.nn, everything compared."""
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    reference = getattr(torch.nn, name)(INPUT, HIDDEN, **kwargs).double()
    weights = {k: host(v) for k, v in reference.state_dict().items()}
    count = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    states = 2 if name == "LSTM" else 1
    x = rng.standard_normal((max(lengths), len(lengths), INPUT))
    state = [rng.standard_normal((count, len(lengths), HIDDEN)) for _ in range(states)]
    state = state if with_state else []
    width = HIDDEN * (2 if kwargs.get("bidirectional") else 1)
    cotangents = [rng.standard_normal((sum(lengths), width))]
    cotangents += [rng.standard_normal((count, len(lengths), HIDDEN)) for _ in range(states)]
    expected = run(torch, reference, torch_rnn, x, lengths, state, cotangents)
    for spec in ("torch:cpu", "numpy"):
        with entered(spec, float64=True):
            module = getattr(nn, name)(INPUT, HIDDEN, **kwargs)
            module.load_state_dict({k: tw.tensor(v) for k, v in weights.items()})
            actual = run(tw, module, tw_rnn, x, lengths, state, cotangents)
        assert list(actual) == list(expected)
        for key, value in expected.items():
            np.testing.assert_allclose(actual[key], value, RTOL, ATOL, err_msg=f"{spec}: {key}")


@pytest.mark.parametrize("with_state", [False, True])
@pytest.mark.parametrize("lengths", [UNSORTED, SORTED], ids=["unsorted", "sorted"])
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("RNN", {}),
        ("RNN", {"nonlinearity": "relu", "num_layers": 2, "bidirectional": True}),
        ("LSTM", {}),
        ("LSTM", {"num_layers": 2, "bidirectional": True}),
        ("GRU", {"bidirectional": True, "bias": False}),
        ("GRU", {"num_layers": 2, "bidirectional": True}),
    ],
)
def test_packed_layer_matches_torch(
    name: str, kwargs: dict, lengths: list[int], with_state: bool
) -> None:
    compare(name, kwargs, lengths, with_state)


def test_torch_runs_the_fused_packed_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """On torch:cpu a packed batch runs ``fused_rnn_packed`` once forward and its backward
    once, and no padded ``fused_rnn``; NumPy has no such kernel (the decomposition runs)."""
    calls: dict[str, int] = {}

    def counted(kind: type, method: str) -> None:
        original = getattr(kind, method)

        def wrapper(*args: Any) -> Any:
            calls[method] = calls.get(method, 0) + 1
            return original(*args)

        monkeypatch.setattr(kind, method, wrapper)

    with entered("torch:cpu", float64=True, seed=0):
        layer = nn.LSTM(INPUT, HIDDEN, num_layers=2, bidirectional=True)
        x = tw.randn(5, 4, INPUT, requires_grad=True)
        for method in ("fused_rnn", "fused_rnn_packed", "fused_rnn_packed_backward"):
            counted(type(x.backend), method)
        out, (h, c) = layer(tw_rnn.pack_padded_sequence(x, UNSORTED, enforce_sorted=False))
        (out.data.sum() + h.sum() + c.sum()).backward()
    assert calls == {"fused_rnn_packed": 1, "fused_rnn_packed_backward": 1}
    with entered("numpy"):
        assert getattr(tw.zeros(1).backend, "fused_rnn_packed", None) is None
