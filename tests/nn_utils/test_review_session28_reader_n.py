"""Reader N (session 28): silent differences from torch 2.13 in float16 gradient clipping
and distances, and in attention's inference fast path (see .notes/reader_n_session28.md)."""

from __future__ import annotations

from typing import Any

import pytest
from snippet_outcomes import same


def _clipped_half(m: Any, grads: list, foreach: Any = None) -> Any:
    params = []
    for g in grads:
        p = m.nn.Parameter(m.zeros(len(g), dtype=m.float16))
        p.grad = m.tensor(g, dtype=m.float16)
        params.append(p)
    total = m.nn.utils.clip_grad_norm_(params, 1.0, foreach=foreach)
    return total, [p.grad for p in params]


@pytest.mark.parametrize("foreach", [None, True])
def test_clip_grad_norm_of_float16_gradients_whose_squares_overflow(foreach: Any) -> None:
    same(lambda m: _clipped_half(m, [[300.0, 400.0]], foreach), "numpy", decimals=3)


def test_get_total_norm_of_float16_norms_whose_squares_overflow() -> None:
    same(
        lambda m: m.nn.utils.get_total_norm(
            [m.tensor([300.0, 400.0], dtype=m.float16), m.tensor([400.0, 300.0], dtype=m.float16)]
        ),
        "numpy",
        decimals=3,
    )


def test_get_total_norm_of_small_float16_values() -> None:
    same(
        lambda m: [
            m.nn.utils.get_total_norm([m.tensor(v, dtype=m.float16)]).item()
            for v in ([1e-4, 1e-4, 1e-4, 1e-4], [3e-4, 4e-4])
        ],
        "numpy",
        decimals=None,
    )


def _fully_masked_self_attention(m: Any, layer: bool) -> Any:
    # Weights and inputs fixed (no RNG); the first sequence is all padding.
    if layer:
        mod = m.nn.TransformerEncoderLayer(6, 2, 8, dropout=0.0, batch_first=True)
    else:
        mod = m.nn.MultiheadAttention(6, 2, batch_first=True)
    mod = mod.double().eval()
    with m.no_grad():
        for i, (_, p) in enumerate(sorted(mod.named_parameters())):
            a = m.arange(p.numel(), dtype=m.float64)
            p.copy_((m.sin(a * a * 0.37 + a * 0.11 + i) * 0.5).reshape(p.shape))
        a = m.arange(48, dtype=m.float64)
        x = m.cos(a * a * 0.71 + a * 0.3).reshape(2, 4, 6)
        kpm = m.tensor([[True, True, True, True], [False, False, False, True]])
        if layer:
            return mod(x, src_key_padding_mask=kpm)
        return mod(x, x, x, key_padding_mask=kpm, need_weights=False)[0]


@pytest.mark.parametrize("layer", [False, True])
def test_inference_fast_path_self_attention_of_all_padding_is_nan(layer: bool) -> None:
    same(lambda m: _fully_masked_self_attention(m, layer), "numpy")


def test_cdist_of_float16_off_the_matmul_path() -> None:
    def program(m: Any) -> Any:
        a = m.tensor([[300.0, 400.0]], dtype=m.float16)
        return m.cdist(a, -a)

    same(program, "numpy")


def test_pairwise_distance_and_triplet_loss_of_float16() -> None:
    def program(m: Any) -> Any:
        a = (m.arange(1.0, 5.0) * 100).reshape(1, 4).to(m.float16)
        return (
            m.nn.functional.pairwise_distance(a, -a),
            m.nn.functional.triplet_margin_loss(a, -a, a * 0),
        )

    same(program, "numpy", decimals=2)


def _weight_normed_half(m: Any, new: bool, dim: Any) -> Any:
    mod = m.nn.Linear(4, 2).half()
    with m.no_grad():
        mod.weight.copy_((m.arange(1.0, 9.0).reshape(2, 4) * 100).half())
    if new:
        m.nn.utils.parametrizations.weight_norm(mod, dim=dim)
        return mod.parametrizations.weight.original0, mod.weight
    m.nn.utils.weight_norm(mod, dim=dim)
    return mod.weight_g, mod.weight


@pytest.mark.parametrize("new", [True, False])
@pytest.mark.parametrize("dim", [0, None])
def test_weight_norm_of_a_float16_module(new: bool, dim: Any) -> None:
    same(lambda m: _weight_normed_half(m, new, dim), "numpy", decimals=2)


def test_ctc_loss_of_float16_log_probs() -> None:
    def program(m: Any) -> Any:
        a = m.arange(48, dtype=m.float64)
        x = (m.sin(a * 0.9).reshape(6, 2, 4) * 2).log_softmax(-1).half().requires_grad_()
        loss = m.nn.functional.ctc_loss(x, m.tensor([[1, 2, 2], [3, 1, 0]]), (6, 5), (3, 2))
        loss.backward()
        return loss, x.grad

    same(program, "numpy")
