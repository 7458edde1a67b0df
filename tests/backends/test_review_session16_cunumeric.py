"""What cuPyNumeric computes after its LAPACK tasks have run in the process, against torch 2.13.

Review of the finding that seeded draws came out transposed after a QR (cuPyNumeric 26.06's
generator writes in the memory order of a buffer Legate recycles from a LAPACK task). The
other ops read and write by index whatever order a buffer has (checked here on the
column-major outputs of those tasks), and every random op of the API goes through the three
draw primitives that now draw flat. One more defect of the same kind turned up: a 1-d
``cumsum`` of values computed from an ``eigh``/``eig``/``solve_triangular`` output aborted
the whole process (Legion's "IndexPartition ... does not have the same type as the parent
index space"); it runs in a child interpreter for that reason.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import tensorweaver as tw
import torch
from cunumeric_child import run_python
from tensorweaver_cunumeric import legate_config
from tw_backends import entered

pytestmark = pytest.mark.skipif(
    legate_config.library_name() is None,
    reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
)

#: A matrix with ties; ``solve_triangular(I, RHS)`` returns it exactly, column-major.
RHS = [[1.0, 3.0, 3.0, 0.0], [3.0, 3.0, 1.0, 0.0], [0.0, 3.0, 3.0, 3.0], [2.0, 2.0, 2.0, 2.0]]


def _scans_of_lapack_outputs(lib) -> dict[str, list]:
    """1-d scans of values from LAPACK tasks; inputs chosen so that the factors are exact."""
    f64 = lib.float64
    spd = lib.diag(lib.tensor([4.0, 9.0, 1.0, 16.0], dtype=f64))
    solved = lib.linalg.solve_triangular(
        lib.eye(4, dtype=f64), lib.tensor(RHS, dtype=f64), upper=False
    )
    leaf = lib.linalg.eigvalsh(spd).requires_grad_()
    leaf.cumsum(0).mul(lib.arange(4.0, dtype=f64)).sum().backward()  # backward scans too
    out = {
        "eigvalsh": lib.linalg.eigvalsh(spd).cumsum(0),
        "eigvals": lib.linalg.eigvals(spd).real.cumsum(0),
        "solve_triangular_flat": solved.flatten().cumsum(0),
        "solve_triangular_row": solved[1].cumsum(0),
        "cumulative_trapezoid": lib.cumulative_trapezoid(lib.linalg.eigvalsh(spd)),
        "cumsum_backward": leaf.grad,
    }
    return {k: v.detach().numpy().tolist() for k, v in out.items()}


def test_a_1d_scan_of_a_lapack_output_as_torch() -> None:
    # In a child: before the fix Legion aborted the process (SIGABRT) at the first scan.
    code = """
        import json
        import tensorweaver as tw
        from tw_backends import entered
        from test_review_session16_cunumeric import _scans_of_lapack_outputs
        with entered("cunumeric"):
            print(json.dumps(_scans_of_lapack_outputs(tw)))
    """
    assert run_python(code) == _scans_of_lapack_outputs(torch)


# -- random draws, whatever LAPACK ran before them -----------------------------------------


def _column_major(lib):
    """A fresh 3x4 LAPACK output (column-major in cuPyNumeric's buffer), values of no use."""
    return lib.linalg.qr(lib.zeros(4, 3, dtype=lib.float64) + lib.eye(4, 3, dtype=lib.float64))[
        0
    ].t()


RANDOM_OPS = {
    "bernoulli": lambda: tw.bernoulli(tw.full((3, 4), 0.5, dtype=tw.float64)),
    "bernoulli_of_a_view": lambda: tw.zeros(4, 3).t().bernoulli_(0.3),
    "normal_of_a_transposed_view": lambda: tw.zeros(4, 3, dtype=tw.float64).t().normal_(),
    "random_of_a_lapack_output": lambda: _column_major(tw).random_(0, 50),
    "uniform_of_a_lapack_output": lambda: _column_major(tw).uniform_(),
    "exponential": lambda: tw.zeros(3, 4, dtype=tw.float64).exponential_(),
    "normal_with_tensors": lambda: tw.normal(
        tw.zeros(4, 3, dtype=tw.float64).t(), tw.ones(3, 4, dtype=tw.float64)
    ),
    "dropout": lambda: tw.nn.functional.dropout(tw.ones(3, 4, dtype=tw.float64), 0.5),
    "multinomial": lambda: tw.multinomial(tw.ones(3, 4, dtype=tw.float64), 4, replacement=True),
    "orthogonal_init": lambda: tw.nn.init.orthogonal_(tw.empty(3, 4, dtype=tw.float64)),
}


def _after_lapack_tasks() -> None:
    """Leave column-major 3x4 and 4x3 buffers behind (QR, SVD, eigh), as the suite does."""
    for shape in ((3, 4), (4, 3), (4, 4), (3, 3)):
        a = tw.randn(*shape, dtype=tw.float64)
        tw.linalg.qr(a)
        tw.linalg.svd(a)
        if shape[0] == shape[1]:
            tw.linalg.eigh(a @ a.T)


@pytest.mark.parametrize("name", RANDOM_OPS)
def test_seeded_random_ops_do_not_depend_on_earlier_lapack_tasks(name: str) -> None:
    # As in torch, tw.manual_seed fixes what a random op draws, whatever ran before it.
    # Before 8ab1731 each of these changed after a QR (drawn in the recycled buffer's order).
    draw = RANDOM_OPS[name]
    with entered("cunumeric"):
        tw.manual_seed(5)
        first = draw().numpy()
        _after_lapack_tasks()
        tw.manual_seed(5)
        assert np.array_equal(draw().numpy(), first)


# -- other ops on column-major LAPACK outputs ----------------------------------------------


def _save_and_load(t):
    buffer = io.BytesIO()
    (tw if isinstance(t, tw.Tensor) else torch).save(t, buffer)
    buffer.seek(0)
    return (tw if isinstance(t, tw.Tensor) else torch).load(buffer)


ORDER_READERS = {
    "flatten": lambda x: x.flatten(),
    "reshape": lambda x: x.reshape(2, 8),
    "transposed_flatten": lambda x: x.t().reshape(16),
    "argmax_ties": lambda x: x.argmax(1),
    "flat_argmax_ties": lambda x: x.argmax(),
    "argmin_ties": lambda x: x.argmin(0),
    "stable_argsort": lambda x: x.argsort(dim=1, stable=True),
    "nonzero": lambda x: (x > 1).nonzero(),
    "unique": lambda x: x.unique(return_inverse=True)[1],
    "masked_select": lambda x: x[x > 1],
    "cumsum_rows": lambda x: x.cumsum(1),
    "save_and_load": _save_and_load,
    "tolist": lambda x: x.new_tensor(x.tolist()),
}


@pytest.mark.parametrize("name", ORDER_READERS)
def test_ops_read_a_column_major_lapack_output_by_index_as_torch(name: str) -> None:
    op = ORDER_READERS[name]
    want = op(torch.tensor(RHS, dtype=torch.float64)).numpy()
    with entered("cunumeric"):
        eye = tw.eye(4, dtype=tw.float64)
        solved = tw.linalg.solve_triangular(eye, tw.tensor(RHS, dtype=tw.float64), upper=False)
        np.testing.assert_array_equal(op(solved).numpy(), want)
