"""nn.Transformer and its layers against PyTorch with torch's weights loaded: norm_first,
activations given by name, as functions and as modules, masks and causal hints, batch_first
and unbatched inputs; generate_square_subsequent_mask; errors and printing."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from torch_twins import assert_close, host
from tw_backends import FAST, entered

D, HEADS, FF, S, T, N = 8, 2, 16, 5, 4, 3


@pytest.fixture(params=FAST)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """numpy and torch:cpu only: many small cases, slow on cuPyNumeric."""
    with entered(request.param, float64=True, seed=0) as spec:
        yield spec


def loaded(ours: Any, theirs: Any) -> tuple[Any, Any]:
    theirs.double()
    state = {k: tw.tensor(host(v)) for k, v in theirs.state_dict().items()}
    ours.load_state_dict(state)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    return ours, theirs


def run_both(ours: Any, theirs: Any, arrays: list, constants: dict, **options: Any) -> None:
    """Forward both on ``arrays`` (leaves) and ``constants`` (masks); the output and the
    gradients of the inputs and parameters must agree."""
    tw_in = [tw.tensor(a, requires_grad=True) for a in arrays]
    torch_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = ours(*tw_in, **{k: tw.tensor(v) for k, v in constants.items()}, **options)
    want = theirs(*torch_in, **{k: torch.tensor(v) for k, v in constants.items()}, **options)
    assert_close(out, want)
    cotangent = np.random.default_rng(1).standard_normal(tuple(want.shape))
    (out * tw.tensor(cotangent)).sum().backward()
    (want * torch.tensor(cotangent)).sum().backward()
    for a, e in zip(tw_in, torch_in):
        assert_close(a.grad, e.grad)
    expected = dict(theirs.named_parameters())
    actual = dict(ours.named_parameters())
    assert list(actual) == list(expected)
    for name, p in expected.items():
        assert_close(actual[name].grad, p.grad)


def activation(kind: str, m: Any) -> Any:
    return {
        "relu": "relu",
        "gelu": "gelu",
        "F.gelu": m.nn.functional.gelu if m is torch else tw.nn.functional.gelu,
        "GELU module": m.nn.GELU(),
        "silu": m.nn.functional.silu if m is torch else tw.nn.functional.silu,
    }[kind]


def seq(rng: np.random.Generator, length: int, batch_first: bool, batched: bool = True) -> Any:
    if not batched:
        return rng.standard_normal((length, D))
    return rng.standard_normal((N, length, D) if batch_first else (length, N, D))


def causal(length: int, as_bool: bool) -> np.ndarray:
    upper = np.triu(np.ones((length, length), dtype=bool), 1)
    return upper if as_bool else np.where(upper, -np.inf, 0.0)


def padding(length: int, batch: int = N) -> np.ndarray:
    mask = np.zeros((batch, length), dtype=bool)
    mask[1, -2:] = True
    return mask


ACTIVATIONS = ["relu", "gelu", "F.gelu", "GELU module", "silu"]
MASKS = ["none", "causal_float", "causal_bool", "padding", "causal_hint", "causal_padding"]


def encoder_masks(kind: str, length: int, batched: bool = True) -> tuple[dict, dict]:
    """(constants, options) for an encoder layer call."""
    constants: dict = {}
    options: dict = {}
    if kind in ("causal_float", "causal_hint", "causal_padding"):
        constants["src_mask"] = causal(length, False)
    if kind == "causal_bool":
        constants["src_mask"] = causal(length, True)
    if kind in ("padding", "causal_padding"):
        pad = padding(length)
        constants["src_key_padding_mask"] = pad if batched else pad[1]
    if kind in ("causal_hint", "causal_padding"):
        options["is_causal"] = True
    return constants, options


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("act", ACTIVATIONS)
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer(backend: str, norm_first: bool, act: str, kind: str) -> None:
    kwargs = {"dropout": 0.0, "norm_first": norm_first}
    ours, theirs = loaded(
        tw.nn.TransformerEncoderLayer(D, HEADS, FF, activation=activation(act, tw), **kwargs),
        torch.nn.TransformerEncoderLayer(D, HEADS, FF, activation=activation(act, torch), **kwargs),
    )
    constants, options = encoder_masks(kind, S)
    run_both(ours, theirs, [seq(np.random.default_rng(0), S, False)], constants, **options)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"batch_first": True},
        {"bias": False},
        {"layer_norm_eps": 1e-3, "norm_first": True},
        {"batch_first": True, "norm_first": True, "bias": False},
    ],
)
@pytest.mark.parametrize("kind", ["none", "causal_padding", "padding"])
def test_encoder_layer_options(backend: str, kwargs: dict, kind: str) -> None:
    ours, theirs = loaded(
        tw.nn.TransformerEncoderLayer(D, HEADS, FF, 0.3, **kwargs),
        torch.nn.TransformerEncoderLayer(D, HEADS, FF, 0.3, **kwargs),
    )
    ours.eval()
    theirs.eval()
    constants, options = encoder_masks(kind, S)
    x = seq(np.random.default_rng(0), S, kwargs.get("batch_first", False))
    run_both(ours, theirs, [x], constants, **options)


@pytest.mark.parametrize("kind", ["none", "causal_float", "padding"])
def test_encoder_layer_unbatched(backend: str, kind: str) -> None:
    ours, theirs = loaded(
        tw.nn.TransformerEncoderLayer(D, HEADS, FF, 0.0),
        torch.nn.TransformerEncoderLayer(D, HEADS, FF, 0.0),
    )
    constants, options = encoder_masks(kind, S, batched=False)
    run_both(ours, theirs, [seq(np.random.default_rng(0), S, False, False)], constants, **options)


def decoder_masks(kind: str) -> tuple[dict, dict]:
    constants: dict = {}
    options: dict = {}
    if kind in ("causal", "all"):
        constants["tgt_mask"] = causal(T, False)
        options["tgt_is_causal"] = True
    if kind in ("memory", "all"):
        constants["memory_mask"] = np.random.default_rng(4).random((T, S)) < 0.3
        constants["memory_mask"][:, 0] = False
        constants["memory_key_padding_mask"] = padding(S)
    if kind == "all":
        constants["tgt_key_padding_mask"] = padding(T)
    return constants, options


@pytest.mark.parametrize("kind", ["none", "causal", "memory", "all"])
@pytest.mark.parametrize("act", ["relu", "GELU module", "silu"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer(
    backend: str, batch_first: bool, norm_first: bool, act: str, kind: str
) -> None:
    kwargs = {"dropout": 0.0, "norm_first": norm_first, "batch_first": batch_first}
    ours, theirs = loaded(
        tw.nn.TransformerDecoderLayer(D, HEADS, FF, activation=activation(act, tw), **kwargs),
        torch.nn.TransformerDecoderLayer(D, HEADS, FF, activation=activation(act, torch), **kwargs),
    )
    constants, options = decoder_masks(kind)
    rng = np.random.default_rng(0)
    arrays = [seq(rng, T, batch_first), seq(rng, S, batch_first)]
    run_both(ours, theirs, arrays, constants, **options)


@pytest.mark.parametrize("kind", ["none", "all"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer(backend: str, batch_first: bool, norm_first: bool, kind: str) -> None:
    kwargs = {"batch_first": batch_first, "norm_first": norm_first, "dropout": 0.0}
    ours, theirs = loaded(
        tw.nn.Transformer(D, HEADS, 2, 2, FF, **kwargs),
        torch.nn.Transformer(D, HEADS, 2, 2, FF, **kwargs),
    )
    constants: dict = {}
    if kind == "all":
        constants, _ = decoder_masks("all")
        constants["src_key_padding_mask"] = padding(S)
        constants["src_mask"] = np.zeros((S, S))
    rng = np.random.default_rng(0)
    run_both(ours, theirs, [seq(rng, S, batch_first), seq(rng, T, batch_first)], constants)


def test_transformer_unbatched(backend: str) -> None:
    ours, theirs = loaded(
        tw.nn.Transformer(D, HEADS, 1, 1, FF, dropout=0.0),
        torch.nn.Transformer(D, HEADS, 1, 1, FF, dropout=0.0),
    )
    rng = np.random.default_rng(0)
    constants = {"tgt_mask": causal(T, False)}
    run_both(ours, theirs, [seq(rng, S, False, False), seq(rng, T, False, False)], constants)


@pytest.mark.parametrize("enable_nested_tensor", [False, True])
def test_encoder_stack_eval_with_padding(backend: str, enable_nested_tensor: bool) -> None:
    """In inference with a padding mask PyTorch's fast path zeroes padded positions when
    nested tensors are enabled, before the final norm; the numbers must be the same."""
    layer_args = (D, HEADS, FF, 0.0)
    kwargs = {"batch_first": True, "activation": "gelu"}
    ours = tw.nn.TransformerEncoder(
        tw.nn.TransformerEncoderLayer(*layer_args, **kwargs),
        2,
        enable_nested_tensor=enable_nested_tensor,
    )
    theirs = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(*layer_args, **kwargs),
        2,
        enable_nested_tensor=enable_nested_tensor,
    )
    loaded(ours, theirs)
    ours.eval()
    theirs.eval()
    assert ours.use_nested_tensor == theirs.use_nested_tensor
    x = seq(np.random.default_rng(0), S, True)
    with tw.no_grad(), torch.no_grad():
        got = ours(tw.tensor(x), src_key_padding_mask=tw.tensor(padding(S)))
        want = theirs(torch.tensor(x), src_key_padding_mask=torch.tensor(padding(S)))
    assert_close(got, want)


@pytest.mark.parametrize("act", ["relu", "GELU module", "silu"])
def test_nested_tensor_flag_by_activation(backend: str, act: str) -> None:
    """use_nested_tensor, and the warning when it is off, as PyTorch decides them."""

    def build(m: Any) -> tuple[Any, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            layer = m.nn.TransformerEncoderLayer(
                D, HEADS, batch_first=True, activation=activation(act, m)
            )
            encoder = m.nn.TransformerEncoder(layer, 1)
        return encoder, [str(w.message) for w in caught]

    (ours, our_warnings), (theirs, their_warnings) = build(tw), build(torch)
    assert our_warnings == their_warnings
    assert ours.use_nested_tensor == theirs.use_nested_tensor
    assert ours.layers[0].activation_relu_or_gelu == theirs.layers[0].activation_relu_or_gelu


@pytest.mark.parametrize("dtype", [None, "float32", "float16", "bool"])
def test_generate_square_subsequent_mask(backend: str, dtype: Any) -> None:
    ours = tw.nn.Transformer.generate_square_subsequent_mask(
        5, dtype=None if dtype is None else getattr(tw, dtype)
    )
    theirs = torch.nn.Transformer.generate_square_subsequent_mask(
        5, dtype=torch.float64 if dtype is None else getattr(torch, dtype)
    )
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(host(ours), host(theirs))
    assert ours.device == tw.tensor(0.0).device


def test_errors_like_torch(backend: str) -> None:
    for m in (tw, torch):
        with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
            m.nn.TransformerEncoderLayer(D, HEADS, activation="tanh")
        with pytest.raises(RuntimeError, match="activation should be relu/gelu"):
            m.nn.TransformerDecoderLayer(D, HEADS, activation="elu")
        m.nn.TransformerEncoderLayer(D, HEADS, activation=3)  # accepted, fails when called
        model = m.nn.Transformer(D, HEADS, 1, 1, FF, 0.0)
        with pytest.raises(RuntimeError, match="batch number of src and tgt must be equal"):
            model(m.randn(S, 2, D), m.randn(T, 3, D))
        with pytest.raises(RuntimeError, match="feature number of src and tgt must be equal"):
            model(m.randn(S, 2, 4), m.randn(T, 2, 4))
        layer = m.nn.TransformerEncoderLayer(D, HEADS, FF, 0.0)
        with pytest.raises(RuntimeError, match="Need attn_mask"):
            layer(m.randn(S, 2, D), is_causal=True)


@pytest.mark.parametrize("act", ["relu", "GELU module"])
def test_repr_like_torch(backend: str, act: str) -> None:
    ours = tw.nn.TransformerDecoderLayer(D, HEADS, FF, activation=activation(act, tw))
    theirs = torch.nn.TransformerDecoderLayer(D, HEADS, FF, activation=activation(act, torch))
    assert repr(ours) == repr(theirs)
    assert repr(tw.nn.Transformer(D, HEADS, 1, 1, FF)) == repr(
        torch.nn.Transformer(D, HEADS, 1, 1, FF)
    )


def test_reset_parameters_is_xavier(backend: str) -> None:
    """``Transformer._reset_parameters`` (called by __init__) redraws every matrix
    Xavier-uniform, biases untouched, as PyTorch's."""
    for m in (tw, torch):
        model = m.nn.Transformer(D, HEADS, 1, 1, FF)
        with m.no_grad():
            for p in model.parameters():
                p.fill_(7.0)
        model._reset_parameters()
        for name, p in model.named_parameters():
            values = host(p)
            if p.dim() > 1:
                bound = (6.0 / (p.shape[0] + p.shape[1])) ** 0.5
                assert np.abs(values).max() <= bound, name
            else:
                assert (values == 7.0).all(), name


@pytest.mark.parametrize("where", ["layer", "encoder", "decoder layer"])
def test_mixed_mask_kinds_warn_like_torch(backend: str, where: str) -> None:
    """A bool padding mask with a float attention mask warns once, under PyTorch's names."""

    def messages(m: Any) -> list[str]:
        x = m.zeros(S, 2, D)
        padding = m.zeros(2, S, dtype=m.bool)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            layer = m.nn.TransformerEncoderLayer(D, HEADS, FF, 0.0)
            if where == "layer":
                layer(x, src_mask=m.zeros(S, S), src_key_padding_mask=padding)
            elif where == "encoder":
                encoder = m.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
                encoder(x, mask=m.zeros(S, S), src_key_padding_mask=padding)
            else:
                decoder = m.nn.TransformerDecoderLayer(D, HEADS, FF, 0.0)
                decoder(x, x, tgt_mask=m.zeros(S, S), tgt_key_padding_mask=padding)
        return [str(w.message) for w in caught if "mismatched" in str(w.message)]

    assert messages(tw) == messages(torch)
