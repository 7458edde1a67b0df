"""``tw.utils.data.DistributedSampler`` against ``torch.utils.data.DistributedSampler``:
unshuffled shares equal index for index; shuffled shares partition the same padded or trimmed
epoch, follow ``seed + epoch``, and agree across replicas."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from tensorweaver.utils.data import DataLoader, DistributedSampler, TensorDataset


def _shares(lib: object, n: int, replicas: int, **kwargs: object) -> list[list[int]]:
    sampler = lib.utils.data.DistributedSampler  # type: ignore[attr-defined]
    return [list(sampler(range(n), replicas, rank, **kwargs)) for rank in range(replicas)]


@pytest.mark.parametrize(("n", "replicas"), [(10, 3), (9, 3), (2, 5), (7, 1), (0, 2)])
@pytest.mark.parametrize("drop_last", [False, True])
def test_unshuffled_shares_match_torch(n: int, replicas: int, drop_last: bool) -> None:
    got = _shares(tw, n, replicas, shuffle=False, drop_last=drop_last)
    assert got == _shares(torch, n, replicas, shuffle=False, drop_last=drop_last)
    samplers = [
        DistributedSampler(range(n), replicas, r, drop_last=drop_last) for r in range(replicas)
    ]
    expected = [
        len(torch.utils.data.DistributedSampler(range(n), replicas, 0, drop_last=drop_last))
    ]
    assert {len(s) for s in samplers} == set(expected)


@pytest.mark.parametrize(("n", "replicas", "drop_last"), [(10, 3, False), (10, 3, True)])
def test_shuffled_shares_partition_one_epoch(n: int, replicas: int, drop_last: bool) -> None:
    shares = _shares(tw, n, replicas, seed=7, drop_last=drop_last)
    assert shares == _shares(tw, n, replicas, seed=7, drop_last=drop_last)  # repeatable
    flat = [i for share in shares for i in share]
    if drop_last:  # 9 distinct indices, one left out
        assert len(flat) == len(set(flat)) == 9
    else:  # every index, two of them twice to fill the last round
        assert set(flat) == set(range(n)) and len(flat) == 12
    assert _shares(tw, n, replicas, seed=8, drop_last=drop_last) != shares  # seeded


def test_set_epoch_reshuffles() -> None:
    sampler = DistributedSampler(range(20), num_replicas=2, rank=1, seed=3)
    first = list(sampler)
    assert list(sampler) == first
    sampler.set_epoch(1)
    second = list(sampler)
    assert second != first
    twin = DistributedSampler(range(20), num_replicas=2, rank=1, seed=2)
    twin.set_epoch(2)  # the seed is seed + epoch, as in PyTorch
    assert list(twin) == second


def test_feeds_a_data_loader() -> None:
    data = TensorDataset(tw.arange(10.0))
    sampler = DistributedSampler(data, num_replicas=2, rank=0, shuffle=False)
    batches = [b[0].tolist() for b in DataLoader(data, batch_size=2, sampler=sampler)]
    assert batches == [[0.0, 2.0], [4.0, 6.0], [8.0]]


def test_errors() -> None:
    with pytest.raises(RuntimeError, match="pass num_replicas and rank"):
        DistributedSampler(range(4))
    with pytest.raises(
        ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"
    ):
        DistributedSampler(range(4), num_replicas=2, rank=2)
