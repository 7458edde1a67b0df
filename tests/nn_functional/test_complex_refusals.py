"""Normalizations and attention of complex input raise PyTorch's NotImplementedError (its
kernels have none); tw computed a result on the NumPy backend, of no defined meaning."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

X = np.random.default_rng(0).standard_normal((2, 3, 4)) * (1 + 0.5j)

CASES = {
    "layer_norm": lambda m, x: m.nn.functional.layer_norm(x, (4,)),
    "group_norm": lambda m, x: m.nn.functional.group_norm(x, 1),
    "batch_norm": lambda m, x: m.nn.functional.batch_norm(x, None, None, training=True),
    "instance_norm": lambda m, x: m.nn.functional.instance_norm(x),
    "sdpa": lambda m, x: m.nn.functional.scaled_dot_product_attention(x, x, x),
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", list(CASES))
def test_complex_input_raises_as_torch(backend: str, name: str, dtype: str) -> None:
    with pytest.raises(NotImplementedError):
        CASES[name](torch, torch.tensor(X).to(getattr(torch, dtype)))
    with pytest.raises(NotImplementedError, match="complex"):
        CASES[name](tw, tw.tensor(X).to(getattr(tw, dtype)))


def test_real_input_still_as_torch(backend: str) -> None:
    for name, case in CASES.items():
        got = case(tw, tw.tensor(X.real))
        want = case(torch, torch.tensor(X.real))
        np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-10, err_msg=name)
