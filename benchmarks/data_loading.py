"""Data loading against a training step: do DataLoader's worker processes keep the step busy?

Run: python benchmarks/data_loading.py [--batches 12] [--repeat 5] [--threads 1]

The dataset is map-style; a sample is "decoded" from stored bytes (a 3x40x40 uint8 image to
float32), blurred (5x5 box filter), randomly cropped to 32x32, flipped and jittered with
NumPy's global stream, normalized and flattened: about 0.5 ms of NumPy and Python work
per sample, as decoding and augmenting a small image costs. Batches of 64 train an MLP
3072-256-256-10 (float32, cross-entropy, SGD) on the NumPy backend. Every candidate does
one epoch of ``--batches`` batches (wall clock: the workers are other processes):

  step           the training step alone, on batches loaded beforehand
  load-wN        tw DataLoader(num_workers=N) alone (persistent workers), N = 0, 1, 2
  train-wN       the training loop fed by that loader
  torch-load-wN  torch's DataLoader on the same dataset (its collate makes torch tensors)

Reported: samples/s of each loader, and ms per batch of the training loop with loading
against the step alone (busy = step / loop: 100% when loading is fully hidden). Worker
processes need free cores to hide loading: on a machine with two cores, shared, the
training step, and two workers compete for them.
"""

from __future__ import annotations

import itertools
from typing import Any, Callable

import harness
import numpy as np
import tensorweaver as tw
import tensorweaver.nn.functional as TF
import torch
from tensorweaver import nn
from tensorweaver.utils import data
from torch.utils import data as tdata

BATCH = 64
SIZES = (3 * 32 * 32, 256, 256, 10)
IMAGES = 256  # distinct stored images, reused round-robin
MEAN = np.array([0.49, 0.48, 0.45], np.float32)[:, None, None]
STD = np.array([0.25, 0.24, 0.26], np.float32)[:, None, None]


class Images:
    """Sample ``i``: (decoded, augmented, flattened image as float32, label ``i % 10``)."""

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(0)
        self.raw = [
            rng.integers(0, 256, 3 * 40 * 40, dtype=np.uint8).tobytes() for _ in range(IMAGES)
        ]
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[np.ndarray, int]:
        image = np.frombuffer(self.raw[i % IMAGES], dtype=np.uint8).reshape(3, 40, 40)
        image = image.astype(np.float32) / 255
        padded = np.pad(image, ((0, 0), (2, 2), (2, 2)), mode="edge")
        blurred = sum(padded[:, dy : dy + 40, dx : dx + 40] for dy in range(5) for dx in range(5))
        top, left = np.random.randint(0, 9, 2)
        crop = blurred[:, top : top + 32, left : left + 32] / 25
        if np.random.random() < 0.5:
            crop = crop[:, :, ::-1]
        crop = crop * np.random.uniform(0.8, 1.2) + np.random.uniform(-0.1, 0.1)
        return ((crop - MEAN) / STD).astype(np.float32).reshape(-1), i % 10


class Step:
    """One SGD step of the MLP on the NumPy backend."""

    def __init__(self) -> None:
        tw.manual_seed(0)
        with tw.device("numpy"):
            self.model = nn.Sequential(
                nn.Linear(SIZES[0], SIZES[1]),
                nn.ReLU(),
                nn.Linear(SIZES[1], SIZES[2]),
                nn.ReLU(),
                nn.Linear(SIZES[2], SIZES[3]),
            )
        self.optim = tw.optim.SGD(self.model.parameters(), lr=0.01)

    def __call__(self, x: tw.Tensor, y: tw.Tensor) -> None:
        self.optim.zero_grad()
        TF.cross_entropy(self.model(x), y).backward()
        self.optim.step()


def epoch(loader: Any, batches: int, step: Callable[[Any, Any], None] | None = None) -> None:
    """``batches`` batches of ``loader`` (one epoch), each given to ``step`` if there is one."""
    for x, y in itertools.islice(loader, batches):
        if step is not None:
            step(x, y)


def check_order(dataset: Images) -> None:
    """Worker loaders yield the batches of the single-process loader, in order (labels)."""
    want = [y.tolist() for _, y in data.DataLoader(dataset, BATCH)]
    got = [y.tolist() for _, y in data.DataLoader(dataset, BATCH, num_workers=2)]
    ref = [y.tolist() for _, y in tdata.DataLoader(dataset, BATCH, num_workers=2)]
    if not want == got == ref:
        raise AssertionError("num_workers=2 changed the order of the batches")


def main() -> None:
    p = harness.parser(__doc__, repeat=5, sample_ms=300, clock="wall")
    p.add_argument("--batches", type=int, default=12, help="batches per epoch")
    args = p.parse_args()
    harness.setup_torch(torch)
    dataset = Images(args.batches * BATCH)
    check_order(dataset)
    step = Step()
    loaders = {
        f"w{n}": data.DataLoader(dataset, BATCH, num_workers=n, persistent_workers=n > 0, seed=0)
        for n in (0, 1, 2)
    }
    torch_loaders = {
        f"w{n}": tdata.DataLoader(dataset, BATCH, num_workers=n, persistent_workers=n > 0)
        for n in (0, 2)
    }
    ready = list(loaders["w0"])
    candidates: dict[str, Callable[[], None]] = {
        "step": lambda: epoch(ready, args.batches, step),
    }
    for name, loader in loaders.items():
        candidates[f"load-{name}"] = lambda loader=loader: epoch(loader, args.batches)
        candidates[f"train-{name}"] = lambda loader=loader: epoch(loader, args.batches, step)
    for name, loader in torch_loaders.items():
        candidates[f"torch-load-{name}"] = lambda loader=loader: epoch(loader, args.batches)
    seconds = harness.measure(candidates, args)

    per_batch = {name: s / args.batches * 1e3 for name, s in seconds.items()}
    print(harness.describe(args, torch))
    print(
        f"{args.batches} batches of {BATCH} an epoch; a sample costs "
        f"{per_batch['load-w0'] / BATCH:.2f} ms to load in this process; MLP "
        f"{'-'.join(map(str, SIZES))} step {per_batch['step']:.1f} ms a batch (NumPy backend)"
    )
    print("loading alone (samples/s):")
    for name in [*(f"load-{n}" for n in loaders), *(f"torch-load-{n}" for n in torch_loaders)]:
        rate = BATCH / per_batch[name] * 1e3
        print(f"  {name:14s}{rate:9.0f}   {harness.ratio(per_batch['load-w0'], per_batch[name])}")
    print("training loop with loading (ms a batch; busy = step alone / loop):")
    for name in loaders:
        loop = per_batch[f"train-{name}"]
        print(f"  train-{name:8s}{loop:9.1f}   busy {per_batch['step'] / loop:6.1%}")
    print(f"  step alone    {per_batch['step']:9.1f}")


if __name__ == "__main__":
    main()
