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
#: Calls PyTorch 2.13 refuses with a TypeError (no overload takes them).
REFUSED: dict[str, tuple[tuple, dict[str, Any]]] = {
    "low-and-size-keywords": ((), {"low": 1, "size": (2,)}),
    "size-keyword-alone": ((), {"size": (2,)}),
    "high-alone": ((3,), {}),
    "three-ints": ((3, 5, 2), {}),
    "size-twice": ((1, 3, (2,)), {"size": (2,)}),
    "high-twice": ((1,), {"high": 3}),
    "size-positional-high-keyword": (((2,),), {"high": 3}),
    "size-an-int": ((3,), {"size": 2}),
    "float-high": ((3.0,), {"size": (2,)}),
}


def _check(spec: str, args: tuple, kwargs: dict[str, Any], low: int) -> None:
    expected = torch.randint(*args, **kwargs)
    with entered(spec, seed=0):
        got = tw.randint(*args, **kwargs)
    assert tuple(got.shape) == tuple(expected.shape)
    assert got.dtype is tw.int64
    values = got.numpy()
    assert np.all((values >= low) & (values < 3)), values


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("spec", FAST)
def test_randint_with_high_alone_matches_pytorch(spec: str, call: str) -> None:
    _check(spec, *CALLS[call])


@pytest.mark.parametrize("call", list(ACCEPTED))
@pytest.mark.parametrize("spec", FAST)
def test_randint_positional_forms_match_pytorch(spec: str, call: str) -> None:
    _check(spec, *ACCEPTED[call])


@pytest.mark.parametrize("call", list(REFUSED))
@pytest.mark.parametrize("spec", FAST)
def test_randint_refuses_what_pytorch_refuses(spec: str, call: str) -> None:
    args, kwargs = REFUSED[call]
    with pytest.raises(TypeError):
        torch.randint(*args, **kwargs)
    with entered(spec, seed=0), pytest.raises(TypeError):
        tw.randint(*args, **kwargs)


@pytest.mark.parametrize("spec", FAST)
def test_randint_high_alone_with_generator_dtype_and_out(spec: str) -> None:
    with entered(spec, seed=0):
        drawn = tw.randint(3, size=(5,), generator=tw.Generator().manual_seed(1))
        again = tw.randint(high=3, size=(5,), generator=tw.Generator().manual_seed(1))
        assert drawn.tolist() == again.tolist()  # one generator state, one draw
        floats = tw.randint(high=3, size=(2, 2), dtype=tw.float32)
        assert floats.dtype is tw.float32 and floats.shape == (2, 2)
        out = tw.empty(4, dtype=tw.int32)
        got = tw.randint(3, size=(4,), out=out)
        assert got is out and out.dtype is tw.int32
        assert all(0 <= v < 3 for v in out.tolist())
        with pytest.raises(RuntimeError):
            tw.randint(3, size=(2,), out=tw.empty(2), dtype=tw.int64)
    with pytest.raises(RuntimeError):  # as torch's
        torch.randint(3, size=(2,), out=torch.empty(2), dtype=torch.int64)
