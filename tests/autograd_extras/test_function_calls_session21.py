"""How often an autograd.Function's ``backward`` runs, and with what, against PyTorch: one
call per Function call with every output's gradient (zeros, or None under
``set_materialize_grads(False)``, for an output that got none)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _split_function(m):
    """A three-output Function of ``m`` (torch or tw) that logs each backward call: which
    outputs' gradients it got (None, or whether they are all zeros)."""

    class Split3(m.autograd.Function):
        calls: list = []

        @staticmethod
        def forward(ctx, x, materialize):
            ctx.set_materialize_grads(materialize)
            return x * 1, x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb, gc):
            grads = (ga, gb, gc)
            Split3.calls.append(tuple(None if g is None else bool((g == 0).all()) for g in grads))
            total = None
            for k, g in enumerate(grads, 1):
                if g is not None:
                    total = g * k if total is None else total + g * k
            return total, None

    return Split3


def _run(m, materialize: bool, used: tuple) -> tuple:
    fn = _split_function(m)
    x = m.tensor(np.linspace(-1, 1, 4), requires_grad=True)
    outs = fn.apply(x, materialize)
    sum(outs[i].sum() * (i + 1) for i in used).backward()
    return fn.calls, np.asarray(x.grad.tolist())


@pytest.mark.parametrize("used", [(0, 1, 2), (0, 2)], ids=["all", "two"])
@pytest.mark.parametrize("materialize", [True, False])
def test_function_gradients_like_torch(materialize, used):
    # The gradient itself agrees already, whichever way backward is called.
    _, want = _run(torch, materialize, used)
    _, got = _run(tw, materialize, used)
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("materialize", [True, False])
def test_backward_runs_once_with_every_output_gradient(materialize):
    theirs, _ = _run(torch, materialize, (0, 2))
    ours, _ = _run(tw, materialize, (0, 2))
    assert ours == theirs
