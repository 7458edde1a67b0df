"""Type promotion with complex dtypes: every pair of a complex dtype with bool, integer,
floating and complex dtypes, as tensors of any rank and as Python scalars, as
``torch.result_type`` and ``torch.promote_types`` give it and as ``+`` computes it."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from complex_reference import same
from tensor_reference import dtype_name, supports
from tensorweaver.contract import dtypes

DTYPES = tuple(d.name for d in dtypes.ALL)  # every tensorweaver dtype
COMPLEX = ("complex64", "complex128")
SCALARS = (True, 3, -2.5, 1 - 2j)


@pytest.mark.parametrize("complex_dtype", COMPLEX)
@pytest.mark.parametrize("other", DTYPES)
def test_promote_types(complex_dtype: str, other: str) -> None:
    for a, b in ((complex_dtype, other), (other, complex_dtype)):
        ours = tw.promote_types(getattr(tw, a), getattr(tw, b))
        theirs = torch.promote_types(getattr(torch, a), getattr(torch, b))
        assert dtype_name(ours) == dtype_name(theirs)


@pytest.mark.parametrize("complex_dtype", COMPLEX)
@pytest.mark.parametrize("other", DTYPES)
def test_tensors_of_every_rank(backend: str, complex_dtype: str, other: str) -> None:
    if not supports(other):
        pytest.skip(f"{backend} has no {other}")
    for shapes in (((2,), (2,)), ((), (2,)), ((2,), ()), ((), ())):
        for a, b in ((complex_dtype, other), (other, complex_dtype)):
            made = [
                (m.ones(shapes[0], dtype=getattr(m, a)), m.ones(shapes[1], dtype=getattr(m, b)))
                for m in (tw, torch)
            ]
            theirs = torch.result_type(*made[1])
            if theirs is torch.complex32:
                continue  # PyTorch's half-precision complex is no tensorweaver dtype
            assert dtype_name(tw.result_type(*made[0])) == dtype_name(theirs), (a, b, shapes)
            same(made[0][0] + made[0][1], made[1][0] + made[1][1], f"{a} + {b} {shapes}")


@pytest.mark.parametrize(
    ("dtype", "scalar"),
    [(d, s) for d in DTYPES for s in SCALARS if d in COMPLEX or isinstance(s, complex)],
    ids=repr,
)
def test_python_scalars(backend: str, dtype: str, scalar: object) -> None:
    if not supports(dtype):
        pytest.skip(f"{backend} has no {dtype}")
    for shape in ((3,), ()):
        ours, theirs = (m.ones(shape, dtype=getattr(m, dtype)) for m in (tw, torch))
        if torch.result_type(theirs, scalar) is torch.complex32:
            # PyTorch's half-precision complex is no tensorweaver dtype: the next one up.
            assert tw.result_type(ours, scalar) is tw.complex64
            continue
        assert dtype_name(tw.result_type(ours, scalar)) == dtype_name(
            torch.result_type(theirs, scalar)
        )
        same(ours * scalar, theirs * scalar, f"{dtype} * {scalar!r}")
        same(scalar + ours, scalar + theirs, f"{scalar!r} + {dtype}")


def test_default_dtype_sets_the_default_complex_dtype(backend: str) -> None:
    previous = tw.get_default_dtype()
    try:
        for real, expected in ((tw.float64, "complex128"), (tw.float32, "complex64")):
            tw.set_default_dtype(real)
            assert dtype_name(tw.tensor(1j).dtype) == expected
            assert dtype_name(tw.result_type(tw.tensor([1, 2]), 1j)) == expected
            assert dtype_name((tw.tensor([1.0]) * 1j).dtype) == expected
    finally:
        tw.set_default_dtype(previous)
