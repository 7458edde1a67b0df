"""Masked scaled_dot_product_attention as one fused composite: values and gradients against
torch (float64, float32), bool and float masks, broadcast masks, rows with every key masked,
the decomposition for kernels written before masks, and the attention modules on top."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from functional_reference import assert_close, check, host, randn
from tensorweaver.nn.functional import attention

L, S = 4, 5


def qkv(*lead: int) -> list:
    return [randn(*lead, L, 3), randn(*lead, S, 3, seed=1), randn(*lead, S, 2, seed=2)]


def float_mask(*shape: int, dead_row: bool = True) -> np.ndarray:
    mask = randn(*shape, seed=5)
    mask[..., 0, 1] = -np.inf
    if dead_row:  # query 1 sees no key: zeros, as PyTorch's kernels give
        mask[..., 1, :] = -np.inf
    return mask


def bool_mask(*shape: int, dead_row: bool = True) -> np.ndarray:
    mask = np.random.default_rng(6).random(shape) > 0.4
    mask[..., 2, 3] = True
    if dead_row:
        mask[..., 1, :] = False
    return mask


def sdpa(F, q, k, v, m, **kwargs):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, **kwargs)


MASKS = [
    pytest.param(float_mask(L, S), id="float-LS"),
    pytest.param(float_mask(1, L, S), id="float-1LS"),
    pytest.param(float_mask(3, 1, L, S), id="float-per-batch"),
    pytest.param(float_mask(L, S)[:1].repeat(L, 0), id="float-row-broadcast"),
    pytest.param(bool_mask(L, S), id="bool-LS"),
    pytest.param(bool_mask(2, L, S), id="bool-per-head"),
    pytest.param(np.ones((L, S), dtype=bool), id="bool-all-kept"),
    pytest.param(np.zeros((1, S)), id="float-zeros-1S"),
]


@pytest.mark.parametrize("mask", MASKS)
def test_masked_attention_matches_torch(backend: str, mask: np.ndarray) -> None:
    check(sdpa, *qkv(3, 2), mask, grad=(0, 1, 2))
    check(lambda F, *a: sdpa(F, *a, scale=0.3), *qkv(3, 2), mask, grad=(0, 1, 2))


@pytest.mark.parametrize("mask", [float_mask(L, S), bool_mask(2, L, S)], ids=["float", "bool"])
def test_masked_attention_is_one_fused_node(backend: str, mask: np.ndarray) -> None:
    q, k, v = (tw.tensor(a, requires_grad=True) for a in qkv(3, 2))
    out = tw.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=tw.tensor(mask))
    assert out._node.op == "fused"


def test_fully_masked_rows_give_zeros_and_zero_gradients(backend: str) -> None:
    for mask in (float_mask(L, S), bool_mask(L, S)):
        out = check(sdpa, *qkv(2), mask, grad=(0, 1, 2))[0]
        assert not host(out)[:, 1].any()


def test_mask_that_requires_grad_gets_torchs_gradient(backend: str) -> None:
    check(sdpa, *qkv(2, 2), float_mask(2, L, S, dead_row=False))
    check(sdpa, *qkv(2), float_mask(L, S))  # a dead row: no gradient flows into it


def test_float32_mask_on_float64_queries_like_torch(backend: str) -> None:
    mask = float_mask(L, S).astype(np.float32)
    check(sdpa, *qkv(2), mask, grad=(0, 1, 2))
    check(sdpa, *qkv(2), mask, grad=(0, 1, 2, 3))


def test_masked_attention_in_float32(backend: str) -> None:
    arrays = [a.astype(np.float32) for a in qkv(2, 2)]
    for mask in (float_mask(L, S).astype(np.float32), bool_mask(2, L, S)):
        check(sdpa, *arrays, mask, grad=(0, 1, 2), rtol=1e-5, atol=1e-6)


def test_causal_attention_still_fused(backend: str) -> None:
    check(lambda F, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), *qkv(2))


def test_masked_double_backward_matches_torch(backend: str) -> None:
    arrays = [*qkv(2), float_mask(L, S)]
    grads = []
    for lib, make in ((tw, tw.tensor), (torch, torch.tensor)):
        q, k, v = (make(a, requires_grad=True) for a in arrays[:3])
        F = lib.nn.functional
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=make(arrays[3]))
        (gq,) = lib.autograd.grad((out * out).sum(), q, create_graph=True)
        grads.append(lib.autograd.grad((gq * gq).sum(), (q, k, v)))
    for ours, theirs in zip(*grads):
        assert_close(ours, theirs.detach(), rtol=1e-8, atol=1e-10)


def test_mask_errors_like_torch(backend: str) -> None:
    q, k, v = (tw.tensor(a) for a in qkv(2))
    F = tw.nn.functional
    for mask in (tw.zeros(L, S, dtype=tw.float16), tw.zeros(L, S, dtype=tw.int64)):
        with pytest.raises(RuntimeError, match="attn_mask must be bool, float32 or of the query"):
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    q32 = q.float()
    with pytest.raises(RuntimeError, match="attn_mask must be bool, float32 or of the query"):
        F.scaled_dot_product_attention(q32, q32, q32, attn_mask=tw.zeros(L, L, dtype=tw.float64))
    for shape in ((L + 1, S), (3, L, S), (L, S, 1)):
        with pytest.raises(RuntimeError, match="does not broadcast to the attention scores"):
            F.scaled_dot_product_attention(q, k, v, attn_mask=tw.zeros(*shape, dtype=tw.float64))


def test_kernel_without_mask_parameter_keeps_its_call(backend: str, monkeypatch) -> None:
    # A plugin written before masks: (q, k, v, causal, scale). Unmasked calls still reach
    # it; masked ones run the decomposition, with torch's answer.
    device = tw.tensor(0.0).backend
    kernel = type(device).fused_scaled_dot_product_attention
    calls = []

    def old_kernel(self, q, k, v, causal, scale):
        calls.append(causal)
        return kernel(self, q, k, v, None, causal, scale)

    monkeypatch.setattr(type(device), "fused_scaled_dot_product_attention", old_kernel)
    monkeypatch.setattr(attention, "_TAKES_MASK", {})
    check(lambda F, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), *qkv(2))
    assert calls == [True]
    check(sdpa, *qkv(2), float_mask(L, S), grad=(0, 1, 2))
    check(sdpa, *qkv(2), bool_mask(L, S), grad=(0, 1, 2))
    assert calls == [True]


def _modules(ours, theirs) -> tuple:
    """The two modules in float64 with torch's weights."""
    theirs.double()
    ours.double().load_state_dict(
        {k: tw.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
    )
    return ours, theirs


def _compare(modules: tuple, call, x: np.ndarray, **masks) -> None:
    """Outputs, input gradients and parameter gradients of ``call(module, x, **masks)``."""
    ours, theirs = modules
    xo, xt = tw.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_o = call(ours, xo, **{k: tw.tensor(m) for k, m in masks.items()})
    out_t = call(theirs, xt, **{k: torch.tensor(m) for k, m in masks.items()})
    cotangent = np.random.default_rng(3).standard_normal(tuple(out_t.shape))
    (out_o * tw.tensor(cotangent)).sum().backward()
    (out_t * torch.tensor(cotangent)).sum().backward()
    assert_close(out_o, out_t.detach())
    assert_close(xo.grad, xt.grad)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert_close(p.grad, q.grad)


def _self_attention(module, x, **masks):
    """``MultiheadAttention`` called as a Transformer layer calls it (no weights)."""
    return module(x, x, x, need_weights=False, **masks)[0]


@pytest.mark.parametrize(
    "masks",
    [
        {"attn_mask": np.log(np.tril(np.ones((L, L))))},
        {"attn_mask": ~np.tril(np.ones((L, L), dtype=bool))},
        {"attn_mask": np.where(np.arange(L)[:, None] == 1, -np.inf, randn(L, L, seed=7))},
        {"key_padding_mask": np.array([[False] * (L - 1) + [True]] * 3)},
    ],
    ids=["float-causal", "bool-causal", "dead-row", "padding"],
)
def test_multihead_attention_matches_torch(backend: str, masks: dict) -> None:
    modules = _modules(tw.nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2))
    _compare(modules, _self_attention, randn(L, 3, 8, seed=8), **masks)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_layer_under_a_causal_mask_matches_torch(
    backend: str, norm_first: bool
) -> None:
    args = {"d_model": 8, "nhead": 2, "dim_feedforward": 16, "dropout": 0.0}
    modules = _modules(
        tw.nn.TransformerEncoderLayer(**args, norm_first=norm_first),
        torch.nn.TransformerEncoderLayer(**args, norm_first=norm_first),
    )
    mask = np.log(np.tril(np.ones((L, L))))
    _compare(modules, lambda m, x, **k: m(x, **k), randn(L, 3, 8, seed=9), src_mask=mask)
