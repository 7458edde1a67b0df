"""svd and qr of matrices with no rows or no columns, single and batched, as torch gives
them: the square factors are identities. On cuPyNumeric a single empty matrix reached
Legion's SvdTask, which aborted the whole process."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

SHAPES = [(0, 0), (2, 0), (0, 2), (3, 2, 0), (0, 3, 3), (2, 0, 3)]


def assert_like(got: tuple, want: tuple) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_array_equal(np.asarray(a), b.numpy())


@pytest.mark.cunumeric
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_svd_of_empty_matrices_like_torch(backend: str, shape: tuple) -> None:
    for full in (True, False):
        got = tw.linalg.svd(tw.zeros(*shape), full_matrices=full)
        assert_like(got, torch.linalg.svd(torch.zeros(*shape), full_matrices=full))
    assert_like(
        (tw.linalg.svdvals(tw.zeros(*shape)),), (torch.linalg.svdvals(torch.zeros(*shape)),)
    )


@pytest.mark.cunumeric
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_of_empty_matrices_like_torch(backend: str, shape: tuple, mode: str) -> None:
    got = tw.linalg.qr(tw.zeros(*shape), mode=mode)
    assert_like(got, torch.linalg.qr(torch.zeros(*shape), mode=mode))
