"""max/min/amax/amin and max pooling of all-infinite windows give the infinity, as PyTorch
(cuPyNumeric's reductions gave the largest finite float: a silent wrong answer)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch

INF = math.inf
ROWS = [[-INF, -INF, -INF], [INF, INF, INF], [-INF, 2.0, INF], [math.nan, -INF, -INF]]


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_reductions_of_infinities_like_torch(backend: str, dtype: str) -> None:
    rows = np.array(ROWS, dtype=dtype)
    ours, theirs = tw.tensor(rows), torch.tensor(rows)
    for name in ("amax", "amin"):
        for kw in ({"dim": 1}, {"dim": 1, "keepdim": True}, {}):
            got = getattr(tw, name)(ours, **kw)
            want = getattr(torch, name)(theirs, **kw)
            np.testing.assert_array_equal(np.asarray(got), want.numpy())
    for name in ("max", "min"):
        np.testing.assert_array_equal(
            np.asarray(getattr(ours, name)(dim=1).values),
            getattr(theirs, name)(dim=1).values.numpy(),
        )
        for row in range(len(ROWS)):
            np.testing.assert_array_equal(
                np.asarray(getattr(ours[row], name)()), getattr(theirs[row], name)().numpy()
            )
