"""nn.MultiheadAttention and F.multi_head_attention_forward against PyTorch: the module's
options, masks of every kind, batch_first, unbatched inputs and the returned weights, with
torch's weights loaded by load_state_dict; outputs, weights and every gradient compared, and
the exceptions PyTorch raises."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from torch_twins import assert_close, host
from tw_backends import FAST, entered

E, L, S, N = 8, 4, 5, 3


@pytest.fixture(params=FAST)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """numpy and torch:cpu only: hundreds of small cases, slow on cuPyNumeric."""
    with entered(request.param, float64=True, seed=0) as spec:
        yield spec


def both(array: np.ndarray, grad: bool = False) -> tuple[tw.Tensor, torch.Tensor]:
    floating = grad and array.dtype.kind == "f"
    return tw.tensor(array, requires_grad=floating), torch.tensor(array, requires_grad=floating)


def twin(heads: int = 2, **kwargs: Any) -> tuple[tw.nn.MultiheadAttention, Any]:
    """A torch MultiheadAttention (float64) and tw's with its state dict loaded."""
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(E, heads, dtype=torch.float64, **kwargs)
    ours = tw.nn.MultiheadAttention(E, heads, **kwargs)
    state = {k: tw.tensor(host(v)) for k, v in theirs.state_dict().items()}
    result = ours.load_state_dict(state)
    assert list(result.missing_keys) == [] and list(result.unexpected_keys) == []
    assert list(ours.state_dict()) == list(theirs.state_dict())
    return ours, theirs


def bool_mask(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    """A random bool mask (True = masked) that leaves the first key of every row free."""
    mask = rng.random(shape) < 0.4
    mask[..., 0] = False
    return mask


def masks(kind: str, batch: int, heads: int, length: int, source: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    if kind == "none":
        return {}
    if kind == "kpm_bool":
        return {"key_padding_mask": bool_mask(rng, (batch, source))}
    if kind == "kpm_float":
        return {"key_padding_mask": rng.standard_normal((batch, source))}
    if kind == "attn2_bool":
        return {"attn_mask": bool_mask(rng, (length, source))}
    if kind == "attn2_float":
        return {"attn_mask": rng.standard_normal((length, source))}
    if kind == "attn3_bool":
        return {"attn_mask": bool_mask(rng, (batch * heads, length, source))}
    if kind == "attn3_float":
        return {"attn_mask": rng.standard_normal((batch * heads, length, source))}
    assert kind == "both_bool"
    return {
        "attn_mask": bool_mask(rng, (length, source)),
        "key_padding_mask": bool_mask(rng, (batch, source)),
    }


def compare(
    ours: Any,
    theirs: Any,
    arrays: list[np.ndarray],
    call: Callable[..., Any],
    constants: dict[str, np.ndarray],
) -> None:
    """``call(module, *inputs, **constants)`` on both; outputs and the gradients of the
    inputs and parameters of a random cotangent must agree."""
    pairs = [both(a, grad=True) for a in arrays]
    tw_in, torch_in = [p[0] for p in pairs], [p[1] for p in pairs]
    tw_constants = {k: tw.tensor(v) for k, v in constants.items()}
    torch_constants = {k: torch.tensor(v) for k, v in constants.items()}
    outs = call(ours, *tw_in, **tw_constants)
    expected = call(theirs, *torch_in, **torch_constants)
    assert len(outs) == len(expected)
    rng = np.random.default_rng(1)
    tw_loss, torch_loss = 0, 0
    for out, exp in zip(outs, expected):
        if exp is None:
            assert out is None
            continue
        assert_close(out, exp)
        cotangent = rng.standard_normal(tuple(exp.shape))
        tw_loss = tw_loss + (out * tw.tensor(cotangent)).sum()
        torch_loss = torch_loss + (exp * torch.tensor(cotangent)).sum()
    tw_loss.backward()
    torch_loss.backward()
    for a, e in zip(tw_in, torch_in):
        if e.grad is None:  # an unused input
            assert a.grad is None
        else:
            assert_close(a.grad, e.grad)
    if isinstance(theirs, torch.nn.Module):
        expected_params = dict(theirs.named_parameters())
        actual_params = dict(ours.named_parameters())
        assert list(actual_params) == list(expected_params)
        for name, p in expected_params.items():
            assert_close(actual_params[name].grad, p.grad)


def inputs(
    rng: np.random.Generator, batch_first: bool, batched: bool, kdim: int = E, vdim: int = E
) -> list[np.ndarray]:
    def seq(length: int, features: int) -> np.ndarray:
        if not batched:
            return rng.standard_normal((length, features))
        return rng.standard_normal((N, length, features) if batch_first else (length, N, features))

    return [seq(L, E), seq(S, kdim), seq(S, vdim)]


NEEDS = [
    {"need_weights": True},
    {"need_weights": True, "average_attn_weights": False},
    {"need_weights": False},
]
MASKS = [
    "none",
    "kpm_bool",
    "kpm_float",
    "attn2_bool",
    "attn2_float",
    "attn3_bool",
    "attn3_float",
    "both_bool",
]


@pytest.mark.parametrize("options", NEEDS)
@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("heads", [1, 2, 4])
def test_masks(backend: str, kind: str, options: dict, heads: int) -> None:
    ours, theirs = twin(heads)
    constants = masks(kind, N, heads, L, S)
    rng = np.random.default_rng(0)
    compare(
        ours,
        theirs,
        inputs(rng, False, True),
        lambda m, q, k, v, **c: m(q, k, v, **c, **options),
        constants,
    )


MODULES = [
    {"bias": False},
    {"kdim": 3, "vdim": 6},
    {"kdim": 3, "vdim": 6, "bias": False, "batch_first": True},
    {"add_bias_kv": True},
    {"add_zero_attn": True},
    {"add_bias_kv": True, "add_zero_attn": True, "batch_first": True},
    {"batch_first": True},
    {"dropout": 0.5},  # in eval: no dropout
]


@pytest.mark.parametrize("options", NEEDS)
@pytest.mark.parametrize("kind", ["none", "both_bool", "attn3_float", "kpm_float"])
@pytest.mark.parametrize("kwargs", MODULES)
def test_module_options(backend: str, kwargs: dict, kind: str, options: dict) -> None:
    ours, theirs = twin(**kwargs)
    ours.eval()
    theirs.eval()
    constants = masks(kind, N, 2, L, S)
    dims = {k: kwargs[k] for k in ("kdim", "vdim") if k in kwargs}
    rng = np.random.default_rng(0)
    compare(
        ours,
        theirs,
        inputs(rng, kwargs.get("batch_first", False), True, **dims),
        lambda m, q, k, v, **c: m(q, k, v, **c, **options),
        constants,
    )


@pytest.mark.parametrize("options", NEEDS)
@pytest.mark.parametrize("kind", ["none", "kpm_bool", "attn2_float", "attn3_bool"])
@pytest.mark.parametrize("kwargs", [{}, {"kdim": 3, "vdim": 6}, {"add_zero_attn": True}])
def test_unbatched(backend: str, kwargs: dict, kind: str, options: dict) -> None:
    ours, theirs = twin(**kwargs)
    constants = masks(kind, 1, 2, L, S)
    if "key_padding_mask" in constants:
        constants["key_padding_mask"] = constants["key_padding_mask"][0]
    dims = {k: kwargs[k] for k in ("kdim", "vdim") if k in kwargs}
    compare(
        ours,
        theirs,
        inputs(np.random.default_rng(0), False, False, **dims),
        lambda m, q, k, v, **c: m(q, k, v, **c, **options),
        constants,
    )


@pytest.mark.parametrize("options", NEEDS)
@pytest.mark.parametrize("padding", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_self_attention_and_is_causal(
    backend: str, batch_first: bool, padding: bool, options: dict
) -> None:
    """query is key is value, with the causal mask and the is_causal hint."""
    ours, theirs = twin(batch_first=batch_first)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, L, E) if batch_first else (L, N, E))
    constants = {"attn_mask": np.triu(np.ones((L, L), dtype=bool), 1)}
    if padding:
        constants["key_padding_mask"] = bool_mask(rng, (N, L))

    def call(m: Any, x: Any, **c: Any) -> Any:
        return m(x, x, x, **c, is_causal=True, **options)

    compare(ours, theirs, [x], call, constants)


@pytest.mark.parametrize("options", NEEDS)
def test_encoder_decoder_attention(backend: str, options: dict) -> None:
    """key is value (one product for both), the query apart."""
    ours, theirs = twin()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((L, N, E)), rng.standard_normal((S, N, E))]
    compare(ours, theirs, arrays, lambda m, q, kv: m(q, kv, kv, **options), {})


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("kind", ["none", "kpm_bool", "attn2_bool", "both_bool"])
def test_eval_without_grad(backend: str, kind: str, need_weights: bool) -> None:
    """PyTorch's inference fast path (eval, no grad, batch_first self-attention) gives the
    same numbers."""
    ours, theirs = twin(batch_first=True)
    ours.eval()
    theirs.eval()
    x = np.random.default_rng(0).standard_normal((N, L, E))
    constants = masks(kind, N, 2, L, L)
    with torch.no_grad(), tw.no_grad():
        tx, ttx = both(x)
        got = ours(
            tx, tx, tx, need_weights=need_weights, **{k: tw.tensor(v) for k, v in constants.items()}
        )
        want = theirs(
            ttx,
            ttx,
            ttx,
            need_weights=need_weights,
            **{k: torch.tensor(v) for k, v in constants.items()},
        )
    assert_close(got[0], want[0])
    if need_weights:
        assert_close(got[1], want[1])
    else:
        assert got[1] is None and want[1] is None


def test_fully_masked_row_gives_nan_weights(backend: str) -> None:
    ours, theirs = twin()
    rng = np.random.default_rng(0)
    q, k, v = inputs(rng, False, True)
    mask = np.zeros((L, S), dtype=bool)
    mask[1] = True
    got = ours(*(tw.tensor(a) for a in (q, k, v)), attn_mask=tw.tensor(mask))
    want = theirs(*(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(mask))
    assert_close(got[0], want[0].detach())
    assert_close(got[1], want[1].detach())


def test_dropout_in_training_zeroes_or_rescales_weights(backend: str) -> None:
    """In training each weight is dropped (0) or kept and scaled by 1 / (1 - p)."""
    ours, _ = twin(dropout=0.5)
    q, k, v = (tw.tensor(a) for a in inputs(np.random.default_rng(0), False, True))
    ours.eval()
    clean = host(ours(q, k, v, average_attn_weights=False)[1])
    ours.train()
    out, weights = ours(q, k, v, average_attn_weights=False)
    assert tuple(out.shape) == (L, N, E) and tuple(weights.shape) == (N, 2, L, S)
    dropped = host(weights)
    kept = dropped != 0
    assert kept.any() and not kept.all()
    np.testing.assert_allclose(dropped[kept], 2 * clean[kept], rtol=1e-12)


# F.multi_head_attention_forward


def functional_args(kind: str, separate: bool) -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    weights = [rng.standard_normal((3 * E, E)) * 0.3, rng.standard_normal(3 * E)]
    weights += [rng.standard_normal((E, E)) * 0.3, rng.standard_normal(E)]
    if separate:
        weights += [rng.standard_normal((E, E)) * 0.3 for _ in range(3)]
    if kind == "bias_kv":
        weights += [rng.standard_normal((1, 1, E)), rng.standard_normal((1, 1, E))]
    return weights


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("options", NEEDS)
@pytest.mark.parametrize("kind", ["plain", "bias_kv", "zero_attn"])
@pytest.mark.parametrize("separate", [False, True])
def test_functional(backend: str, separate: bool, kind: str, options: dict, training: bool) -> None:
    rng = np.random.default_rng(0)
    arrays = inputs(rng, False, True) + functional_args(kind, separate)
    constants = masks("both_bool", N, 2, L, S)

    def call(
        m: Any,
        q: Any,
        k: Any,
        v: Any,
        w_in: Any,
        b_in: Any,
        w_out: Any,
        b_out: Any,
        *rest: Any,
        **c: Any,
    ) -> Any:
        separate_weights = rest[:3] if separate else (None, None, None)
        bias_kv = rest[-2:] if kind == "bias_kv" else (None, None)
        return m.nn.functional.multi_head_attention_forward(
            q,
            k,
            v,
            E,
            2,
            None if separate else w_in,
            b_in,
            *bias_kv,
            kind == "zero_attn",
            0.0,
            w_out,
            b_out,
            training=training,
            use_separate_proj_weight=separate,
            q_proj_weight=separate_weights[0],
            k_proj_weight=separate_weights[1],
            v_proj_weight=separate_weights[2],
            **c,
            **options,
        )

    compare(tw, torch, arrays, call, constants)


def test_functional_static_kv(backend: str) -> None:
    rng = np.random.default_rng(0)
    arrays = inputs(rng, False, True) + functional_args("plain", False)
    arrays += [rng.standard_normal((N * 2, 6, E // 2)), rng.standard_normal((N * 2, 6, E // 2))]

    def call(
        m: Any,
        q: Any,
        k: Any,
        v: Any,
        w_in: Any,
        b_in: Any,
        w_out: Any,
        b_out: Any,
        sk: Any,
        sv: Any,
    ) -> Any:
        return m.nn.functional.multi_head_attention_forward(
            q,
            k,
            v,
            E,
            2,
            w_in,
            b_in,
            None,
            None,
            False,
            0.0,
            w_out,
            b_out,
            static_k=sk,
            static_v=sv,
        )

    compare(tw, torch, arrays, call, {})


# Errors: PyTorch's exception classes.


def error_cases() -> list[tuple[str, dict, Callable[..., Any]]]:
    def run(**call: Any) -> Callable[..., Any]:
        def go(m: Any, mha: Any) -> Any:
            rng = np.random.default_rng(0)
            x = m.tensor(rng.standard_normal((L, N, E)))
            args = {k: (m.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in call.items()}
            q = args.pop("query", x)
            k = args.pop("key", x)
            v = args.pop("value", k)
            return mha(q, k, v, **args)

        return go

    wrong_features = np.zeros((S, N, 3))
    return [
        ("wrong kdim", {}, run(key=wrong_features, value=wrong_features)),
        ("2-D mask shape", {}, run(attn_mask=np.zeros((L, S)))),
        ("3-D mask shape", {}, run(attn_mask=np.zeros((2, L, L)))),
        ("4-D mask", {}, run(attn_mask=np.zeros((1, 1, L, L)))),
        ("padding shape", {}, run(key_padding_mask=np.zeros((N, S), dtype=bool))),
        ("padding rank", {}, run(key_padding_mask=np.zeros((N,), dtype=bool))),
        ("is_causal without mask", {}, run(is_causal=True)),
        ("int mask", {}, run(attn_mask=np.zeros((L, L), dtype=np.int64))),
        ("int padding", {}, run(key_padding_mask=np.zeros((N, L), dtype=np.int64))),
        ("rank 4 query", {}, run(query=np.zeros((1, L, N, E)))),
        ("unbatched key", {}, run(key=np.zeros((S, E)))),
        ("query features", {}, run(query=np.zeros((L, N, 6)))),
        ("key value mismatch", {}, run(key=np.zeros((S, N, E)), value=np.zeros((S + 1, N, E)))),
    ]


@pytest.mark.parametrize("case", error_cases(), ids=lambda c: c[0])
def test_errors_like_torch(backend: str, case: tuple) -> None:
    _, kwargs, go = case
    ours, theirs = twin(**kwargs)
    with pytest.raises(Exception) as expected:
        go(torch, theirs)
    with pytest.raises(type(expected.value)):
        go(tw, ours)


def test_constructor_errors_like_torch(backend: str) -> None:
    with pytest.raises(AssertionError):
        torch.nn.MultiheadAttention(6, 4)
    with pytest.raises(AssertionError, match="divisible"):
        tw.nn.MultiheadAttention(6, 4)
    with pytest.raises(ValueError):
        torch.nn.MultiheadAttention(0, 1)
    with pytest.raises(ValueError, match="greater than 0"):
        tw.nn.MultiheadAttention(0, 1)


def test_mismatched_mask_dtypes_warn(backend: str) -> None:
    ours, theirs = twin()
    x = np.random.default_rng(0).standard_normal((L, N, E))
    attn = np.zeros((L, L))
    padding = np.zeros((N, L), dtype=bool)
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        theirs(
            *(torch.tensor(x),) * 3,
            attn_mask=torch.tensor(attn),
            key_padding_mask=torch.tensor(padding),
        )
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        ours(*(tw.tensor(x),) * 3, attn_mask=tw.tensor(attn), key_padding_mask=tw.tensor(padding))


@pytest.mark.parametrize("masks_given", ["none", "padding", "attn2", "attn3", "both"])
def test_merge_masks(backend: str, masks_given: str) -> None:
    ours, theirs = twin()
    rng = np.random.default_rng(0)
    padding = rng.standard_normal((N, L)) if masks_given in ("padding", "both") else None
    attn = None
    if masks_given in ("attn2", "both"):
        attn = rng.standard_normal((L, L))
    if masks_given == "attn3":
        attn = rng.standard_normal((N * 2, L, L))
    query = np.zeros((N, L, E))

    def call(module: Any, m: Any) -> tuple:
        wrap = lambda a: None if a is None else m.tensor(a)
        return module.merge_masks(wrap(attn), wrap(padding), m.tensor(query))

    got, want = call(ours, tw), call(theirs, torch)
    assert got[1] == want[1]
    if want[0] is None:
        assert got[0] is None
    else:
        assert_close(got[0], want[0])
