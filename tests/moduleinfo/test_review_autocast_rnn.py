"""Review of commit ff4f37c (RNN/LSTM/GRU under autocast, class weights of losses, BatchNorm
of an empty batch), each case compared with torch 2.13 itself."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch
import torch.nn.functional as TF


def _module_pair(kind: str, **kwargs: object) -> tuple[torch.nn.Module, tw.nn.Module]:
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(4, 3, **kwargs)
    ours = getattr(tw.nn, kind)(4, 3, **kwargs).to("torch:cpu")
    state = {
        k: tw.tensor(v.detach().numpy(), device="torch:cpu") for k, v in theirs.state_dict().items()
    }
    ours.load_state_dict(state)
    return theirs, ours


@pytest.mark.parametrize(
    ("kind", "kwargs"),
    [("RNN", {"bidirectional": True}), ("GRU", {"num_layers": 2}), ("LSTM", {"batch_first": True})],
)
def test_rnn_bfloat16_input_under_autocast_matches_torch(kind: str, kwargs: dict) -> None:
    theirs, ours = _module_pair(kind, **kwargs)
    x = torch.randn(5, 3, 4).bfloat16()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = theirs(x)[0]
    with tw.autocast("cpu", dtype=tw.bfloat16):
        got = ours(tw.tensor(x.double().numpy(), device="torch:cpu").to(tw.bfloat16))[0]
    assert got.dtype is tw.bfloat16
    np.testing.assert_allclose(
        np.asarray(got.detach().double().to("numpy")), expected.double().detach().numpy(), atol=8e-3
    )


@pytest.mark.parametrize("packed", [False, True])
def test_lstm_with_projection_under_autocast_returns_bfloat16_as_torch(packed: bool) -> None:
    # ff4f37c gave float32 for a float32 input: torch's projected LSTM runs step by step, its
    # matrix products on autocast's list, so it computes and returns bfloat16.
    theirs, ours = _module_pair("LSTM", proj_size=2)
    x = torch.randn(5, 3, 4)
    lengths = [5, 3, 2]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        inp = torch.nn.utils.rnn.pack_padded_sequence(x, lengths) if packed else x
        expected = theirs(inp)[0]
    with tw.autocast("cpu", dtype=tw.bfloat16):
        xs = tw.tensor(x.numpy(), device="torch:cpu")
        inp = tw.nn.utils.rnn.pack_padded_sequence(xs, lengths) if packed else xs
        got = ours(inp)[0]
    if packed:
        expected, got = expected.data, got.data
    assert got.dtype.name == str(expected.dtype).split(".")[1]
    np.testing.assert_allclose(
        np.asarray(got.detach().double().to("numpy")), expected.double().detach().numpy(), atol=8e-3
    )


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss"])
def test_class_weights_of_another_dtype_raise_as_torch_under_autocast(device: str, fn: str) -> None:
    x, w = torch.randn(4, 3, dtype=torch.float64), torch.rand(3)
    t = torch.tensor([0, 2, 1, 1])
    with torch.autocast("cpu", dtype=torch.bfloat16), pytest.raises(RuntimeError):
        getattr(TF, fn)(x, t, weight=w)
    args = [tw.tensor(a.numpy(), device=device) for a in (x, t, w)]
    with tw.autocast("cpu", dtype=tw.bfloat16), pytest.raises(RuntimeError, match="scalar type"):
        getattr(F, fn)(args[0], args[1], weight=args[2])


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_empty_batch_then_a_batch_tracks_as_torch(momentum: float | None) -> None:
    torch.manual_seed(3)
    theirs = torch.nn.BatchNorm1d(3, momentum=momentum)
    ours = tw.nn.BatchNorm1d(3, momentum=momentum)
    for x in (torch.randn(0, 3), torch.randn(4, 3)):
        expected = theirs(x)
        got = ours(tw.tensor(x.numpy()))
        np.testing.assert_allclose(
            np.asarray(got.detach()), expected.detach().numpy(), rtol=1e-5, atol=1e-6
        )
    assert int(ours.num_batches_tracked.item()) == int(theirs.num_batches_tracked)
    np.testing.assert_allclose(
        np.asarray(ours.running_mean), theirs.running_mean.numpy(), rtol=1e-6
    )
    np.testing.assert_allclose(np.asarray(ours.running_var), theirs.running_var.numpy(), rtol=1e-6)
