"""scaled_dot_product_attention against torch.nn.functional in float64."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from functional_reference import check, check_same, gradcheck, host, randn
from tensorweaver.nn.functional import attention


def qkv(*lead: int, length: int = 4, source: int = 5, e: int = 3, ev: int = 2) -> list:
    return [
        randn(*lead, length, e),
        randn(*lead, source, e, seed=1),
        randn(*lead, source, ev, seed=2),
    ]


@pytest.mark.parametrize("lead", [(), (2,), (2, 3)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", [None, 0.7])
def test_attention(backend: str, lead: tuple, causal: bool, scale) -> None:
    check(
        lambda F, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale),
        *qkv(*lead),
    )


@pytest.mark.parametrize(("length", "source"), [(5, 3), (3, 5)])
def test_causal_attention_is_aligned_top_left(backend: str, length: int, source: int) -> None:
    check(
        lambda F, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        *qkv(2, length=length, source=source),
    )


def test_bool_mask_with_a_fully_masked_row(backend: str) -> None:
    mask = np.random.default_rng(3).random((4, 5)) > 0.4
    mask[1] = False  # this query sees nothing: zeros, as in PyTorch
    mask[2, 0] = True

    def fn(F, q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)

    check(fn, *qkv(2), mask)


def test_float_mask_broadcasts(backend: str) -> None:
    mask = randn(1, 4, 5, seed=4)
    check(
        lambda F, q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        *qkv(2, 3),
        mask,
        grad=(0, 1, 2),
    )


def test_grouped_query_attention(backend: str) -> None:
    q = randn(2, 6, 4, 3)
    k, v = randn(2, 2, 5, 3, seed=1), randn(2, 2, 5, 3, seed=2)
    check(lambda F, q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), q, k, v)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_reference_matches_public_path(backend: str, causal: bool) -> None:
    check_same(
        lambda q, k, v: attention.scaled_dot_product_attention_reference(q, k, v, causal, 0.4),
        lambda q, k, v: tw.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=causal, scale=0.4
        ),
        *qkv(2, 3),
    )


def test_attention_dropout(backend: str) -> None:
    q, k, v = (tw.tensor(a) for a in qkv(64, length=8, source=8))
    F = tw.nn.functional
    plain = host(F.scaled_dot_product_attention(q, k, v))
    tw.manual_seed(0)
    dropped = host(F.scaled_dot_product_attention(q, k, v, dropout_p=0.5))
    zeros = host(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0))
    assert np.isfinite(dropped).all() and not np.allclose(dropped, plain)
    # Dropout keeps the expectation: averaged over 64 batches the outputs roughly agree.
    assert abs(dropped.mean() - plain.mean()) < 0.1
    np.testing.assert_array_equal(zeros, 0)


def test_attention_rejects_mask_with_causal(backend: str) -> None:
    q, k, v = (tw.tensor(a) for a in qkv())
    with pytest.raises(RuntimeError, match="either attn_mask or is_causal"):
        tw.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=tw.ones(4, 5, dtype=tw.bool), is_causal=True
        )


def test_gradcheck_attention(backend: str) -> None:
    gradcheck(lambda F, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), *qkv(2))
