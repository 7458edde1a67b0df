"""MultiheadAttention against torch.nn.MultiheadAttention with identical float64 weights:
outputs, attention weights, input gradients and every parameter gradient, with and without
masks."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from seq_reference import compare_with_torch
from tensorweaver.nn.modules.attention import MultiheadAttention

rng = np.random.default_rng(0)
E, HEADS, L, S, N = 8, 2, 4, 5, 3


def attend(**options):
    """A ``call`` for compare_with_torch: ``module(query, key, value, **masks, **options)``."""

    def call(module, query, key, value, **masks):
        return module(query, key, value, **masks, **options)

    return call


def qkv(batch_first: bool = False, kdim: int = E, vdim: int = E, batch: tuple = (N,)) -> list:
    def seq(length: int, features: int) -> np.ndarray:
        if not batch:
            return rng.standard_normal((length, features))
        shape = (*batch, length, features) if batch_first else (length, *batch, features)
        return rng.standard_normal(shape)

    return [seq(L, E), seq(S, kdim), seq(S, vdim)]


def pair(**kwargs) -> tuple[MultiheadAttention, torch.nn.MultiheadAttention]:
    return MultiheadAttention(E, HEADS, **kwargs), torch.nn.MultiheadAttention(E, HEADS, **kwargs)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"batch_first": True},
        {"bias": False},
        {"kdim": 3, "vdim": 6},
        {"add_bias_kv": True},
        {"add_zero_attn": True, "batch_first": True},
    ],
)
def test_matches_torch(backend: str, kwargs: dict, need_weights: bool) -> None:
    shapes = {k: kwargs[k] for k in ("kdim", "vdim") if k in kwargs}
    compare_with_torch(
        *pair(**kwargs),
        qkv(kwargs.get("batch_first", False), **shapes),
        call=attend(need_weights=need_weights),
    )


def test_per_head_weights(backend: str) -> None:
    outs = compare_with_torch(*pair(), qkv(), call=attend(average_attn_weights=False))
    assert tuple(outs[1].shape) == (N, HEADS, L, S)
    assert np.allclose(outs[1].detach().numpy().sum(-1), 1)


def test_self_attention_shares_one_projection(backend: str) -> None:
    # query is key is value takes the packed projection; the result must not change.
    x = rng.standard_normal((L, N, E))
    compare_with_torch(*pair(), [x], call=lambda m, x: m(x, x, x))


def padding_mask(as_float: bool = False) -> np.ndarray:
    mask = np.zeros((N, S), dtype=bool)
    mask[0, -2:] = True
    mask[2, 0] = True
    return np.where(mask, -np.inf, 0.0) if as_float else mask


def random_bool_mask() -> np.ndarray:
    """A per-head (N * heads, L, S) bool mask; key 0 stays visible so no row is all masked."""
    mask = rng.random((N * HEADS, L, S)) < 0.4
    mask[..., 0] = False
    return mask


def causal_bool(length: int, source: int) -> np.ndarray:
    return np.triu(np.ones((length, source), dtype=bool), 1)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize(
    "masks",
    [
        {"attn_mask": causal_bool(L, S)},
        {"attn_mask": rng.standard_normal((L, S))},
        {"attn_mask": rng.standard_normal((N * HEADS, L, S))},
        {"attn_mask": random_bool_mask()},
        {"key_padding_mask": padding_mask()},
        {"key_padding_mask": padding_mask(as_float=True)},
        {"key_padding_mask": padding_mask(), "attn_mask": causal_bool(L, S)},
    ],
    ids=["bool2d", "float2d", "float3d", "bool3d", "padding", "float_padding", "both"],
)
def test_masks(backend: str, masks: dict, need_weights: bool) -> None:
    compare_with_torch(*pair(), qkv(), call=attend(need_weights=need_weights), constants=masks)


def test_masks_with_extra_keys(backend: str) -> None:
    masks = {
        "key_padding_mask": padding_mask(as_float=True),
        "attn_mask": rng.standard_normal((L, S)),
    }
    compare_with_torch(
        *pair(add_bias_kv=True, add_zero_attn=True), qkv(), call=attend(), constants=masks
    )


@pytest.mark.parametrize("need_weights", [True, False])
def test_causal_hint(backend: str, need_weights: bool) -> None:
    # With is_causal and no weights asked, the mask is replaced by causal attention.
    x = rng.standard_normal((N, L, E))
    compare_with_torch(
        *pair(batch_first=True),
        [x, x, x],
        call=attend(need_weights=need_weights, is_causal=True),
        constants={"attn_mask": causal_bool(L, L)},
    )


def test_unbatched(backend: str) -> None:
    masks = {
        "key_padding_mask": np.array([0.0, -np.inf, 0.0, 0.0, 0.0]),
        "attn_mask": rng.standard_normal((HEADS, L, S)),
    }
    outs = compare_with_torch(
        *pair(batch_first=True),
        qkv(batch=()),
        call=attend(average_attn_weights=False),
        constants=masks,
    )
    assert tuple(outs[0].shape) == (L, E)
    assert tuple(outs[1].shape) == (HEADS, L, S)


@pytest.mark.parametrize("need_weights", [True, False])
def test_dropout(backend: str, need_weights: bool) -> None:
    # p = 1 drops every attention weight, so training mode is deterministic; eval mode
    # turns dropout off.
    tw_mha, torch_mha = pair(dropout=1.0)
    with torch.no_grad():
        torch_mha.out_proj.bias.normal_()  # so that the output is not all zeros
    compare_with_torch(tw_mha, torch_mha, qkv(), call=attend(need_weights=need_weights))
    tw_mha.eval()
    torch_mha.eval()
    compare_with_torch(tw_mha, torch_mha, qkv(), call=attend(need_weights=need_weights))


def test_state_dict_layout(backend: str) -> None:
    for kwargs in ({}, {"kdim": 3, "vdim": 6, "add_bias_kv": True}, {"bias": False}):
        ours, theirs = pair(**kwargs)
        assert {k: tuple(v.shape) for k, v in ours.state_dict().items()} == {
            k: tuple(v.shape) for k, v in theirs.state_dict().items()
        }


def test_init(backend: str) -> None:
    mha = MultiheadAttention(E, HEADS)
    bound = np.sqrt(6 / (E + 3 * E))  # Xavier-uniform of the (3E, E) packed weight
    weight = mha.in_proj_weight.detach().numpy()
    assert np.all(np.abs(weight) <= bound) and weight.std() > bound / 4
    assert not mha.in_proj_bias.detach().numpy().any()
    assert not mha.out_proj.bias.detach().numpy().any()


def test_errors(backend: str) -> None:
    with pytest.raises(
        AssertionError, match=r"embed_dim \(6\) must be divisible by num_heads \(4\)"
    ):
        MultiheadAttention(6, 4)
    mha = MultiheadAttention(E, HEADS)
    x = tw.randn(L, N, E)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        mha(x, tw.randn(S, N, 3), tw.randn(S, N, 3))
    with pytest.raises(RuntimeError, match=r"2D attn_mask is \(4, 5\), but should be \(4, 4\)"):
        mha(x, x, x, attn_mask=tw.zeros(L, S))
    with pytest.raises(AssertionError, match=r"key_padded_mask.shape\[1\] to be 4, but got 5"):
        mha(x, x, x, key_padding_mask=tw.zeros(N, S, dtype=tw.bool))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        mha(x, x, x, attn_mask=tw.zeros(L, L, dtype=tw.int64))
