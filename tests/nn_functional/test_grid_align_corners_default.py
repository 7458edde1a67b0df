"""``grid_sample`` and ``affine_grid`` without ``align_corners``: False, with PyTorch's
UserWarning about that default (none when it is given), pointing at the caller's line."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch


def calls(m):
    theta = m.tensor(np.array([[[0.8, 0.1, 0.05], [-0.1, 0.9, 0.0]]]))
    x = m.tensor(np.arange(12.0).reshape(1, 1, 3, 4))
    F = m.nn.functional
    return {
        "affine_grid": lambda **kw: F.affine_grid(theta, (1, 1, 3, 4), **kw),
        "grid_sample": lambda **kw: F.grid_sample(
            x, F.affine_grid(theta, (1, 1, 3, 4), False), **kw
        ),
    }


@pytest.mark.parametrize("name", ["affine_grid", "grid_sample"])
def test_default_warns_and_means_false_like_torch(backend: str, name: str) -> None:
    results = []
    for m in (tw, torch):
        fn = calls(m)[name]
        with pytest.warns(UserWarning, match="align_corners=False") as record:
            default = fn()
        assert record[0].filename == __file__, "the warning should point at the caller"
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            explicit = fn(align_corners=False)
            fn(align_corners=True)
        np.testing.assert_array_equal(default.numpy(), explicit.numpy())
        results.append(default.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12, atol=1e-12)
