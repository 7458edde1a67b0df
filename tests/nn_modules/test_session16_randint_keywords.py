"""``randint`` called the ways programs call it, found by the TransE port
(``tests/ports/programs/transe.py``; TransE-PyTorch draws its corruptions with
``torch.randint(high=2, size=..., device=...)``). PyTorch accepts ``high`` alone, by position
or by keyword, with ``size`` by keyword; the ports' shared-randomness harness replaces
``randint`` during a run, so only a direct call shows what tensorweaver's own does.

The draws come from two different generators, so shape, dtype and range are compared.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

#: (args, kwargs, low) PyTorch 2.13 accepts; high is 3.
CALLS: dict[str, tuple[tuple, dict[str, Any], int]] = {
    "high-positional-size-keyword": ((3,), {"size": (4, 2)}, 0),
    "high-and-size-keywords": ((), {"high": 3, "size": (4, 2)}, 0),
}
ACCEPTED: dict[str, tuple[tuple, dict[str, Any], int]] = {
    "high-positional-positional-size": ((3, (4, 2)), {}, 0),
    "low-high-positional-size": ((1, 3, (4, 2)), {}, 1),
    "low-positional-high-size-keywords": ((1,), {"high": 3, "size": (4, 2)}, 1),
    "low-high-size-keywords": ((), {"low": 1, "high": 3, "size": (4, 2)}, 1),
}
HIGH_ALONE = (
    "ops/creation.py randint takes its first positional parameter as `low` with no default "
    "and swaps bounds only when size is None: randint(3, size=s) raises 'the bounds must be "
    "ints, got NoneType' and randint(high=3, size=s) 'missing 1 required positional argument: "
    "low'; PyTorch reads a lone bound as high (low=0)"
)


def _check(spec: str, args: tuple, kwargs: dict[str, Any], low: int) -> None:
    expected = torch.randint(*args, **kwargs)
    with entered(spec, seed=0):
        got = tw.randint(*args, **kwargs)
    assert tuple(got.shape) == tuple(expected.shape)
    assert got.dtype is tw.int64
    values = got.numpy()
    assert np.all((values >= low) & (values < 3)), values


@pytest.mark.xfail(strict=True, raises=TypeError, reason=HIGH_ALONE)
@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("spec", FAST)
def test_randint_with_high_alone_matches_pytorch(spec: str, call: str) -> None:
    _check(spec, *CALLS[call])


@pytest.mark.parametrize("call", list(ACCEPTED))
@pytest.mark.parametrize("spec", FAST)
def test_randint_positional_forms_match_pytorch(spec: str, call: str) -> None:
    _check(spec, *ACCEPTED[call])
