"""Reader r3, session 32: tw.compile guards a user's attribute of a tw module that tw's code
names but never stores; the holders of tensors frozen by ``gc.freeze()``."""

from __future__ import annotations

import collections
import gc
import warnings
from typing import Any

import pytest
import tensorweaver as tw


@pytest.mark.parametrize("name", ["values", "dim"])
def test_compile_guards_user_attribute_named_like_tw_code(name: str) -> None:
    lin = tw.nn.Linear(3, 3)
    setattr(lin, name, {"scale": 1.0})
    x = tw.ones(1, 3)

    def f() -> Any:
        return lin(x) * getattr(lin, name)["scale"]

    run = tw.compile(f, backend="tensorweaver")
    for _ in range(3):
        run()
    getattr(lin, name)["scale"] = 5.0
    assert tw.equal(run(), f())


def test_compile_finds_holders_made_before_gc_freeze() -> None:
    held = collections.deque([tw.full((3,), 2.0)])
    x = tw.ones(3)

    def f() -> Any:
        return x * held[0]

    gc.collect()
    gc.freeze()  # (as a server that forks workers does)
    try:
        run = tw.compile(f, backend="tensorweaver")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(4):
                with tw.no_grad():
                    held[0].fill_(float(i))
                assert tw.equal(run(), f())
        assert run.traces == 2  # (traced twice, then replayed; 1: it ran eagerly)
    finally:
        gc.unfreeze()
