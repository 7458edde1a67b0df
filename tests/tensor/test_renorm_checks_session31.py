"""``renorm``/``renorm_`` refuse a norm that is not positive and a maxnorm that is negative
or NaN with PyTorch's RuntimeError and message, the norm checked first, then maxnorm, then
the rank and dim (a regression of the session-31 ports: tw scaled by a meaningless norm)."""

from __future__ import annotations

import math

import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

BAD = [(0, 0, 1.0), (-1, 0, 1.0), (math.nan, 0, 1.0), (2, 0, -1.0), (2, 0, math.nan)]
BAD += [(2, 0, -1 / 3), (2, 0, -1.5e8), (2, 5, -1.0), (0, 5, -1.0)]


def _message(m, method: str, args: tuple, rank: int = 2) -> str:
    try:
        getattr(m.ones(*(3, 2)[:rank]), method)(*args)
    except RuntimeError as e:
        return str(e)
    return "no error"


@pytest.mark.parametrize("spec", FAST)
@pytest.mark.parametrize("method", ["renorm", "renorm_"])
def test_bad_norm_refused_with_torch_message(spec: str, method: str) -> None:
    with entered(spec):
        for args in BAD:
            assert _message(tw, method, args) == _message(torch, method, args), args
        # before the rank check, as PyTorch's
        assert _message(tw, method, (0, 0, 1.0), 1) == _message(torch, method, (0, 0, 1.0), 1)
        assert _message(tw, method, (math.inf, 0, 1.0)) == "no error"
