"""Linear algebra: ``matmul``/``@`` over every operand-rank case (vectors, batches that
broadcast, empty and non-contiguous operands), ``mm``, ``bmm``, ``outer``, ``dot`` and common
``einsum`` equations, against NumPy float64, PyTorch, and by finite differences.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from gradcheck import gradcheck
from tensor_reference import assert_values, like_torch, uniform

# name: (shape of a, shape of b, view applied to a)
MATMUL = {
    "vector-vector": ((4,), (4,), lambda x: x),
    "matrix-vector": ((3, 4), (4,), lambda x: x),
    "vector-matrix": ((4,), (4, 5), lambda x: x),
    "matrix-matrix": ((3, 4), (4, 5), lambda x: x),
    "batched": ((2, 3, 4), (2, 4, 5), lambda x: x),
    "broadcast-batch": ((2, 1, 3, 4), (5, 4, 2), lambda x: x),
    "batch-vector": ((2, 3, 4), (4,), lambda x: x),
    "vector-batch": ((4,), (2, 4, 5), lambda x: x),
    "matrix-batch": ((3, 4), (2, 4, 5), lambda x: x),
    "empty-inner": ((3, 0), (0, 5), lambda x: x),
    "empty-outer": ((0, 4), (4, 5), lambda x: x),
    "transposed": ((4, 3), (4, 5), lambda x: x.mT),
    "strided": ((3, 8), (4, 2), lambda x: x[:, ::2]),
}
CUNUMERIC_MATMUL = ("vector-vector", "matrix-matrix", "broadcast-batch")


def matmul_params():
    for name in MATMUL:
        marks = pytest.mark.cunumeric if name in CUNUMERIC_MATMUL else ()
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(matmul_params()))
def test_matmul(backend, name):
    shape_a, shape_b, view = MATMUL[name]
    a, b = uniform(shape_a), uniform(shape_b, seed=1)
    expected = np.matmul(view(a), b)
    assert_values(view(tw.tensor(a)) @ tw.tensor(b), expected, dtype="float64")
    assert_values(tw.matmul(view(tw.tensor(a)), tw.tensor(b)), expected)
    assert_values(view(tw.tensor(a)).matmul(tw.tensor(b)), expected)
    like_torch(lambda m, x, y: view(x) @ y, a, b, dtype="float32")


@pytest.mark.parametrize("name", list(matmul_params()))
def test_matmul_gradients(backend, name):
    shape_a, shape_b, view = MATMUL[name]
    gradcheck(lambda x, y: view(x) @ y, uniform(shape_a, seed=2), uniform(shape_b, seed=3))


@pytest.mark.parametrize("dtype", ["int64", "int32", "float16"])
def test_matmul_other_dtypes_like_torch(backend, dtype):
    a = (uniform((2, 3)) * 3).round()
    b = (uniform((3, 4), seed=1) * 3).round()
    like_torch(lambda m, x, y: x @ y, a, b, dtype=dtype)


# name: (call on tensors of either library, NumPy reference, shapes of the operands)
PRODUCTS = {
    "mm": (lambda m, a, b: m.mm(a, b), np.matmul, ((3, 4), (4, 2))),
    "mm-method": (lambda m, a, b: a.mm(b), np.matmul, ((1, 4), (4, 3))),
    "bmm": (lambda m, a, b: m.bmm(a, b), np.matmul, ((2, 3, 4), (2, 4, 5))),
    "bmm-method": (lambda m, a, b: a.bmm(b), np.matmul, ((3, 1, 2), (3, 2, 2))),
    "outer": (lambda m, a, b: m.outer(a, b), np.outer, ((3,), (4,))),
    "outer-method": (lambda m, a, b: a.outer(b), np.outer, ((2,), (5,))),
    "dot": (lambda m, a, b: m.dot(a, b), np.dot, ((4,), (4,))),
    "dot-method": (lambda m, a, b: a.dot(b), np.dot, ((6,), (6,))),
}


@pytest.mark.parametrize("name", PRODUCTS.keys())
def test_products(backend, name):
    fn, reference, (shape_a, shape_b) = PRODUCTS[name]
    a, b = uniform(shape_a, seed=4), uniform(shape_b, seed=5)
    assert_values(fn(tw, tw.tensor(a), tw.tensor(b)), reference(a, b), dtype="float64")
    like_torch(fn, a, b, dtype="float32")
    gradcheck(lambda x, y: fn(tw, x, y), a, b)


EINSUM = {
    "matmul": ("ij,jk->ik", (3, 4), (4, 2)),
    "implicit-output": ("ij,jk", (3, 4), (4, 2)),
    "batched": ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)),
    "attention-scores": ("bhqd,bhkd->bhqk", (2, 2, 3, 4), (2, 2, 5, 4)),
    "inner": ("i,i->", (5,), (5,)),
    "outer": ("i,j->ij", (3,), (4,)),
    "elementwise": ("ij,ij->ij", (3, 4), (3, 4)),
    "row-dot": ("ij,ij->i", (3, 4), (3, 4)),
    "transpose": ("ij->ji", (3, 4)),
    "sum": ("ij->", (3, 4)),
    "column-sums": ("ij->j", (3, 4)),
    "ellipsis": ("...ij,...jk->...ik", (2, 3, 4), (2, 4, 2)),
    "matrix-vector": ("ij,j->i", (3, 4), (4,)),
    # repeated letters take diagonals (they raised NotImplementedError)
    "trace": ("ii", (3, 3)),
    "diagonal": ("ii->i", (3, 3)),
    "batch-trace": ("bii->b", (2, 3, 3)),
    "cube-diagonal": ("iii->i", (3, 3, 3)),
    "diagonal-then-contract": ("iij,j->i", (3, 3, 4), (4,)),
    "trace-weighted-columns": ("ij,ii->j", (3, 4), (3, 3)),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", EINSUM.keys())
def test_einsum(backend, name):
    equation, *shapes = EINSUM[name]
    operands = [uniform(shape, seed=6 + i) for i, shape in enumerate(shapes)]
    expected = np.einsum(equation, *operands)
    assert_values(tw.einsum(equation, *(tw.tensor(x) for x in operands)), expected)
    like_torch(lambda m, *xs: m.einsum(equation, *xs), *operands, dtype="float32")
    gradcheck(lambda *xs: tw.einsum(equation, *xs), *operands)


def test_einsum_repeated_letters_of_different_sizes_raise_like_torch(backend):
    with pytest.raises(RuntimeError, match="repeated for operand 0"):
        tw.einsum("ii", tw.ones(2, 3))
