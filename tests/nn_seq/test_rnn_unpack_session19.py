"""Session 19 (issue 16): the fused LSTM's joined output cut into its pieces by one node, and
``clip_grad_norm_`` scaling every gradient in place, checked against torch in float64."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

LENGTH, BATCH, INPUT, HIDDEN, LAYERS = 5, 3, 4, 6, 2


def _pair() -> tuple[torch.nn.LSTM, tw.nn.LSTM]:
    torch.manual_seed(0)
    theirs = torch.nn.LSTM(INPUT, HIDDEN, LAYERS).double()
    with tw.device("torch:cpu"):
        ours = tw.nn.LSTM(INPUT, HIDDEN, LAYERS).double()
        ours.load_state_dict(
            {k: tw.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
        )
    return theirs, ours


def _inputs(framework: object) -> list:
    rng = np.random.default_rng(1)
    arrays = [
        rng.standard_normal((LENGTH, BATCH, INPUT)),
        rng.standard_normal((LAYERS, BATCH, HIDDEN)),
        rng.standard_normal((LAYERS, BATCH, HIDDEN)),
    ]
    if framework is torch:
        return [torch.tensor(a, requires_grad=True) for a in arrays]
    return [tw.tensor(a, device="torch:cpu", requires_grad=True) for a in arrays]


def _close(ours: tw.Tensor, theirs: torch.Tensor) -> None:
    np.testing.assert_allclose(
        np.asarray(ours.detach()), theirs.detach().numpy(), rtol=1e-10, atol=1e-12
    )


# Which of (output, h_n, c_n) the loss uses: the others get no gradient (None in backward).
@pytest.mark.parametrize("used", [(0,), (2,), (1, 2), (0, 1, 2)])
def test_lstm_pieces_and_gradients_like_torch(used: tuple) -> None:
    theirs, ours = _pair()
    results = []
    for module, framework in ((theirs, torch), (ours, tw)):
        x, h0, c0 = _inputs(framework)
        out, (h, c) = module(x, (h0, c0))
        pieces = (out, h, c)
        loss = sum((pieces[i] ** 2).sum() * (i + 1) for i in used)
        leaves = [x, h0, c0, *module.parameters()]
        grads = framework.autograd.grad(loss, leaves)
        results.append((pieces, grads))
    (t_pieces, t_grads), (w_pieces, w_grads) = results
    for w, t in zip(w_pieces, t_pieces):
        _close(w, t)
    for w, t in zip(w_grads, t_grads):
        _close(w, t)


def test_lstm_double_backward_like_torch() -> None:
    # create_graph: the pieces' backward is itself differentiated.
    theirs, ours = _pair()
    results = []
    for module, framework in ((theirs, torch), (ours, tw)):
        x, h0, c0 = _inputs(framework)
        out, (h, c) = module(x, (h0, c0))
        (g,) = framework.autograd.grad((out**2).sum() + (c**3).sum(), x, create_graph=True)
        results.append(framework.autograd.grad((g**2).sum(), h0)[0])
    _close(results[1], results[0])


def test_lstm_pieces_are_tensors_of_their_own() -> None:
    # PyTorch's outputs may be changed in place (the change joins the graph) and
    # detach_()-ed: a view of the joined vector would refuse both.
    theirs, ours = _pair()
    results = []
    for module, framework in ((theirs, torch), (ours, tw)):
        x, h0, c0 = _inputs(framework)
        out, (h, c) = module(x, (h0, c0))
        out.mul_(2.0)
        h.detach_()
        loss = (out**2).sum() + (c * h).sum()
        results.append((h.requires_grad, framework.autograd.grad(loss, [x, c0])))
    assert results[1][0] is results[0][0] is False
    for w, t in zip(results[1][1], results[0][1]):
        _close(w, t)


def test_clip_grad_norm_scales_small_gradients_in_place() -> None:
    # As torch's _foreach_mul_: a gradient under 65,536 elements keeps its memory.
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(s) for s in ((3, 4), (200,), (300, 300))]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    with tw.device("torch:cpu"):
        ours = [tw.tensor(a, requires_grad=True) for a in arrays]
    for t, w in zip(theirs, ours):
        t.grad = torch.tensor(np.asarray(t.detach()) * 3.0)
        w.grad = tw.tensor(np.asarray(w.detach()) * 3.0, device="torch:cpu")
    before = [w.grad.data_ptr() for w in ours]
    total_t = torch.nn.utils.clip_grad_norm_(theirs, 0.5)
    total_w = tw.nn.utils.clip_grad_norm_(ours, 0.5)
    _close(total_w, total_t)
    for t, w in zip(theirs, ours):
        _close(w.grad, t.grad)
    assert [w.grad.data_ptr() for w in ours] == before
