"""A backend's largest rank (``max_ndim``): the core stays within it where the result fits, and
raises a clear RuntimeError before the library sees a larger array.

cuPyNumeric (Legate) aborts the whole process on an array of more than 6 dimensions, so its
cases run in one child process per table (:mod:`rank_cases`): a crash fails the test, not
pytest. The folding is also checked on the NumPy backend object with its limit lowered to 3.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from rank_cases import BUILDERS, TOO_MANY, Case, ChildRun, grads, kron, run, run_on_cunumeric
from tensorweaver.contract.ir import REQUIRED
from tw_backends import unusable_reason

needs_cunumeric = pytest.mark.skipif(
    unusable_reason("cunumeric") is not None, reason=str(unusable_reason("cunumeric"))
)


def assert_same(got: list[np.ndarray], want: list[np.ndarray], name: str) -> None:
    """Same count, shapes, dtypes and values (float64 to rounding)."""
    assert len(got) == len(want), name
    for g, w in zip(got, want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype), name
        scale = float(np.abs(w).max()) if w.size and w.dtype.kind == "f" else 0.0
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12 * scale, err_msg=name)


@pytest.fixture(scope="module")
def builders(tmp_path_factory: pytest.TempPathFactory) -> ChildRun:
    return run_on_cunumeric("BUILDERS", tmp_path_factory.mktemp("rank") / "builders")


@pytest.fixture(scope="module")
def too_many(tmp_path_factory: pytest.TempPathFactory) -> ChildRun:
    return run_on_cunumeric("TOO_MANY", tmp_path_factory.mktemp("rank") / "too_many")


@pytest.mark.cunumeric
@needs_cunumeric
def test_cunumeric_declares_its_limit(builders: ChildRun):
    assert builders.max_ndim == 6


@pytest.mark.cunumeric
@needs_cunumeric
@pytest.mark.parametrize("case", BUILDERS, ids=[c.name for c in BUILDERS])
def test_high_rank_builders_agree_with_torch_on_cunumeric(builders: ChildRun, case: Case):
    assert case.name not in builders.errors, builders.errors[case.name]
    assert_same(builders.results[case.name], run(torch, case), case.name)


@pytest.mark.cunumeric
@needs_cunumeric
@pytest.mark.parametrize("case", TOO_MANY, ids=[c.name for c in TOO_MANY])
def test_seven_dimensions_raise_before_cunumeric_sees_them(too_many: ChildRun, case: Case):
    assert case.name in too_many.errors, f"{case.name}: no error for a 7-d tensor"
    kind, message = too_many.errors[case.name]
    assert kind == "RuntimeError", message
    assert "7 dimensions" in message and "at most 6" in message, message
    assert "cunumeric" in message and "'torch'" in message, message


#: Ops whose results fit in 3 dimensions but whose plain decomposition needs more.
LOW_LIMIT: list[Case] = [
    Case("repeat every axis", lambda m, x: x.repeat(2, 3, 2), ((2, 3),)),
    Case("repeat grad", grads(lambda m, x: x.repeat(2, 2, 3)), ((2, 1, 3),)),
    Case("tile", lambda m, x: m.tile(x, (3, 2, 2)), ((2, 2, 3),)),
    Case("repeat_interleave", lambda m, x: x.repeat_interleave(2, dim=1), ((2, 3, 2),)),
    Case("kron", kron, ((2, 2, 3), (2, 1, 2))),
    Case("kron grad", grads(kron), ((2, 2), (3, 2))),
    Case("cartesian_prod", lambda m, *t: m.cartesian_prod(*t), ((2,), (3,), (1,), (2,), (2,))),
]


@pytest.fixture
def numpy_limited_to_3(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The NumPy backend object taking at most 3 dimensions for the test; yields a list that
    holds the most dimensions any array a primitive was handed or returned had."""
    with tw.device("numpy"):
        backend = tw.zeros(()).backend
        monkeypatch.setattr(backend, "max_ndim", 3, raising=False)
        most = [0]

        def recording(method: Callable) -> Callable:
            def call(*args: Any) -> Any:
                out = method(*args)
                arrays = [a for x in (*args, out) for a in (x if isinstance(x, list) else [x])]
                most[0] = max([most[0]] + [a.ndim for a in arrays if isinstance(a, np.ndarray)])
                return out

            return call

        for name in REQUIRED:
            setattr(backend, name, recording(getattr(backend, name)))
        try:
            yield most
        finally:
            for name in REQUIRED:
                delattr(backend, name)


@pytest.mark.parametrize("case", LOW_LIMIT, ids=[c.name for c in LOW_LIMIT])
def test_folding_stays_within_a_lower_limit(numpy_limited_to_3: list[int], case: Case):
    assert_same(run(tw, case), run(torch, case), case.name)
    assert numpy_limited_to_3[0] == 3


def test_a_result_over_the_limit_is_a_clear_error(numpy_limited_to_3: list[int]):
    x = tw.zeros(4)
    with pytest.raises(RuntimeError, match=r"unsqueeze: .* \[1, 1, 1, 4\] has 4 dimensions"):
        x.reshape(1, 1, 4).unsqueeze(0)
    with pytest.raises(RuntimeError, match=r"repeat: .*supports at most 3"):
        x.repeat(1, 1, 1, 2)
    assert numpy_limited_to_3[0] == 3
