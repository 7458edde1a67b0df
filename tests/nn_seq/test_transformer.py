"""Transformer layers, stacks and the full model against torch.nn with identical float64
weights (dropout 0): outputs, input gradients and every parameter gradient, with masks."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from seq_reference import assert_close, compare_with_torch
from tensorweaver.nn import functional as F
from tensorweaver.nn.modules import transformer as nn
from tensorweaver.nn.modules.normalization import LayerNorm

# torch warns that its Transformer cannot use nested tensors unless batch_first.
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor:UserWarning")

rng = np.random.default_rng(0)
D, HEADS, FF, S, T, N = 8, 2, 16, 5, 4, 2

LAYER_CONFIGS = [
    {},
    {"activation": "gelu", "norm_first": True},
    {"batch_first": True, "bias": False},
    {"norm_first": True, "batch_first": True, "layer_norm_eps": 1e-3},
]


def sequence(length: int, batch_first: bool) -> np.ndarray:
    return rng.standard_normal((N, length, D) if batch_first else (length, N, D))


def causal(length: int) -> np.ndarray:
    return np.triu(np.full((length, length), -np.inf), 1)


def padding(length: int) -> np.ndarray:
    """A float key padding mask (-inf: padded) hiding the last two keys of sample 1."""
    mask = np.zeros((N, length))
    mask[1, -2:] = -np.inf
    return mask


def pair(name: str, *args, **kwargs):
    return getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("kwargs", LAYER_CONFIGS)
def test_encoder_layer(backend: str, kwargs: dict, masked: bool) -> None:
    masks = {"src_mask": causal(S), "src_key_padding_mask": padding(S)} if masked else {}
    compare_with_torch(
        *pair("TransformerEncoderLayer", D, HEADS, FF, 0.0, **kwargs),
        [sequence(S, kwargs.get("batch_first", False))],
        constants=masks,
    )


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("kwargs", LAYER_CONFIGS)
def test_decoder_layer(backend: str, kwargs: dict, masked: bool) -> None:
    masks = {}
    if masked:
        masks = {
            "tgt_mask": causal(T),
            "memory_mask": rng.standard_normal((T, S)),
            "tgt_key_padding_mask": padding(T),
            "memory_key_padding_mask": padding(S),
        }
    batch_first = kwargs.get("batch_first", False)
    compare_with_torch(
        *pair("TransformerDecoderLayer", D, HEADS, FF, 0.0, **kwargs),
        [sequence(T, batch_first), sequence(S, batch_first)],
        constants=masks,
    )


def test_causal_hint_in_encoder_layer(backend: str) -> None:
    compare_with_torch(
        *pair("TransformerEncoderLayer", D, HEADS, FF, 0.0),
        [sequence(S, False)],
        call=lambda m, x, src_mask: m(x, src_mask=src_mask, is_causal=True),
        constants={"src_mask": causal(S)},
    )


def test_encoder_stack(backend: str) -> None:
    tw_layer = nn.TransformerEncoderLayer(D, HEADS, FF, 0.0, batch_first=True)
    torch_layer = torch.nn.TransformerEncoderLayer(D, HEADS, FF, 0.0, batch_first=True)
    encoder = nn.TransformerEncoder(tw_layer, 2, norm=LayerNorm(D))
    reference = torch.nn.TransformerEncoder(
        torch_layer, 2, norm=torch.nn.LayerNorm(D), enable_nested_tensor=False
    )
    with torch.no_grad():
        for p in reference.parameters():
            p.normal_()  # every layer different, the final norm not the identity
    compare_with_torch(
        encoder,
        reference,
        [sequence(S, True)],
        constants={"mask": causal(S), "src_key_padding_mask": padding(S)},
    )
    first, second = encoder.layers
    assert first.linear1.weight is not second.linear1.weight


def test_decoder_stack(backend: str) -> None:
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, HEADS, FF, 0.0), 2)
    reference = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(D, HEADS, FF, 0.0), 2)
    with torch.no_grad():
        for p in reference.parameters():
            p.normal_()
    compare_with_torch(
        decoder,
        reference,
        [sequence(T, False), sequence(S, False)],
        constants={"tgt_mask": causal(T), "memory_key_padding_mask": padding(S)},
    )


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer(backend: str, batch_first: bool) -> None:
    kwargs = {"num_encoder_layers": 2, "num_decoder_layers": 2, "batch_first": batch_first}
    compare_with_torch(
        *pair("Transformer", D, HEADS, dim_feedforward=FF, dropout=0.0, **kwargs),
        [sequence(S, batch_first), sequence(T, batch_first)],
        constants={
            "tgt_mask": causal(T),
            "src_key_padding_mask": padding(S),
            "tgt_key_padding_mask": padding(T),
            "memory_key_padding_mask": padding(S),
        },
    )


def test_transformer_unbatched(backend: str) -> None:
    compare_with_torch(
        *pair("Transformer", D, HEADS, 1, 1, FF, 0.0),
        [rng.standard_normal((S, D)), rng.standard_normal((T, D))],
        constants={"tgt_mask": causal(T)},
    )


def test_generate_square_subsequent_mask(backend: str) -> None:
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    assert mask.dtype == tw.get_default_dtype()
    assert_close(mask, torch.nn.Transformer.generate_square_subsequent_mask(5))


def test_transformer_init_is_xavier(backend: str) -> None:
    model = nn.Transformer(D, HEADS, 1, 1, FF)
    reference = torch.nn.Transformer(D, HEADS, 1, 1, FF)
    assert list(model.state_dict()) == list(reference.state_dict())
    for name, p in model.named_parameters():
        if p.dim() > 1:
            bound = np.sqrt(6 / sum(p.shape))
            values = p.detach().numpy()
            assert np.all(np.abs(values) <= bound) and values.std() > bound / 4, name


def test_custom_activation_and_errors(backend: str) -> None:
    compare_with_torch(
        nn.TransformerEncoderLayer(D, HEADS, FF, 0.0, activation=F.silu),
        torch.nn.TransformerEncoderLayer(D, HEADS, FF, 0.0, activation=torch.nn.functional.silu),
        [sequence(S, False)],
    )
    with pytest.raises(RuntimeError, match="TransformerEncoderLayer: activation should be"):
        nn.TransformerEncoderLayer(D, HEADS, activation="tanh")
    model = nn.Transformer(D, HEADS, 1, 1, FF, 0.0)
    with pytest.raises(RuntimeError, match="same batch size"):
        model(tw.randn(S, 2, D), tw.randn(T, 3, D))
    with pytest.raises(RuntimeError, match="d_model=8"):
        model(tw.randn(S, 2, 4), tw.randn(T, 2, 4))
