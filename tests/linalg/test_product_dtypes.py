"""Products of two dtypes: PyTorch's RuntimeError where it multiplies matrices (it never
promotes them), the error naming the function called; einsum's pairs that sum no letter
are elementwise products, which PyTorch promotes (values, dtype and gradients as PyTorch's)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import assert_like_torch, raises_like_torch

F32, F64 = np.ones(3, np.float32), np.arange(3.0)
M32, M64 = np.ones((3, 3), np.float32), np.arange(9.0).reshape(3, 3)

#: name -> (the call on a library, its operands, the name its error must give).
CASES: dict[str, tuple[Callable[..., Any], tuple, str]] = {
    "dot": (lambda m, a, b: m.dot(a, b), (F32, F64), "dot"),
    "vdot": (lambda m, a, b: m.vdot(a, b), (F32, F64), "dot"),  # PyTorch's message says dot
    "einsum": (lambda m, a, b: m.einsum("ij,jk->ik", a, b), (M32, M64), "einsum"),
    "einsum_vector": (lambda m, a, b: m.einsum("i,i->", a, b), (F64, F32), "einsum"),
    "multi_dot": (lambda m, a, b: m.linalg.multi_dot([a, a, b]), (M32, M64), "multi_dot"),
    "matmul": (lambda m, a, b: m.matmul(a, b), (M32, M64), "matmul"),
    "inner": (lambda m, a, b: m.inner(a, b), (M32, M64), "inner"),
    "tensordot": (lambda m, a, b: m.tensordot(a, b, dims=1), (M32, M64), "tensordot"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_two_dtypes_raise_like_torch_naming_the_function(backend: str, name: str) -> None:
    fn, operands, called = CASES[name]
    error = raises_like_torch(fn, *operands, match=["float32", "float64"])
    assert str(error).startswith(called), f"{name}: {error}"


#: einsum equations whose pairs of operands sum no shared letter: operand shapes.
PROMOTED = {
    "i,j->ij": [(3,), (4,)],
    "i,j->": [(3,), (4,)],
    "i,i->i": [(3,), (3,)],
    "i,j,k->ijk": [(2,), (3,), (4,)],
    "ij,k->ik": [(3, 2), (4,)],
}


@pytest.mark.parametrize("equation", list(PROMOTED))
def test_einsum_promotes_elementwise_products_like_torch(backend: str, equation: str) -> None:
    shapes = PROMOTED[equation]
    arrays = [np.random.default_rng(i).standard_normal(s) for i, s in enumerate(shapes)]
    dtypes = ["float32", "float64", "float32"]

    def run(m: Any) -> tuple:
        leaves = [
            m.tensor(a, dtype=getattr(m, d), requires_grad=True) for a, d in zip(arrays, dtypes)
        ]
        out = m.einsum(equation, *leaves)
        (
            out * m.tensor(np.random.default_rng(9).standard_normal(tuple(out.shape)))
        ).sum().backward()
        return out, [leaf.grad for leaf in leaves]

    assert_like_torch(run(tw), run(torch))
