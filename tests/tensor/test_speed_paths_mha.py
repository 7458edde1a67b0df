"""nn.MultiheadAttention's common call (self-attention, packed weights, need_weights=False,
as nn.TransformerEncoderLayer makes it) splits q, k, v into heads with one reshape and one
permute: the same values and gradients as PyTorch, in a smaller graph."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.autograd.engine import _topological

L, N, E, H = 5, 3, 8, 2


def _pair(batch_first: bool) -> tuple:
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(E, H, batch_first=batch_first, dtype=torch.float64)
    mine = tw.nn.MultiheadAttention(E, H, batch_first=batch_first, dtype=tw.float64)
    mine.load_state_dict({k: tw.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return mine, theirs


def _masks(kind: str) -> tuple:
    causal = np.log(np.tril(np.ones((L, L))))
    padding = np.zeros((N, L))
    padding[1, -2:] = -np.inf  # a float mask, as attn_mask (mixing them is deprecated)
    if kind == "float":
        return {"attn_mask": causal}
    if kind == "bool":
        return {"attn_mask": causal == -np.inf}
    if kind == "causal hint":
        return {"attn_mask": causal, "is_causal": True}
    if kind == "padding":
        return {"attn_mask": causal, "key_padding_mask": padding}
    return {}


@pytest.mark.parametrize("kind", ["none", "float", "bool", "causal hint", "padding"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_self_attention_matches_torch(backend: str, kind: str, batch_first: bool) -> None:
    mine, theirs = _pair(batch_first)
    shape = (N, L, E) if batch_first else (L, N, E)
    x = np.random.default_rng(1).standard_normal(shape)
    masks = {
        k: v if isinstance(v, bool) else (tw.tensor(v), torch.from_numpy(v))
        for k, v in _masks(kind).items()
    }
    mine_kw = {k: v if isinstance(v, bool) else v[0] for k, v in masks.items()}
    their_kw = {k: v if isinstance(v, bool) else v[1] for k, v in masks.items()}
    wx, tx = tw.tensor(x, requires_grad=True), torch.from_numpy(x).requires_grad_()
    got = mine(wx, wx, wx, need_weights=False, **mine_kw)[0]
    want = theirs(tx, tx, tx, need_weights=False, **their_kw)[0]
    np.testing.assert_allclose(np.asarray(got.detach()), want.detach().numpy(), atol=1e-12)
    weight = np.random.default_rng(2).standard_normal(shape)
    (got * tw.tensor(weight)).sum().backward()
    (want * torch.from_numpy(weight)).sum().backward()
    np.testing.assert_allclose(np.asarray(wx.grad), tx.grad.numpy(), atol=1e-12)
    for (name, p), q in zip(mine.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(np.asarray(p.grad), q.grad.numpy(), atol=1e-12, err_msg=name)


def test_the_common_call_makes_a_smaller_graph(backend: str) -> None:
    # linear, one node cutting q, k, v from it (and one per piece that hands the piece's
    # gradient to it), the attention, and the output's permute, reshape and linear: 9 nodes
    # (a reshape, a permute and an unbind made 11; a slice and reshape per piece 13; the
    # chunk and the per-tensor head splits 17)
    mine, _ = _pair(False)
    x = tw.randn(L, N, E, dtype=tw.float64, requires_grad=True)
    out = mine(x, x, x, need_weights=False)[0]
    assert len(_topological([out._node])) == 9


def _run(x: tw.Tensor, same: bool, seed: int, **kw) -> tuple:
    """Output and gradients of F.multi_head_attention_forward on ``x``: the common path when
    ``same`` (query is key is value), else the general one (a copy as key and value)."""
    mine, _ = _pair(False)
    tw.manual_seed(seed)
    kv = x if same else x * 1.0
    out = tw.nn.functional.multi_head_attention_forward(
        x, kv, kv, E, H, mine.in_proj_weight, mine.in_proj_bias, None, None, False, 0.5,
        mine.out_proj.weight, mine.out_proj.bias, need_weights=False, **kw,
    )[0]  # fmt: skip
    out.sum().backward()
    return np.asarray(out.detach()), np.asarray(x.grad), np.asarray(mine.in_proj_weight.grad)


@pytest.mark.parametrize("training", [True, False])
def test_the_common_path_draws_dropout_as_the_general_one(backend: str, training: bool) -> None:
    x = np.random.default_rng(3).standard_normal((L, N, E))
    padding = np.zeros((N, L), dtype=bool)
    padding[0, -1] = True
    kw = {"training": training, "key_padding_mask": tw.tensor(padding)}
    fast = _run(tw.tensor(x, requires_grad=True), True, 7, **kw)
    general = _run(tw.tensor(x, requires_grad=True), False, 7, **kw)
    for a, b in zip(fast, general):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_the_common_path_refuses_bad_masks_as_the_general_one(backend: str) -> None:
    x = tw.tensor(np.ones((L, N, E)), requires_grad=True)
    for kw in ({"attn_mask": tw.zeros(L, L + 1)}, {"key_padding_mask": tw.zeros(N, L + 1)}):
        errors = []
        for same in (True, False):
            with pytest.raises((RuntimeError, AssertionError)) as info:
                _run(x, same, 0, **kw)
            errors.append((type(info.value), str(info.value)))
        assert errors[0] == errors[1]
