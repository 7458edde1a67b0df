"""Linear algebra of 1x1 and empty matrices on cuPyNumeric, against torch 2.13 (found by
torch's op database).

A one-element array there may be a Legate future (a reduction's result) seen through the
dimension promotions of a reshape; cuPyNumeric's tiled ``eigh``, ``eig`` and
``solve_triangular`` tasks cannot take such a store, and Legate raised a RuntimeError
(``lu_solve`` of a 1x1 system, float32 and complex128).

The singular values of an empty batch of complex matrices were complex arrays under a
float64 tensor, and ``matrix_rank`` then raised on their maximum.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver_cunumeric import legate_config
from tw_backends import entered

pytestmark = pytest.mark.skipif(
    legate_config.library_name() is None,
    reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
)

DTYPES = [
    (tw.float64, torch.float64),
    (tw.float32, torch.float32),
    (tw.complex128, torch.complex128),
]


def _one_by_one(value: complex, dtype) -> tw.Tensor:
    """A 1x1 matrix that is a reduction's 0-d result, reshaped (the store that failed)."""
    return tw.tensor([value], dtype=dtype).sum().reshape(1, 1)


@pytest.mark.parametrize(("dtype", "torch_dtype"), DTYPES, ids=["float64", "float32", "complex128"])
def test_lu_solve_of_a_one_by_one_system(dtype, torch_dtype) -> None:
    lu, pivots = [[-1.5]], [1]
    expected = torch.lu_solve(
        torch.tensor([[-1.75]], dtype=torch_dtype),
        torch.tensor(lu, dtype=torch_dtype),
        torch.tensor(pivots, dtype=torch.int32),
    )
    with entered("cunumeric"):
        actual = tw.lu_solve(
            tw.tensor([[-1.75]], dtype=dtype),
            tw.tensor(lu, dtype=dtype),
            tw.tensor(pivots, dtype=tw.int32),
        )
        np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-6)


@pytest.mark.parametrize("upper", [False, True])
def test_solve_triangular_with_reduced_operands(upper: bool) -> None:
    expected = torch.linalg.solve_triangular(
        torch.tensor([[4.0]], dtype=torch.float64),
        torch.tensor([[3.0]], dtype=torch.float64),
        upper=upper,
    )
    with entered("cunumeric"):
        actual = tw.linalg.solve_triangular(
            _one_by_one(4.0, tw.float64), _one_by_one(3.0, tw.float64), upper=upper
        )
        np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=1e-15)


def test_eigh_and_eig_of_a_reduced_one_by_one_matrix() -> None:
    with entered("cunumeric"):
        values, vectors = tw.linalg.eigh(_one_by_one(2.5, tw.float64))
        general, general_vectors = tw.linalg.eig(_one_by_one(2.5, tw.float64))
        got = [values.numpy(), vectors.numpy(), general.numpy(), general_vectors.numpy()]
    matrix = torch.tensor([[2.5]], dtype=torch.float64)
    want = [*torch.linalg.eigh(matrix), *torch.linalg.eig(matrix)]
    for actual, expected in zip(got, want):
        np.testing.assert_allclose(actual, expected.numpy(), rtol=1e-15)


@pytest.mark.parametrize("shape", [(0, 5, 5), (2, 0, 3), (3, 0)])
def test_singular_values_of_empty_complex_matrices_are_real(shape: tuple[int, ...]) -> None:
    matrix = torch.zeros(shape, dtype=torch.complex128)
    expected = [*torch.linalg.svd(matrix), torch.linalg.matrix_rank(matrix)]
    with entered("cunumeric"):
        zeros = tw.zeros(shape, dtype=tw.complex128)
        actual = [t.numpy() for t in (*tw.linalg.svd(zeros), tw.linalg.matrix_rank(zeros))]
    for got, want in zip(actual, expected):
        assert got.dtype == want.numpy().dtype
        np.testing.assert_array_equal(got, want.numpy())
