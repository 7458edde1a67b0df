"""F.multi_head_attention_forward keeps a 2-D ``attn_mask`` ``(L, S)`` two-dimensional (it
broadcasts over the batch and the heads) instead of viewing it as ``(1, 1, L, S)``: outputs and
gradients, the mask's own included, as PyTorch's in every path that uses the mask."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

L, S, N, E, H = 4, 5, 2, 6, 2

RNG = np.random.default_rng(23)
QUERY = RNG.standard_normal((L, N, E))
KEY = RNG.standard_normal((S, N, E))
SELF = RNG.standard_normal((L, N, E))
MASK = RNG.standard_normal((L, S))
with np.errstate(divide="ignore"):
    SELF_MASK = np.log(np.tril(np.ones((L, L)))) + RNG.standard_normal((L, L))
PADDING = np.zeros((N, S))
PADDING[1, -2:] = -np.inf


def _modules(**options: object) -> tuple:
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(E, H, dtype=torch.float64, **options)
    mine = tw.nn.MultiheadAttention(E, H, dtype=tw.float64, **options)
    mine.load_state_dict({k: tw.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return mine, theirs


PLAIN = _modules()
BIASED = _modules(add_bias_kv=True, add_zero_attn=True)

CASES = {
    "self, no weights": (PLAIN, True, {"need_weights": False}),
    "self, weights": (PLAIN, True, {"need_weights": True}),
    "cross, no weights": (PLAIN, False, {"need_weights": False}),
    "cross, padding": (PLAIN, False, {"need_weights": False, "key_padding_mask": PADDING}),
    "cross, padding, weights": (PLAIN, False, {"key_padding_mask": PADDING}),
    "bias_kv and zero attention": (BIASED, False, {"need_weights": False}),
}


def _run(lib, module, self_attention: bool, options: dict) -> tuple:
    def tensor(a: np.ndarray, grad: bool = False):
        t = lib.tensor(a)
        return t.requires_grad_() if grad else t

    if self_attention:
        x = tensor(SELF, True)
        query = key = value = x
        mask = tensor(SELF_MASK, True)
    else:
        query, key = tensor(QUERY, True), tensor(KEY, True)
        value = key
        mask = tensor(MASK, True)
    extra = {k: tensor(v) if isinstance(v, np.ndarray) else v for k, v in options.items()}
    out, weights = module(query, key, value, attn_mask=mask, **extra)
    loss = out.square().sum() + (0 if weights is None else weights.square().sum())
    loss.backward()
    found = [out, mask.grad, query.grad]
    if weights is not None:
        found.append(weights)
    return tuple(np.asarray(t.detach().numpy()) for t in found)


@pytest.mark.parametrize("case", list(CASES))
def test_2d_attn_mask_matches_torch(case: str) -> None:
    (mine, theirs), self_attention, options = CASES[case]
    ours = _run(tw, mine, self_attention, options)
    expected = _run(torch, theirs, self_attention, options)
    for a, b in zip(ours, expected):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
