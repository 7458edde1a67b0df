"""``tw.set_num_threads``/``tw.get_num_threads``: the backend's own method when it has one,
else the BLAS/OpenMP pools in the process through threadpoolctl; errors as PyTorch's."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensor_reference import raises_like_torch

threadpoolctl = pytest.importorskip("threadpoolctl")


@pytest.fixture
def restored() -> Iterator[None]:
    with threadpoolctl.threadpool_limits(limits=None):  # puts back every pool's limit on exit
        yield


@pytest.mark.parametrize("bad", [0, -1, 2.5, True])
def test_bad_counts_raise_like_torch(bad: Any) -> None:
    raises_like_torch(lambda m: m.set_num_threads(bad), match=["set_num_threads expects"])


def test_numpy_blas_follows(restored: None) -> None:
    np.ones((4, 4)) @ np.ones((4, 4))  # BLAS is loaded
    with tw.device("numpy"):
        tw.set_num_threads(1)
        assert tw.get_num_threads() == 1
        blas = [p for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
        assert blas and all(p["num_threads"] == 1 for p in blas)
        tw.set_num_threads(2)
        assert tw.get_num_threads() == 2


def test_the_torch_backend_steers_torchs_own_pool() -> None:
    import torch

    previous = torch.get_num_threads()
    try:
        with tw.device("torch:cpu"):
            for n in (1, 2):
                tw.set_num_threads(n)
                assert torch.get_num_threads() == n and tw.get_num_threads() == n
    finally:
        torch.set_num_threads(previous)
