"""Datasets and samplers of tensorweaver.utils.data against torch.utils.data: ConcatDataset,
ChainDataset, StackDataset, Subset, random_split, SubsetRandomSampler,
WeightedRandomSampler and BatchSampler (items, lengths, errors)."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest
import tensorweaver as tw
import torch
from data_reference import assert_same
from tensorweaver.utils import data
from torch.utils import data as tdata


class Stream:
    """Mixed into each library's IterableDataset: the numbers ``start .. stop - 1``."""

    def __init__(self, start: int, stop: int) -> None:
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self) -> int:
        return self.stop - self.start


class OurStream(Stream, data.IterableDataset):
    pass


class TorchStream(Stream, tdata.IterableDataset):
    pass


def test_concat_dataset_matches_torch() -> None:
    parts = [list(range(3)), list(range(10, 15)), [], list(range(20, 22))]
    ours, ref = data.ConcatDataset(parts), tdata.ConcatDataset(parts)
    assert len(ours) == len(ref) == 10
    assert ours.cumulative_sizes == ref.cumulative_sizes
    assert [ours[i] for i in range(-10, 10)] == [ref[i] for i in range(-10, 10)]
    for bad, error in ((-11, ValueError), (10, IndexError)):
        with pytest.raises(error):
            ref[bad]
        with pytest.raises(error, match="ConcatDataset"):
            ours[bad]
    added = data.TensorDataset(tw.arange(3)) + data.TensorDataset(tw.arange(4) + 3)
    assert isinstance(added, data.ConcatDataset)
    assert [added[i][0].item() for i in range(len(added))] == list(range(7))


def test_concat_dataset_errors() -> None:
    # torch asserts (AssertionError); ours say what to pass instead.
    with pytest.raises(AssertionError):
        tdata.ConcatDataset([])
    with pytest.raises(ValueError, match="should not be an empty iterable"):
        data.ConcatDataset([])
    with pytest.raises(AssertionError):
        tdata.ConcatDataset([TorchStream(0, 2)])
    with pytest.raises(TypeError, match="ChainDataset"):
        data.ConcatDataset([OurStream(0, 2)])


def test_chain_dataset_matches_torch() -> None:
    ours = data.ChainDataset([OurStream(0, 3), OurStream(7, 9)])
    ref = tdata.ChainDataset([TorchStream(0, 3), TorchStream(7, 9)])
    assert list(ours) == list(ref) == [0, 1, 2, 7, 8]
    assert len(ours) == len(ref) == 5
    assert list(OurStream(0, 2) + OurStream(5, 6)) == [0, 1, 5]
    with pytest.raises(TypeError, match="only supports IterableDataset"):
        list(data.ChainDataset([OurStream(0, 1), [1, 2]]))


def test_stack_dataset_matches_torch() -> None:
    x, y = np.arange(12.0).reshape(4, 3), np.arange(4)
    for args, kwargs in (((x, y), {}), ((), {"x": x, "y": y})):
        ours, ref = data.StackDataset(*args, **kwargs), tdata.StackDataset(*args, **kwargs)
        assert len(ours) == len(ref) == 4
        for i in (0, 3, -1):
            assert_same(ours[i], ref[i])
    for args, kwargs in (((x, y[:3]), {}), ((x,), {"y": y}), ((), {})):
        with pytest.raises(ValueError):
            tdata.StackDataset(*args, **kwargs)
        with pytest.raises(ValueError, match="StackDataset"):
            data.StackDataset(*args, **kwargs)


def test_subset_getitems_matches_torch() -> None:
    class Batched(list):
        def __getitems__(self, indices: list) -> list:
            return [("batched", self[i]) for i in indices]

    for items in (list(range(10)), Batched(range(10))):
        ours, ref = data.Subset(items, [9, 0, 4]), tdata.Subset(items, [9, 0, 4])
        assert ours.__getitems__([2, 0]) == ref.__getitems__([2, 0])
    loader = data.DataLoader(data.Subset(Batched(range(10)), [9, 0, 4]), batch_size=2)
    ref_loader = tdata.DataLoader(tdata.Subset(Batched(range(10)), [9, 0, 4]), batch_size=2)
    ours, ref = list(loader), list(ref_loader)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        assert_same(a, b)


@pytest.mark.parametrize("lengths", [[4, 6], [0.25, 0.75], [0.34, 0.33, 0.33]])
def test_random_split_lengths_and_errors_match_torch(lengths: list) -> None:
    ours = data.random_split(range(10), lengths, generator=tw.Generator().manual_seed(0))
    ref = tdata.random_split(range(10), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in ours] == [len(p) for p in ref]
    assert sorted(i for p in ours for i in p) == list(range(10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns of its empty splits
        for bad in ([4, 5], [0.5, 0.6], [1.5, -0.5]):
            with pytest.raises(ValueError):
                tdata.random_split(range(10), bad)
            with pytest.raises(ValueError, match="random_split"):
                data.random_split(range(10), bad)
    with pytest.raises(ValueError, match="non-negative counts"):  # torch takes these
        data.random_split(range(10), [11, -1])


def test_subset_random_sampler_permutes_its_indices_each_epoch() -> None:
    indices = [3, 8, 1, 40, 7, 22]
    sampler = data.SubsetRandomSampler(indices, generator=tw.Generator().manual_seed(2))
    assert len(sampler) == len(tdata.SubsetRandomSampler(indices)) == 6
    first, second = list(sampler), list(sampler)
    assert sorted(first) == sorted(second) == sorted(indices)
    assert first != second, "each epoch draws anew"
    again = data.SubsetRandomSampler(indices, generator=tw.Generator().manual_seed(2))
    assert list(again) == first
    order = tw.randperm(6, generator=tw.Generator().manual_seed(2)).tolist()
    assert first == [indices[i] for i in order], "tw.randperm(len(indices)), as PyTorch"
    tw.manual_seed(5)
    unseeded = list(data.SubsetRandomSampler(indices))
    tw.manual_seed(5)
    assert list(data.SubsetRandomSampler(indices)) == unseeded


def test_weighted_random_sampler_draws_by_weight() -> None:
    weights = [0.0, 1.0, 3.0, 0.0, 6.0]
    sampler = data.WeightedRandomSampler(weights, 3000, generator=tw.Generator().manual_seed(0))
    assert len(sampler) == len(tdata.WeightedRandomSampler(weights, 3000)) == 3000
    counts = Counter(sampler)
    assert set(counts) == {1, 2, 4}, "zero weights are never drawn"
    np.testing.assert_allclose([counts[i] / 3000 for i in (1, 2, 4)], [0.1, 0.3, 0.6], atol=0.04)
    distinct = list(data.WeightedRandomSampler(weights, 3, replacement=False))
    assert sorted(distinct) == [1, 2, 4]


def test_weighted_random_sampler_errors_like_torch() -> None:
    cases = [
        (([1.0, 2.0], 0), {}),
        (([1.0, 2.0], 2.0), {}),
        (([1.0, 2.0], 2), {"replacement": 1}),
        (([[1.0, 2.0]], 2), {}),
    ]
    for args, kwargs in cases:
        with pytest.raises(ValueError):
            tdata.WeightedRandomSampler(*args, **kwargs)
        with pytest.raises(ValueError, match="WeightedRandomSampler"):
            data.WeightedRandomSampler(*args, **kwargs)


@pytest.mark.parametrize("drop_last", [False, True])
def test_batch_sampler_matches_torch(drop_last: bool) -> None:
    order = [5, 3, 9, 0, 1, 1, 7]
    ours, ref = data.BatchSampler(order, 3, drop_last), tdata.BatchSampler(order, 3, drop_last)
    assert list(ours) == list(ref)
    assert len(ours) == len(ref)
    items = list(range(100, 110))
    loader = data.DataLoader(items, batch_sampler=ours)
    ref_loader = tdata.DataLoader(items, batch_sampler=ref)
    assert len(loader) == len(ref_loader)
    got, expected = list(loader), list(ref_loader)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert_same(a, b)
    for bad in ({"batch_size": 0}, {"batch_size": True}, {"drop_last": 1}):
        kwargs = {"batch_size": 2, "drop_last": False, **bad}
        with pytest.raises(ValueError):
            tdata.BatchSampler(order, **kwargs)
        with pytest.raises(ValueError, match="BatchSampler"):
            data.BatchSampler(order, **kwargs)
