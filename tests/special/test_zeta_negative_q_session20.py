"""The host Hurwitz zeta (the numpy backend's) with a negative q.

Before: ``zeta(1e-45, -1e30)`` never returned on the numpy backend: the direct sum ran
``-q`` steps for every element, also where the answer is decided without it (x < 1 is NaN,
an integer q <= 0 a pole, and every q below -2**53 is an integer)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.ops import special_host


def _both(x: list, q: list) -> tuple:
    ours = tw.special.zeta(
        tw.tensor(x, dtype=tw.float64, device="numpy"), tw.tensor(q, dtype=tw.float64)
    )
    theirs = torch.special.zeta(
        torch.tensor(x, dtype=torch.float64), torch.tensor(q, dtype=torch.float64)
    )
    return np.asarray(ours), theirs.numpy()


def test_decided_elements_sum_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # (a sum of -q terms would now raise at this limit instead of hanging)
    monkeypatch.setattr(special_host, "ZETA_TERM_LIMIT", 1000)
    ours, theirs = _both([1e-45, 2.0, 2.5, 1.0, 3.0], [-1e30, -1e30, -7.5, -1e20, -4.0])
    np.testing.assert_array_equal(ours, theirs)


def test_a_long_direct_sum_matches_torch() -> None:
    # (-q beyond the short loop's 64 terms: summed as whole arrays; the values cancel down
    # from terms of about 1, so they agree to the terms' rounding, not the result's)
    ours, theirs = _both([2.0, 3.0, 4.0, 2.0], [-5000.5, -100.3, -70.7, -3.5])
    np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-13)


def test_a_sum_the_host_cannot_finish_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(special_host, "ZETA_TERM_LIMIT", 1000)
    with pytest.raises(ValueError, match="zeta: q=-5000.5 needs 5011 terms"):
        tw.special.zeta(
            tw.tensor([2.0], dtype=tw.float64, device="numpy"),
            tw.tensor([-5000.5], dtype=tw.float64),
        )
