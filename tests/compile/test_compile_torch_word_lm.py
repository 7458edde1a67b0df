"""tw.compile on torch:cpu of pytorch/examples' word-level language models (the port in
tests/ports/programs/word_lm.py, import-rewritten): whole training steps — forward,
NLLLoss, backward, ``clip_grad_norm_`` and the example's SGD update — replay one graph and
give the eager step's losses and weights, in float64, at tiny sizes."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver.compiler import CompileWarning

sys.path.insert(0, str(Path(__file__).parents[1] / "ports"))
from port_harness import load_program  # noqa: E402

NTOKENS, EMSIZE, NHID, LAYERS, BPTT, BATCH, LR, CLIP = 17, 6, 6, 1, 5, 3, 2.0, 0.25
STEPS = 10  # the traces (3), the compiling replay, six trials against the replay


def make_step(port: Any, model: Any) -> Callable:
    """The body of the example's ``train()`` for one batch."""
    criterion = port.nn.NLLLoss()
    recurrent = getattr(model, "model_type", None) != "Transformer"

    def step(data: Any, targets: Any, hidden: Any) -> tuple:
        model.zero_grad()
        if recurrent:
            output, hidden = model(data, port.repackage_hidden(hidden))
        else:
            output = model(data).view(-1, NTOKENS)
        loss = criterion(output, targets)
        loss.backward()
        port.sgd_step(model, LR, CLIP)
        return loss, hidden

    return step


def train(name: str, compiled: bool) -> tuple[list[float], list[np.ndarray], Any]:
    port = load_program("word_lm", "tw")
    tw.manual_seed(0)
    with tw.device("torch:cpu"):
        if name == "lstm":
            model = port.RNNModel("LSTM", NTOKENS, EMSIZE, NHID, LAYERS, dropout=0.0).double()
            hidden = model.init_hidden(BATCH)
        else:
            model = port.TransformerModel(NTOKENS, EMSIZE, 2, NHID, LAYERS, dropout=0.0).double()
            hidden = None
        stream = np.random.default_rng(0).integers(0, NTOKENS, (BPTT + 1, BATCH))
        data, targets = tw.tensor(stream[:-1]), tw.tensor(stream[1:].reshape(-1))
    step = make_step(port, model)
    if compiled:
        step = tw.compile(step)
    losses = []
    for _ in range(STEPS):
        loss, hidden = step(data, targets, hidden)
        losses.append(loss.item())
    return losses, [np.asarray(p.detach()) for p in model.parameters()], step


@pytest.mark.parametrize("name", ["lstm", "transformer"])
def test_compiled_word_lm_step_equals_the_eager_one(name: str) -> None:
    want, want_params, _ = train(name, compiled=False)
    with warnings.catch_warnings():
        # no silent fall back to eager: clip_grad_norm_'s norm stays in the graph
        warnings.simplefilter("error", CompileWarning)
        got, params, step = train(name, compiled=True)
    assert step.traces == 3 and len(step.graph_source()) == 1
    np.testing.assert_allclose(got, want, rtol=1e-9)
    for a, b in zip(params, want_params):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    graph = next(iter(step._cache.values()))
    # Offered to the hook: the core's checks of the indices and targets run before it
    # (a recurrent kernel without dropout draws nothing, so they are hoisted past it).
    assert graph.record is not None
    compute = graph.run.__globals__["compute"]
    if name == "transformer":  # handed to torch.compile whole, which ran
        assert compute is not graph.record.fn and compute.times[compute.compiled]
    else:  # declined: the core replays it
        assert compute is graph.record.fn
