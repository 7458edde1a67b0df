"""A crash sweep on cuPyNumeric: a broad set of tensor ops (elementwise, reductions, movement,
indexing, linear algebra, nn.functional, gradients) on a 5-d and a 6-d input.

Legate aborts the whole process where an array, or one a library call builds inside, has more
than 6 dimensions; the sweep runs in one child process (:mod:`rank_cases`), so a crash fails
this test with the op it was running. Every result must agree with the NumPy backend.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from rank_cases import ChildRun, run, run_on_cunumeric, sweep
from tw_backends import unusable_reason

CASES = sweep()


@pytest.fixture(scope="module")
def child(tmp_path_factory: pytest.TempPathFactory) -> ChildRun:
    reason = unusable_reason("cunumeric")
    if reason is not None:
        pytest.skip(reason)
    return run_on_cunumeric("SWEEP", tmp_path_factory.mktemp("rank") / "sweep")


@pytest.mark.cunumeric
def test_the_sweep_runs_on_cunumeric_without_an_error(child: ChildRun):
    assert not child.errors, child.errors


@pytest.mark.cunumeric
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_op_agrees_with_numpy(child: ChildRun, case):
    with tw.device("numpy"):
        want = run(tw, case)
    got = child.results[case.name]
    assert len(got) == len(want), case.name
    for g, w in zip(got, want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype), case.name
        scale = float(np.abs(w).max()) if w.size and w.dtype.kind == "f" else 0.0
        # Sums may run in another order on cuPyNumeric: float64 rounding, scaled.
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12 * scale, err_msg=case.name)
