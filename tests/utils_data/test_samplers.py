"""Samplers and generators in tensorweaver.utils.data against torch.utils.data: the index
streams of ``SequentialSampler`` and ``RandomSampler`` (lengths, replacement, errors),
``DataLoader(sampler=, generator=)`` and ``random_split(generator=)``."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from tensorweaver.utils import data
from torch.utils import data as tdata


def rows(n: int = 20) -> data.TensorDataset:
    return data.TensorDataset(tw.arange(n) * 10, tw.arange(n))


def epoch(loader: data.DataLoader) -> list[list[int]]:
    return [batch[1].tolist() for batch in loader]


def test_sequential_sampler_like_torch() -> None:
    assert list(data.SequentialSampler(range(7))) == list(tdata.SequentialSampler(range(7)))
    assert len(data.SequentialSampler(range(7))) == 7


@pytest.mark.parametrize(
    ("replacement", "num_samples"),
    [(False, None), (False, 45), (False, 8), (True, None), (True, 50)],
)
def test_random_sampler_draws_what_torch_draws(replacement: bool, num_samples: int | None) -> None:
    ours = data.RandomSampler(range(20), replacement, num_samples, tw.Generator().manual_seed(0))
    theirs = tdata.RandomSampler(range(20), replacement, num_samples)
    assert len(ours) == len(theirs)
    first, second = list(ours), list(ours)
    assert len(first) == len(theirs) and set(first) <= set(range(20))
    assert first != second, "each epoch draws anew"
    if not replacement:  # whole permutations, then one cut short
        for start in range(0, len(first) - len(first) % 20, 20):
            assert sorted(first[start : start + 20]) == list(range(20))
        assert len(set(first[len(first) - len(first) % 20 :])) == len(first) % 20
    if replacement and num_samples is None:  # 20 independent draws of 20: a repeat is all but sure
        assert len(set(first)) < 20


def test_random_sampler_errors_like_torch() -> None:
    for m in (data, tdata):
        with pytest.raises(TypeError, match="replacement"):
            m.RandomSampler(range(3), replacement=1)
        with pytest.raises(ValueError, match="num_samples"):
            m.RandomSampler(range(3), num_samples=0)
    with pytest.raises(TypeError, match="tw.Generator"):
        data.RandomSampler(range(3), generator=torch.Generator())


def test_data_loader_takes_a_sampler_like_torch() -> None:
    order = [5, 3, 3, 0, 19, 7, 1]

    def slow(samples: list) -> object:  # not default_collate itself: no fast path
        return data.default_collate(samples)

    reference = [b.tolist() for b in tdata.DataLoader(list(range(20)), 3, sampler=order)]
    for collate in (None, slow):
        loader = data.DataLoader(rows(), 3, sampler=order, collate_fn=collate)
        assert len(loader) == 3
        assert epoch(loader) == reference
    assert len(data.DataLoader(rows(), 3, drop_last=True, sampler=order)) == 2
    with pytest.raises(ValueError, match="mutually exclusive"):
        tdata.DataLoader(list(range(20)), 3, shuffle=True, sampler=order)
    with pytest.raises(ValueError, match="mutually exclusive"):
        data.DataLoader(rows(), 3, shuffle=True, sampler=order)
    sampler = data.RandomSampler(rows(), generator=tw.Generator().manual_seed(1))
    expected = list(data.RandomSampler(rows(), generator=tw.Generator().manual_seed(1)))
    flat = [i for b in epoch(data.DataLoader(rows(), 6, sampler=sampler)) for i in b]
    assert flat == expected


def test_data_loader_generator_drives_the_shuffling() -> None:
    def loader(generator: tw.Generator | None = None, seed: int | None = None) -> list:
        return data.DataLoader(rows(), 4, shuffle=True, seed=seed, generator=generator)

    a, b = loader(tw.Generator().manual_seed(3)), loader(tw.Generator().manual_seed(3))
    assert epoch(a) == epoch(b) and epoch(a) == epoch(b)
    assert epoch(a) != epoch(loader(tw.Generator().manual_seed(3)))  # a's generator moved on
    assert epoch(loader(seed=3)) == epoch(loader(tw.Generator().manual_seed(3)))
    g = tw.Generator().manual_seed(3)
    expected = tw.randperm(20, generator=tw.Generator().manual_seed(3)).tolist()
    assert [i for batch in epoch(loader(g)) for i in batch] == expected
    with pytest.raises(ValueError, match="seed or generator"):
        loader(tw.Generator(), seed=1)


def test_random_split_takes_a_generator_like_torch() -> None:
    def split(**kw: object) -> list[list[int]]:
        return [list(s.indices) for s in data.random_split(range(30), [0.5, 0.3, 0.2], **kw)]

    ours = split(generator=tw.Generator().manual_seed(4))
    order = tw.randperm(30, generator=tw.Generator().manual_seed(4)).tolist()
    assert ours == [order[:15], order[15:24], order[24:]]
    parts = tdata.random_split(range(30), [0.5, 0.3, 0.2], generator=torch.Generator())
    assert [len(p) for p in ours] == [len(p) for p in parts]
    assert split(generator_seed=4) == ours
    tw.manual_seed(9)
    first, second = split(), split()
    tw.manual_seed(9)
    assert split() == first != second
    with pytest.raises(ValueError, match="generator or generator_seed"):
        split(generator=tw.Generator(), generator_seed=1)
    with pytest.raises(TypeError, match="tw.Generator"):
        split(generator=torch.Generator())
