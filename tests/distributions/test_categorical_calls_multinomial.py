"""``Categorical.sample`` (and ``OneHotCategorical``'s) draws through the library's
``multinomial`` looked up at call time, as ``torch.distributions`` calls ``torch.multinomial``:
a patched ``multinomial`` (a test double, a port harness sharing draws) is the one used."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch


def fixed_draws(lib, seen):
    def multinomial(input, num_samples, replacement=False, **_):
        seen.append((tuple(input.shape), num_samples, replacement))
        rows = input.shape[0] if input.dim() == 2 else 1
        drawn = np.arange(rows * num_samples).reshape(rows, num_samples) % input.shape[-1]
        return lib.tensor(drawn, dtype=lib.int64)

    return multinomial


@pytest.mark.parametrize("one_hot", [False, True])
def test_sample_uses_the_patched_multinomial_like_torch(
    backend: str, monkeypatch: pytest.MonkeyPatch, one_hot: bool
) -> None:
    probs = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    results = []
    for lib in (tw, torch):
        seen = []
        monkeypatch.setattr(lib, "multinomial", fixed_draws(lib, seen))
        dist = lib.distributions
        made = dist.OneHotCategorical if one_hot else dist.Categorical
        drawn = made(probs=lib.tensor(probs)).sample((4,))
        results.append((np.asarray(drawn.tolist()), seen))
    (ours, our_calls), (theirs, their_calls) = results
    assert our_calls == their_calls and our_calls, "multinomial was not called as torch calls it"
    np.testing.assert_array_equal(ours, theirs)
