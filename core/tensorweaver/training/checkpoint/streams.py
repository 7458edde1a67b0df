"""The random streams a resumed run must continue exactly, and how each is kept.

* Host streams (``tw.Generator``\\ s): ``tw.default_generator`` (shuffling without a seed,
  ``randperm``, augmentation) and the generators of the training ``DataLoader`` and its
  samplers (shuffling with ``fit(seed=...)``). Their states are saved and restored whole.
* The backends' streams (dropout, ``rand``, ``nn.init`` on a device) have no state to read
  through the IR, only ``seed``: a run that checkpoints reseeds each created backend before
  every training batch, and before each validation, from the run's seed and its position
  (optimizer steps done, batches done in the epoch). A
  resumed run then draws what the uninterrupted one drew, on every backend, without saving
  any backend state; in exchange a run with ``checkpoint_dir`` draws other numbers than
  the same run without it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensorweaver import registry
from tensorweaver.random import Generator, default_generator
from tensorweaver.tensor import Tensor

_MASK = 2**64 - 1
#: The last number of a training batch's, and of a validation's, position.
TRAIN, VALIDATION = 0, 1


def host_generators(loader: Any) -> list[Generator]:
    """``tw.default_generator`` and the generators that order ``loader``'s batches (its
    own, its sampler's, its batch sampler's sampler's), each once."""
    found = [default_generator]
    sampler = getattr(loader, "sampler", None)
    inner = getattr(getattr(loader, "batch_sampler", None), "sampler", None)
    for owner in (loader, sampler, inner):
        generator = getattr(owner, "generator", None)
        if isinstance(generator, Generator) and all(generator is not g for g in found):
            found.append(generator)
    return found


def snapshot(generators: Sequence[Generator]) -> list[Tensor]:
    """Each generator's state."""
    return [g.get_state() for g in generators]


def restore(generators: Sequence[Generator], states: Sequence[Tensor]) -> None:
    """Put each generator back in the state :func:`snapshot` saw."""
    for generator, state in zip(generators, states):
        generator.set_state(state)


def _splitmix64(x: int) -> int:
    """One step of SplitMix64: distinct inputs give unrelated 64-bit outputs."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def step_seed(base: int, *position: int) -> int:
    """The backends' seed at ``position`` (ints: where the run stands) in a run seeded
    ``base``; a 63-bit int."""
    value = _splitmix64(base)
    for number in position:
        value = _splitmix64(value ^ number)
    return value >> 1


def reseed_backends(base: int, *position: int) -> None:
    """Seed every backend created so far with :func:`step_seed`."""
    value = step_seed(base, *position)
    for backend in registry.created_backends():
        backend.seed(value)
