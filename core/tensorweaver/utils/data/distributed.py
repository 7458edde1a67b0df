"""``DistributedSampler``: the share of a dataset one of ``num_replicas`` processes reads
(``torch.utils.data.distributed``).

Every replica orders the whole dataset the same way (shuffled by a generator seeded with
``seed + epoch``, so ``set_epoch`` gives each epoch a new order), pads it by repeating
indices to a multiple of ``num_replicas`` (or, with ``drop_last``, trims it), and takes every
``num_replicas``-th index starting at ``rank``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from typing import Optional, TypeVar

from tensorweaver.random import Generator, draw_permutation
from tensorweaver.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]

T_co = TypeVar("T_co", covariant=True)


class NoProcessGroupError(ValueError, RuntimeError):
    """A sampler left to take ``num_replicas`` or ``rank`` from a process group, where none
    exists: a ``ValueError``, as PyTorch 2.13's, and a ``RuntimeError``, as its older
    versions' (and TensorWeaver's before)."""


class DistributedSampler(Sampler[T_co]):
    """The indices of ``dataset`` that replica ``rank`` of ``num_replicas`` reads.

    TensorWeaver has no process groups (a backend scales a single script out instead), so
    ``num_replicas`` and ``rank`` must be given."""

    def __init__(
        self,
        dataset: Sized,
        num_replicas: Optional[int] = None,
        rank: Optional[int] = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            raise NoProcessGroupError(
                "DistributedSampler: pass num_replicas and rank; tensorweaver has no process "
                "group to take them from (tw.distributed.is_initialized() is False)"
            )
        if rank >= num_replicas or rank < 0:
            raise ValueError(
                f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]"
            )
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            # whole rounds only: the last, incomplete one is dropped
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[T_co]:
        n = len(self.dataset)
        if self.shuffle:
            generator = Generator().manual_seed(self.seed + self.epoch)
            indices = draw_permutation(generator, n).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[: self.total_size]
        else:
            padding = self.total_size - len(indices)
            indices += (indices * math.ceil(padding / len(indices)))[:padding] if padding else []
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` in the shuffle's seed: call it before each epoch's iteration so
        every epoch has its own order (the same on every replica)."""
        self.epoch = epoch
