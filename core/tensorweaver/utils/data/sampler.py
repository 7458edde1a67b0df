"""Samplers: the indices (or batches of indices) of an epoch, as in ``torch.utils.data.sampler``.

Index shuffling is host work, drawn with a :class:`tw.Generator <tensorweaver.random.Generator>`
as in PyTorch: a ``RandomSampler`` with a ``generator`` draws each epoch's order from it, so
each epoch has a new order and a run repeats exactly; without one, each epoch starts a
generator from a seed drawn from ``tw.default_generator``, so ``tw.manual_seed`` makes
shuffling repeatable. ``SubsetRandomSampler`` and ``WeightedRandomSampler`` draw from their
``generator``, or from ``tw.default_generator``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Any, Generic, TypeVar

import numpy as np

import tensorweaver as tw
from tensorweaver.random import (
    Generator,
    check_generator,
    default_generator,
    draw_integers,
    draw_permutation,
)

T_co = TypeVar("T_co", covariant=True)


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def seed_from(generator: Generator | None) -> int:
    """A seed in [0, 2**63) drawn from ``generator`` (default: ``tw.default_generator``)."""
    source = default_generator if generator is None else generator
    return int(draw_integers(source, (), 0, 2**63 - 1))


class Sampler(Generic[T_co]):
    """The indices of one epoch: subclasses implement ``__iter__`` (and ``__len__``)."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler[int]):
    """``0, 1, ..., len(data_source) - 1``, every epoch."""

    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Indices in random order, as PyTorch's: each epoch a fresh permutation (repeated, and
    cut, to give ``num_samples``), or with ``replacement`` ``num_samples`` independent
    draws. ``generator`` supplies the draws (see the module for the default)."""

    def __init__(
        self,
        data_source: Sized,
        replacement: bool = False,
        num_samples: int | None = None,
        generator: Generator | None = None,
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(
                f"RandomSampler: replacement should be a boolean value, got {replacement!r}"
            )
        if generator is not None:
            check_generator(generator, "RandomSampler")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not _positive_int(self.num_samples):
            raise ValueError(
                f"RandomSampler: num_samples should be a positive integer, got {self.num_samples!r}"
            )

    @property
    def num_samples(self) -> int:
        """``num_samples``, or the data source's current length."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def order(self) -> np.ndarray:
        """One epoch's indices (int64): what iterating the sampler yields."""
        n = len(self.data_source)
        generator = self.generator
        if generator is None:
            generator = Generator().manual_seed(seed_from(None))
        if self.replacement:
            return draw_integers(generator, (self.num_samples,), 0, n)
        # As PyTorch: one permutation per whole pass, and one more cut to what is left.
        runs = [draw_permutation(generator, n) for _ in range(self.num_samples // n + 1)]
        return np.concatenate(runs)[: self.num_samples]

    def __iter__(self) -> Iterator[int]:
        # A generator, as PyTorch's: nothing is drawn before the first index is asked for.
        yield from self.order().tolist()

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The elements of ``indices`` in a random order, a new one each epoch."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        if generator is not None:
            check_generator(generator, "SubsetRandomSampler")
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        source = default_generator if self.generator is None else self.generator
        for i in draw_permutation(source, len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices in ``[0, len(weights))`` drawn with probabilities proportional
    to ``weights`` (``tw.multinomial``), with or without replacement."""

    def __init__(
        self,
        weights: Sequence[float],
        num_samples: int,
        replacement: bool = True,
        generator: Generator | None = None,
    ) -> None:
        if not _positive_int(num_samples):
            raise ValueError(
                "WeightedRandomSampler: num_samples should be a positive integer value, but got "
                f"num_samples={num_samples!r}"
            )
        if not isinstance(replacement, bool):
            raise ValueError(
                "WeightedRandomSampler: replacement should be a boolean value, but got "
                f"replacement={replacement!r}"
            )
        if generator is not None:
            check_generator(generator, "WeightedRandomSampler")
        weights_tensor = tw.as_tensor(weights, dtype=tw.float64)
        if weights_tensor.ndim != 1:
            raise ValueError(
                "WeightedRandomSampler: weights should be a 1d sequence but given weights have "
                f"shape {tuple(weights_tensor.shape)}"
            )
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        # A generator, as PyTorch's: nothing is drawn before the first index is asked for.
        source = default_generator if self.generator is None else self.generator
        drawn = tw.multinomial(self.weights, self.num_samples, self.replacement, generator=source)
        yield from drawn.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """The indices of ``sampler`` in lists of ``batch_size`` (the last one shorter, or left
    out with ``drop_last``)."""

    def __init__(
        self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool
    ) -> None:
        if not _positive_int(batch_size):
            raise ValueError(
                "BatchSampler: batch_size should be a positive integer value, but got "
                f"batch_size={batch_size!r}"
            )
        if not isinstance(drop_last, bool):
            raise ValueError(
                "BatchSampler: drop_last should be a boolean value, but got "
                f"drop_last={drop_last!r}"
            )
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


class InfiniteConstantSampler(Sampler[None]):
    """``None`` forever: the placeholder indices of an iterable dataset's batches."""

    def __iter__(self) -> Iterator[None]:
        while True:
            yield None
