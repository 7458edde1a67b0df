"""``TransformerEncoder`` where PyTorch takes its nested-tensor fast path (inference with a
left-aligned ``src_key_padding_mask``) outputs exactly 0 at padded positions, as PyTorch's
does; elsewhere (training, gradients, a norm-first layer, an attention mask) it does not."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from seq_reference import load_torch_weights

pytestmark = pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype")

LENGTHS = (5, 2, 3)
X = np.random.default_rng(0).standard_normal((3, 5, 8))
PADDED = np.arange(5)[None, :] >= np.array(LENGTHS)[:, None]


def encoders(norm_first: bool = False, final_norm: bool = False):
    def build(m):
        layer = m.nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True, norm_first=norm_first)
        return m.nn.TransformerEncoder(layer, 2, norm=m.nn.LayerNorm(8) if final_norm else None)

    torch.manual_seed(0)
    theirs = build(torch)
    ours = build(tw)
    load_torch_weights(ours, theirs)
    return ours, theirs


def run(module, m, *, train=False, grad=False, padding=PADDED, attn_mask=None):
    module.train(train)
    with m.set_grad_enabled(grad):
        kwargs = {"src_key_padding_mask": m.tensor(padding)}
        if attn_mask is not None:
            kwargs["mask"] = m.tensor(attn_mask)
        return module(m.tensor(X), **kwargs).detach().numpy()


@pytest.mark.parametrize("final_norm", [False, True])
def test_inference_zeroes_padded_positions_like_torch(final_norm: bool) -> None:
    ours, theirs = encoders(final_norm=final_norm)
    got, expected = run(ours, tw), run(theirs, torch)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    if not final_norm:
        assert (got[PADDED] == 0).all() and (expected[PADDED] == 0).all()


@pytest.mark.parametrize("case", ["train", "grad", "norm_first", "attn_mask", "right_aligned_gap"])
def test_no_zeros_where_torch_takes_the_slow_path(case: str) -> None:
    ours, theirs = encoders(norm_first=case == "norm_first")
    kwargs = {"train": case == "train", "grad": case == "grad"}
    if case == "attn_mask":
        kwargs["attn_mask"] = np.zeros((5, 5), dtype=bool)
    if case == "right_aligned_gap":  # a real position after a padded one: not left-aligned
        padding = PADDED.copy()
        padding[1] = [True, False, False, False, False]
        kwargs["padding"] = padding
    got, expected = run(ours, tw, **kwargs), run(theirs, torch, **kwargs)
    padding = kwargs.get("padding", PADDED)
    assert (got[padding] != 0).any() and (expected[padding] != 0).any()
    np.testing.assert_allclose(got[~padding], expected[~padding], rtol=1e-5, atol=1e-5)
