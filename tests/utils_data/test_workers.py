"""DataLoader with worker processes (num_workers=2) against num_workers=0 and against
torch.utils.data's loader: the same batches in sampler order, seeding and get_worker_info,
worker_init_fn, IterableDataset sharding, persistent workers, and the failures (a worker's
exception, a killed worker, a timeout) raised in the main process, with no process left."""

from __future__ import annotations

import gc
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorweaver as tw
import torch
from data_reference import assert_same
from tensorweaver.utils import data
from tensorweaver.utils.data.sampler import seed_from
from torch import _utils as torch_utils
from torch.utils import data as tdata


@pytest.fixture(autouse=True)
def no_worker_left() -> None:
    """Every test leaves no worker process behind once its loaders are gone."""
    # Objects made before the test are frozen, so the collection below walks only the test's
    # own (a whole collection of a worker's heap late in the suite costs seconds).
    gc.freeze()
    try:
        yield
        if multiprocessing.active_children():
            gc.collect()  # a loader held in a reference cycle (an exception's traceback)
    finally:
        gc.unfreeze()
    deadline = time.monotonic() + 5
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []


class Samples:
    """Nested samples of NumPy arrays and Python values; ``tensor`` makes the library's tensor."""

    def __init__(self, tensor: object, n: int = 23) -> None:
        self.tensor, self.n = tensor, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> dict:
        rng = np.random.default_rng(i)
        return {
            "x": self.tensor(rng.standard_normal((2, 3)).astype(np.float32)),
            "mask": self.tensor(rng.random(3) > 0.5),
            "codes": rng.integers(0, 9, 4).astype(np.int16),
            "label": i,
            "weight": i / 3,
            "name": f"s{i}",
            "pair": (i, np.float64(i) / 2),
        }


ORDER = [5, 3, 3, 0, 22, 7, 1, 12, 11, 19, 2]


@pytest.mark.parametrize("drop_last", [False, True])
def test_workers_give_the_batches_of_one_process_and_of_torch(drop_last: bool) -> None:
    def ours(num_workers: int, **kw: object) -> list:
        loader = data.DataLoader(
            Samples(tw.tensor), 3, sampler=ORDER, drop_last=drop_last, num_workers=num_workers, **kw
        )
        assert len(loader) == (3 if drop_last else 4)
        return list(loader)

    ref = list(tdata.DataLoader(Samples(torch.from_numpy), 3, sampler=ORDER, drop_last=drop_last))
    single, workers = ours(0), ours(2)
    assert len(single) == len(workers) == len(ref)
    for a, b, c in zip(single, workers, ref):
        assert_same(a, c)
        assert_same(b, c)
    unordered = ours(2, in_order=False, prefetch_factor=1)
    key = [tuple(b["label"].tolist()) for b in unordered]
    assert sorted(key) == sorted(tuple(b["label"].tolist()) for b in ref)


def test_tensor_dataset_in_workers_matches_one_process() -> None:
    rng = np.random.default_rng(0)
    x = tw.tensor(rng.standard_normal((30, 4)))
    dataset = data.TensorDataset(x, tw.arange(30), x[:, 0] > 0)
    subset = data.Subset(dataset, list(range(29, -1, -2)))
    for ds in (dataset, subset):
        batches = []
        for num_workers in (0, 2):
            sampler = data.RandomSampler(ds, generator=tw.Generator().manual_seed(4))
            loader = data.DataLoader(ds, 4, sampler=sampler, num_workers=num_workers)
            batches.append(list(loader))
        assert len(batches[0]) == len(batches[1]) == len(loader)
        for a, b in zip(*batches):
            assert [t.dtype for t in a] == [t.dtype for t in b] == [tw.float64, tw.int64, tw.bool]
            for s, t in zip(a, b):
                np.testing.assert_array_equal(s.numpy(), t.numpy())


def test_batches_are_rebuilt_on_the_default_device() -> None:
    loader = data.DataLoader(data.TensorDataset(tw.arange(6.0)), 2, num_workers=2)
    with tw.device("torch:cpu"):
        batches = list(loader)
    assert [b[0].device.name for b in batches] == [tw.tensor(0, device="torch:cpu").device.name] * 3
    np.testing.assert_array_equal(np.concatenate([b[0].numpy() for b in batches]), np.arange(6.0))


def test_no_batching_in_workers_matches_torch() -> None:
    items = [(np.arange(3) * i, i, f"n{i}") for i in range(5)]
    ours = list(data.DataLoader(items, batch_size=None, num_workers=2))
    ref = list(tdata.DataLoader(items, batch_size=None))
    assert len(ours) == len(ref) == 5
    for a, b in zip(ours, ref):
        assert_same(a, b)


# --- seeds, worker_init_fn, get_worker_info ---------------------------------------------------


class Draws:
    """Sample ``i``: which worker made it and what its random streams give."""

    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> dict:
        info = data.get_worker_info()
        return {
            "id": info.id,
            "num_workers": info.num_workers,
            "seed": info.seed,
            "tag": getattr(info.dataset, "tag", -1),
            "random": random.random(),
            "numpy": np.random.random(),
            "tw": tw.rand(()).item(),
            "device": tw.rand(()).device.name,
        }


def tag_worker(worker_id: int) -> None:
    """A worker_init_fn: marks this worker's copy of the dataset."""
    info = data.get_worker_info()
    assert info.id == worker_id
    info.dataset.tag = 10 + worker_id


def test_worker_info_seeds_and_init_fn() -> None:
    assert data.get_worker_info() is None, "None in the main process"

    def run() -> list[dict]:
        loader = data.DataLoader(
            Draws(), batch_size=None, num_workers=2, worker_init_fn=tag_worker, seed=3
        )
        return list(loader)

    first, again = run(), run()
    base = seed_from(tw.Generator().manual_seed(3))  # the loader's first draw, as PyTorch
    assert [s["id"] for s in first] == [0, 1, 0, 1], "batches go to the workers in turn"
    assert all(s["num_workers"] == 2 for s in first)
    assert [s["seed"] for s in first] == [base, base + 1, base, base + 1]
    assert [s["tag"] for s in first] == [10, 11, 10, 11]
    host = tw.tensor(0, device="numpy").device.name
    assert {s["device"] for s in first} == {host}, "workers make their tensors on the host"
    for stream in ("random", "numpy", "tw"):
        values = [s[stream] for s in first]
        assert values[0] != values[1], f"workers draw different {stream} numbers"
        assert values == [s[stream] for s in again], f"{stream} repeats with the seed"
    random.seed(first[0]["seed"])
    assert first[0]["random"] == random.random(), "random is seeded with base_seed + id"
    info = data.get_worker_info  # WorkerInfo is read-only
    with pytest.raises(RuntimeError, match="Cannot assign"):
        data.WorkerInfo(0, 1, 0, None).id = 2
    assert info() is None


# --- iterable datasets ---------------------------------------------------------------------------


class Shards:
    """The numbers ``0 .. n-1``; each worker yields only its share when ``shard``."""

    def __init__(self, n: int, shard: bool, worker_info: object) -> None:
        self.n, self.shard, self.worker_info = n, shard, worker_info

    def __iter__(self):
        info = self.worker_info()
        if not self.shard or info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self) -> int:
        return self.n


class OurShards(Shards, data.IterableDataset):
    pass


class TorchShards(Shards, tdata.IterableDataset):
    pass


@pytest.mark.parametrize(("shard", "batch_size", "drop_last"), [(True, 3, False), (False, 2, True)])
def test_iterable_dataset_in_workers_matches_torch(
    shard: bool, batch_size: int, drop_last: bool
) -> None:
    ours = data.DataLoader(
        OurShards(11, shard, data.get_worker_info),
        batch_size,
        num_workers=2,
        drop_last=drop_last,
    )
    ref = tdata.DataLoader(
        TorchShards(11, shard, tdata.get_worker_info),
        batch_size,
        num_workers=2,
        drop_last=drop_last,
    )
    got, expected = [b.tolist() for b in ours], [b.tolist() for b in ref]
    assert got == expected
    assert len(ours) == len(ref)
    single = [b.tolist() for b in data.DataLoader(OurShards(11, shard, data.get_worker_info), 3)]
    assert [i for b in single for i in b] == list(range(11))


def test_iterable_dataset_rejects_shuffle_and_samplers_like_torch() -> None:
    for kw in ({"shuffle": True}, {"sampler": [0]}, {"batch_sampler": [[0]]}):
        with pytest.raises(ValueError, match="IterableDataset"):
            tdata.DataLoader(TorchShards(3, False, None), **kw)
        with pytest.raises(ValueError, match="IterableDataset"):
            data.DataLoader(OurShards(3, False, None), **kw)


# --- persistent workers ---------------------------------------------------------------------


class Pids:
    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> tuple[int, int]:
        return i, os.getpid()


def epoch(loader: data.DataLoader) -> tuple[list[int], set[int]]:
    samples = [s for b in loader for s in zip(*(t.tolist() for t in b))]
    return [i for i, _ in samples], {p for _, p in samples}


def test_persistent_workers_serve_every_epoch() -> None:
    loader = data.DataLoader(Pids(), 2, num_workers=2, persistent_workers=True)
    rows, pids = epoch(loader)
    assert rows == list(range(8)) and len(pids) == 2 and os.getpid() not in pids
    it = iter(loader)
    next(it)  # an epoch left unfinished: its results in flight are dropped
    for _ in range(2):
        assert epoch(loader) == (list(range(8)), pids), "same workers, every sample once"
    fresh = data.DataLoader(Pids(), 2, num_workers=2)
    assert epoch(fresh)[1].isdisjoint(epoch(fresh)[1]), "without persistence, new workers"
    del it, loader
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        data.DataLoader(Pids(), persistent_workers=True)


# --- failures -------------------------------------------------------------------------------


class Failing:
    """Raises ``error`` at index 5."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __len__(self) -> int:
        return 8

    def __getitem__(self, i: int) -> int:
        if i == 5:
            raise self.error
        return i


class LocalError(Exception):
    def __init__(self, code: int, detail: str) -> None:  # cannot be made from one message
        super().__init__(code, detail)


@pytest.mark.parametrize(
    ("error", "raised"),
    [
        (ValueError("bad sample"), ValueError),
        (KeyError("missing"), KeyError),
        (LocalError(3, "odd"), RuntimeError),
    ],
)
def test_a_worker_error_is_raised_here_with_its_traceback(error: Exception, raised: type) -> None:
    loader = data.DataLoader(Failing(error), 2, num_workers=2)
    seen = []
    with pytest.raises(raised) as caught:
        for batch in loader:
            seen.append(batch.tolist())
    message = str(caught.value)
    name = type(error).__name__
    assert f"Caught {name} in DataLoader worker process 0" in message
    assert "Original Traceback (most recent call last)" in message
    assert "in __getitem__" in message and "raise self.error" in message
    assert seen == [[0, 1], [2, 3]], "the batches before the failing one come first"
    # torch's own wrapper, raised here, gives the same type and first line.
    try:
        raise type(error)(*error.args)  # a copy: the parameter must not keep this traceback
    except type(error):
        wrapper = torch_utils.ExceptionWrapper(where="in DataLoader worker process 0")
    with pytest.raises(raised) as torch_caught:
        wrapper.reraise()
    assert str(torch_caught.value).splitlines()[0] == message.splitlines()[0]


class Killing:
    def __len__(self) -> int:
        return 6

    def __getitem__(self, i: int) -> int:
        if i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        return i


def test_a_killed_worker_is_reported_not_waited_for() -> None:
    start = time.monotonic()
    with pytest.raises(
        RuntimeError,
        match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly \(killed by SIGKILL\)",
    ):
        list(data.DataLoader(Killing(), 2, num_workers=2))
    assert time.monotonic() - start < 5


class Slow:
    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> int:
        if i == 2:
            time.sleep(0.6)
        return i


def test_timeout_raises_like_torch() -> None:
    loader = data.DataLoader(Slow(), 2, num_workers=2, timeout=0.1)
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.1 seconds"):
        list(loader)
    assert [b.tolist() for b in data.DataLoader(Slow(), 2, num_workers=2, timeout=5)] == [
        [0, 1],
        [2, 3],
    ]


def test_arguments_are_checked_like_torch() -> None:
    items = list(range(4))
    cases = [
        ({"num_workers": -1}, ValueError),
        ({"timeout": -1}, ValueError),
        ({"prefetch_factor": 2}, ValueError),
        ({"num_workers": 1, "prefetch_factor": -1}, ValueError),
        ({"persistent_workers": True}, ValueError),
        ({"multiprocessing_context": "fork"}, ValueError),
        ({"num_workers": 1, "multiprocessing_context": "no-such-method"}, ValueError),
        ({"num_workers": 1, "multiprocessing_context": 3}, TypeError),
        ({"batch_sampler": [[0]], "batch_size": 2}, ValueError),
        ({"batch_sampler": [[0]], "drop_last": True}, ValueError),
        ({"batch_size": None, "drop_last": True}, ValueError),
        ({"sampler": [0], "shuffle": True}, ValueError),
    ]
    for kwargs, error in cases:
        with pytest.raises(error):
            tdata.DataLoader(items, **kwargs)
        with pytest.raises(error, match="DataLoader"):
            data.DataLoader(items, **kwargs)
    loader = data.DataLoader(items, pin_memory=True, pin_memory_device="cuda")  # no-ops here
    assert [b.tolist() for b in loader] == [[0], [1], [2], [3]]
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        loader.batch_size = 2


def test_spawned_workers() -> None:
    items = [np.arange(3) * i for i in range(6)]
    loader = data.DataLoader(items, 2, num_workers=1, multiprocessing_context="spawn")
    assert [b.tolist() for b in loader] == [
        [[0, 0, 0], [0, 1, 2]],
        [[0, 2, 4], [0, 3, 6]],
        [[0, 4, 8], [0, 5, 10]],
    ]


def test_interpreter_exit_does_not_wait_for_workers() -> None:
    script = textwrap.dedent(
        """
        import tensorweaver as tw
        from tensorweaver.utils import data
        loader = data.DataLoader(data.TensorDataset(tw.arange(100)), 2, num_workers=2)
        it = iter(loader)
        print(next(it)[0].tolist())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0, 1]"
