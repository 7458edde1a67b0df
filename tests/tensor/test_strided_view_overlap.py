"""Whether an ``as_strided`` or ``unfold`` view holds a memory position twice is decided from
its sizes and strides where they tell (it was always found by counting the positions, which
took 80 % of an im2col ``as_strided`` of a million elements): the rule must never disagree
with counting, and writes through such views must still land as torch's. ``Tensor.unfold``
was bound to the copying form: writes through ``x.unfold(...)`` never reached ``x``."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.ops.views import _overlapping


def test_overlap_rule_never_disagrees_with_counting():
    rng = random.Random(0)
    decided = 0
    for _ in range(4000):
        ndim = rng.randint(1, 4)
        size = tuple(rng.randint(1, 4) for _ in range(ndim))
        stride = tuple(rng.randint(0, 7) for _ in range(ndim))
        positions = [
            sum(i * s for i, s in zip(index, stride))
            for index in itertools.product(*(range(n) for n in size))
        ]
        counted = len(set(positions)) != len(positions)
        ruled = _overlapping(size, stride)
        assert ruled is None or ruled == counted, (size, stride)
        decided += ruled is not None
    assert decided > 3000  # the rule decides most layouts without counting


#: view -> whether it holds a position twice (then only writes of one value per position are
#: defined: PyTorch applies an update such as mul_ once per holder)
VIEWS = {
    "im2col": (lambda x: x.as_strided((2, 4, 4, 3, 3), (36, 6, 1, 6, 1)), True),
    "windows": (lambda x: x.unfold(1, 3, 1).unfold(2, 3, 2), True),
    "disjoint": (lambda x: x.as_strided((3, 4), (12, 2)), False),
    "interleaved": (lambda x: x.as_strided((2, 3), (3, 2)), False),
}


@pytest.mark.parametrize("view", VIEWS)
def test_writes_through_strided_views_like_torch(backend, view):
    values = np.arange(72.0).reshape(2, 6, 6)
    results = []
    for lib in (torch, tw):
        make, overlapping = VIEWS[view]
        x = lib.tensor(values)
        v = make(x)
        if not overlapping:
            v.mul_(2)
        v[..., 0] = -1.0
        v[0, ..., 1] = 5.0
        results.append((x.numpy().copy(), v.numpy().copy()))
    (tx, tv), (wx, wv) = results
    np.testing.assert_array_equal(wx, tx)
    np.testing.assert_array_equal(wv, tv)
