"""The host recurrence of torch.special's polynomials (the numpy backend's) refuses a degree
it would loop on for hours, and skips the loop where a closed form gives the value.

Before: ``legendre_polynomial_p(0.5, 2**40)`` and ``chebyshev_polynomial_u(0.5, 2**40)``
never returned on the numpy backend (a Python loop of n steps)."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from tensorweaver.special import polynomials


def _both(name: str, x: float, n: float) -> tuple:
    ours = getattr(tw.special, name)(
        tw.tensor([x], dtype=tw.float64, device="numpy"), tw.tensor([n], dtype=tw.float64)
    )
    theirs = getattr(torch.special, name)(
        torch.tensor([x], dtype=torch.float64), torch.tensor([n], dtype=torch.float64)
    )
    return ours.item(), theirs.item()


@pytest.mark.parametrize(
    ("name", "x"),
    [
        ("legendre_polynomial_p", 0.5),
        ("laguerre_polynomial_l", 0.5),
    ],
)
def test_a_degree_the_loop_cannot_reach_is_refused(
    name: str, x: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(polynomials, "HOST_STEP_LIMIT", 1000)  # (~2 s at its own 2**18)
    with pytest.raises(ValueError, match=f"{name}: degree n=1099511627776"):
        getattr(tw.special, name)(
            tw.tensor([x], dtype=tw.float64, device="numpy"),
            tw.tensor([2.0**40], dtype=tw.float64),
        )


@pytest.mark.parametrize(
    ("name", "x"),
    [
        ("chebyshev_polynomial_u", 0.5),  # closed forms inside [-1, 1]
        ("shifted_chebyshev_polynomial_u", 0.5),
        ("chebyshev_polynomial_t", -0.25),
        ("legendre_polynomial_p", 1.0),  # the interval's ends
        ("legendre_polynomial_p", -1.0),
        ("laguerre_polynomial_l", 0.0),
    ],
)
def test_closed_forms_answer_any_degree_as_torch(name: str, x: float) -> None:
    ours, theirs = _both(name, x, 2.0**20 + 1)
    assert ours == pytest.approx(theirs, rel=1e-6, abs=1e-9)
    ours, _ = _both(name, x, 2.0**40)  # (torch's value there is ill-conditioned too)
    assert abs(ours) < float("inf")


def test_a_loop_that_overflows_stops_early_at_any_degree() -> None:
    """Hermite's values reach inf within a few hundred steps: that ends the loop."""
    ours = tw.special.hermite_polynomial_h(
        tw.tensor([3.0], dtype=tw.float64, device="numpy"), tw.tensor([2.0**40], dtype=tw.float64)
    )
    assert ours.item() == float("inf")


@pytest.mark.parametrize("name", ["legendre_polynomial_p", "laguerre_polynomial_l"])
def test_degrees_under_the_limit_still_loop_as_torch(name: str) -> None:
    ours, theirs = _both(name, 0.3, 700.0)
    assert ours == pytest.approx(theirs, rel=1e-9, abs=1e-12)
