"""tensorweaver.utils.data against torch.utils.data: same batches, same collate results, same
split sizes; shuffling covers every sample once per epoch and repeats from its seed."""

from __future__ import annotations

import warnings
from collections import namedtuple

import numpy as np
import pytest
import tensorweaver as tw
import torch
from data_reference import assert_same
from tensorweaver.utils import data
from torch.utils import data as tdata

Point = namedtuple("Point", "x y")


def tensors(n: int = 23) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, 3, 2)), rng.integers(0, 10, n)


def epoch_rows(loader: data.DataLoader) -> list[np.ndarray]:
    """The sample numbers of each batch of one epoch (the dataset's second tensor is arange)."""
    return [batch[1].numpy() for batch in loader]


# --- datasets -------------------------------------------------------------------------------


def test_tensor_dataset_items_and_errors() -> None:
    x, y = tensors()
    ours = data.TensorDataset(tw.tensor(x), tw.tensor(y))
    ref = tdata.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
    assert len(ours) == len(ref)
    for i in (0, 5, -1):
        assert_same(ours[i], ref[i])
    # PyTorch's classes: an AssertionError for sizes that differ; no tensors is a dataset
    # whose len() raises IndexError
    for lib, tensor in ((data, tw.tensor), (tdata, torch.from_numpy)):
        with pytest.raises(AssertionError, match="Size mismatch between tensors"):
            lib.TensorDataset(tensor(x), tensor(np.zeros(4)))
        with pytest.raises(IndexError):
            len(lib.TensorDataset())
    with pytest.raises(NotImplementedError, match="Plain must implement __getitem__"):
        type("Plain", (data.Dataset,), {})()[0]


def test_subset_indexing_matches_torch() -> None:
    items = list(range(10, 20))
    ours, ref = data.Subset(items, [3, 1, -1]), tdata.Subset(items, [3, 1, -1])
    assert len(ours) == len(ref) == 3
    assert [ours[i] for i in range(3)] == [ref[i] for i in range(3)] == [13, 11, 19]


# --- loading in order: the same batches as torch ----------------------------------------------


@pytest.mark.parametrize("batch_size", [1, 4, 5, 23, 30])
@pytest.mark.parametrize("drop_last", [False, True])
def test_ordered_batches_match_torch(batch_size: int, drop_last: bool) -> None:
    x, y = tensors()
    ours = data.DataLoader(
        data.TensorDataset(tw.tensor(x), tw.tensor(y)), batch_size=batch_size, drop_last=drop_last
    )
    ref = tdata.DataLoader(
        tdata.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)),
        batch_size=batch_size,
        drop_last=drop_last,
    )
    assert len(ours) == len(ref)
    got, expected = list(ours), list(ref)
    assert len(got) == len(expected) == len(ours)
    for a, b in zip(got, expected):
        assert_same(a, b)


def test_python_dataset_with_structured_samples_matches_torch() -> None:
    class Samples:
        def __init__(self, convert: object) -> None:
            self.convert = convert

        def __len__(self) -> int:
            return 7

        def __getitem__(self, i: int) -> dict:
            rng = np.random.default_rng(i)
            return {
                "image": self.convert(rng.standard_normal((2, 2))),
                "label": i,
                "weight": i / 2,
                "flag": i % 2 == 0,
                "name": f"s{i}",
                "pair": (np.float32(i), rng.integers(0, 5, 3)),
                "point": Point(i, [i, i + 1]),
            }

    ours = list(data.DataLoader(Samples(tw.tensor), batch_size=3))
    ref = list(tdata.DataLoader(Samples(torch.from_numpy), batch_size=3))
    assert len(ours) == len(ref) == 3
    for a, b in zip(ours, ref):
        assert_same(a, b)


def test_default_collate_errors() -> None:
    with pytest.raises(RuntimeError, match="same length"):
        data.default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="found object"):
        data.default_collate([object(), object()])
    with pytest.raises(TypeError, match="NumPy dtype <U1"):
        data.default_collate([np.array(["a"]), np.array(["b"])])


def test_custom_collate_fn_gets_the_samples() -> None:
    seen = []

    def collate(samples: list) -> int:
        seen.append(samples)
        return len(samples)

    loader = data.DataLoader(list(range(10)), batch_size=4, collate_fn=collate)
    assert list(loader) == [4, 4, 2]
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def test_batch_size_is_checked() -> None:
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="batch_size should be a positive integer"):
            data.DataLoader(list(range(3)), batch_size=bad)


# --- shuffling ------------------------------------------------------------------------------


def shuffled(seed: int | None, drop_last: bool = False, n: int = 23, bs: int = 5):
    x = np.random.default_rng(1).standard_normal((n, 2))
    dataset = data.TensorDataset(tw.tensor(x), tw.arange(n))
    return data.DataLoader(dataset, batch_size=bs, shuffle=True, drop_last=drop_last, seed=seed)


@pytest.mark.parametrize("drop_last", [False, True])
def test_shuffled_epochs_cover_every_sample_once(drop_last: bool) -> None:
    loader = shuffled(seed=3, drop_last=drop_last)
    ref_len = len(tdata.DataLoader(list(range(23)), batch_size=5, drop_last=drop_last))
    assert len(loader) == ref_len == (4 if drop_last else 5)
    epochs = []
    for _ in range(3):
        rows = epoch_rows(loader)
        assert len(rows) == len(loader)
        assert [len(r) for r in rows] == [5, 5, 5, 5] + ([] if drop_last else [3])
        flat = np.concatenate(rows)
        assert len(set(flat.tolist())) == len(flat), "no sample twice in an epoch"
        if not drop_last:
            np.testing.assert_array_equal(np.sort(flat), np.arange(23))
        epochs.append(flat)
    assert not np.array_equal(epochs[0], epochs[1]), "each epoch has a new order"


def test_shuffled_batches_pair_each_sample_with_its_own_rows() -> None:
    loader = shuffled(seed=0)
    x = loader.dataset.tensors[0].numpy()
    for features, rows in loader:
        np.testing.assert_array_equal(features.numpy(), x[rows.numpy()])


def test_seed_and_manual_seed_make_shuffling_repeatable() -> None:
    first, again, other = shuffled(seed=7), shuffled(seed=7), shuffled(seed=8)
    runs = [[epoch_rows(loader) for _ in range(2)] for loader in (first, again, other)]
    assert all(np.array_equal(a, b) for a, b in zip(runs[0][0], runs[1][0]))
    assert all(np.array_equal(a, b) for a, b in zip(runs[0][1], runs[1][1]))
    assert not np.array_equal(np.concatenate(runs[0][0]), np.concatenate(runs[2][0]))

    unseeded = shuffled(seed=None)
    tw.manual_seed(11)
    a = np.concatenate(epoch_rows(unseeded))
    tw.manual_seed(11)
    b = np.concatenate(epoch_rows(unseeded))
    c = np.concatenate(epoch_rows(unseeded))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


@pytest.mark.parametrize("subset", [False, True])
def test_fast_path_equals_collating_each_sample(subset: bool) -> None:
    x, y = tensors()
    dataset = data.TensorDataset(tw.tensor(x), tw.tensor(y), tw.tensor(x[:, 0, 0] > 0))
    if subset:
        dataset = data.Subset(data.Subset(dataset, list(range(22, -1, -1))), [0, 5, -1, 7, 2, 9])

    def slow(samples: list) -> object:  # not default_collate itself, so no fast path
        return data.default_collate(samples)

    for shuffle in (False, True):
        fast_loader = data.DataLoader(dataset, batch_size=4, shuffle=shuffle, seed=5)
        slow_loader = data.DataLoader(
            dataset, batch_size=4, shuffle=shuffle, seed=5, collate_fn=slow
        )
        fast, reference = list(fast_loader), list(slow_loader)
        assert len(fast) == len(reference) == len(fast_loader)
        for a, b in zip(fast, reference):
            assert_same(a, b)


# --- random_split ---------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Length of split at index:UserWarning")  # torch's own
@pytest.mark.parametrize(
    ("n", "lengths"),
    [(10, [3, 7]), (10, [0.3, 0.7]), (11, [0.5, 0.5]), (7, [0.1, 0.2, 0.7]), (5, [1.0, 0.0])],
)
def test_random_split_sizes_match_torch_and_cover_everything(n: int, lengths: list) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = data.random_split(list(range(n)), lengths, generator_seed=0)
    assert len(caught) == (1 if 0.0 in lengths else 0), "an empty split is warned about"
    ref = tdata.random_split(list(range(n)), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [len(p) for p in ref]
    items = [p[i] for p in parts for i in range(len(p))]
    assert sorted(items) == list(range(n))


def test_random_split_is_repeatable_and_checks_lengths() -> None:
    def split(seed: int) -> list:
        return [
            p.indices for p in data.random_split(list(range(50)), [20, 30], generator_seed=seed)
        ]

    assert split(4) == split(4)
    assert split(4) != split(5)
    tw.manual_seed(2)
    a = [p.indices for p in data.random_split(list(range(50)), [0.5, 0.5])]
    tw.manual_seed(2)
    assert a == [p.indices for p in data.random_split(list(range(50)), [0.5, 0.5])]
    with pytest.raises(ValueError, match="summing to the dataset's length 50"):
        data.random_split(list(range(50)), [20, 20])
    with pytest.raises(ValueError, match="not in"):
        data.random_split(list(range(50)), [1.5, -0.5])
