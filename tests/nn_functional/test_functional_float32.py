"""float32 in, float32 out: constants and helper tensors never promote the result, and the
values agree with torch to float32 precision."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as twF
import torch
import torch.nn.functional as torchF
from functional_reference import assert_close, randn

EXPRESSIONS = {
    "gelu": lambda F, x: F.gelu(x, approximate="tanh"),
    "softplus": lambda F, x: F.softplus(x, beta=2.0),
    "log_softmax": lambda F, x: F.log_softmax(x, 1),
    "cross_entropy": lambda F, x: F.cross_entropy(x, (x[:, 0] > 0).long(), label_smoothing=0.1),
    "bce_with_logits": lambda F, x: F.binary_cross_entropy_with_logits(x, (x > 0).float()),
    "conv2d": lambda F, x: F.conv2d(x, x[:2, :, :3, :3], padding="same"),
    "conv_transpose2d": lambda F, x: F.conv_transpose2d(x, x[0, :, :2, :2].unsqueeze(1), stride=2),
    "max_pool2d": lambda F, x: F.max_pool2d(x, 2, return_indices=True)[0],
    "avg_pool2d": lambda F, x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
    "adaptive_avg_pool2d": lambda F, x: F.adaptive_avg_pool2d(x, 3),
    "batch_norm": lambda F, x: F.batch_norm(x, None, None, training=True),
    "group_norm": lambda F, x: F.group_norm(x, 2),
    "rms_norm": lambda F, x: F.rms_norm(x, (5,)),
    "attention_masked": lambda F, x: F.scaled_dot_product_attention(x, x, x, attn_mask=x[0, 0] > 0),
    "cosine_similarity": lambda F, x: F.cosine_similarity(x, x + 1),
    "pad_reflect": lambda F, x: F.pad(x, (1, 1, 2, 0), mode="reflect"),
}


@pytest.mark.parametrize("name", list(EXPRESSIONS))
def test_float32_stays_float32(backend: str, name: str) -> None:
    x = randn(2, 4, 5, 5).astype(np.float32)
    out = EXPRESSIONS[name](twF, tw.tensor(x))
    assert out.dtype is tw.float32
    assert_close(out, EXPRESSIONS[name](torchF, torch.tensor(x)), rtol=1e-4, atol=1e-5)
