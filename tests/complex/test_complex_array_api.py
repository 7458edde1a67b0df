"""Complex dtypes in the array API namespace (``tensorweaver.array_api``), against
``array_api_strict``: the dtypes, inspection, promotion, ``can_cast``, ``finfo``, and the
standard's complex functions (conj, real, imag, abs, sign) against NumPy."""

from __future__ import annotations

import array_api_strict as xs
import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.array_api as xp
from complex_reference import close, cplx

NAMES = ("bool", "int8", "int16", "int32", "int64", "uint8", "float32", "float64")
COMPLEX = ("complex64", "complex128")


def test_dtypes_and_kinds() -> None:
    assert xp.complex64 is tw.complex64 and xp.complex128 is tw.complex128
    for name in (*NAMES, *COMPLEX):
        for kind in ("complex floating", "real floating", "numeric", "integral", "bool"):
            expected = xs.isdtype(getattr(xs, name), kind)
            assert xp.isdtype(getattr(xp, name), kind) == expected, (name, kind)


def test_info(backend: str) -> None:
    info, theirs = xp.__array_namespace_info__(), xs.__array_namespace_info__()
    assert set(info.dtypes(kind="complex floating")) == set(theirs.dtypes(kind="complex floating"))
    assert set(info.dtypes(kind="numeric")) >= set(COMPLEX)
    assert info.default_dtypes()["complex floating"] is tw.tensor(1j).dtype


@pytest.mark.parametrize("a", COMPLEX)
@pytest.mark.parametrize("b", (*NAMES, *COMPLEX))
def test_result_type_and_can_cast(a: str, b: str) -> None:
    def name(dtype: object) -> str:
        return str(dtype).rsplit(".", 1)[-1].split("'")[0]

    try:
        expected = name(xs.result_type(getattr(xs, a), getattr(xs, b)))
    except TypeError:
        expected = None
    if expected is not None:
        assert name(xp.result_type(getattr(xp, a), getattr(xp, b))) == expected
    for x, y in ((a, b), (b, a)):
        assert xp.can_cast(getattr(xp, x), getattr(xp, y)) == xs.can_cast(
            getattr(xs, x), getattr(xs, y)
        ), (x, y)


@pytest.mark.parametrize("dtype", ("float32", "float64", *COMPLEX))
def test_python_scalars(dtype: str) -> None:
    for scalar in (1, 2.5, 1j):
        ours = xp.result_type(xp.ones(2, dtype=getattr(xp, dtype)), scalar)
        theirs = xs.result_type(xs.ones(2, dtype=getattr(xs, dtype)), scalar)
        assert str(ours).rsplit(".", 1)[-1] == str(theirs).rsplit(".", 1)[-1].split("'")[0]


def test_finfo_of_complex_is_of_its_parts() -> None:
    for dtype, real in (("complex64", np.float32), ("complex128", np.float64)):
        info = xp.finfo(getattr(xp, dtype))
        assert info.eps == np.finfo(real).eps and info.bits == np.finfo(real).bits
        assert info.dtype is getattr(xp, dtype).to_real()


@pytest.mark.cunumeric
def test_complex_functions(backend: str) -> None:
    z = cplx((3, 4), 1)
    x = xp.asarray(z)
    assert x.dtype is xp.complex128
    close(np.asarray(xp.conj(x)), np.conj(z), "complex128", "conj")
    close(np.asarray(xp.real(x)), z.real, "float64", "real")
    close(np.asarray(xp.imag(x)), z.imag, "float64", "imag")
    close(np.asarray(xp.abs(x)), np.abs(z), "float64", "abs")
    close(np.asarray(xp.sign(x)), z / np.abs(z), "complex128", "sign")
    close(np.asarray(xp.multiply(x, 1j)), z * 1j, "complex128", "multiply")
    close(np.asarray(xp.sum(x, axis=0)), z.sum(0), "complex128", "sum")
    close(np.asarray(xp.matmul(x, xp.conj(x).mT)), z @ z.conj().T, "complex128", "matmul")
    close(np.asarray(xp.full((2,), 1 - 2j)), np.full((2,), 1 - 2j), "complex128", "full")
    close(np.asarray(xp.linspace(0, 1j, 3)), np.linspace(0, 1j, 3), "complex128", "linspace")
    assert np.asarray(xp.equal(x, xp.asarray(z))).all()


def test_vecdot_conjugates_its_first_argument(backend: str) -> None:
    # The standard's vecdot is sum(conj(x1) * x2), as array_api_strict computes it.
    a, b = cplx((3, 4), 40), cplx((3, 4), 41)
    want = np.asarray(xs.vecdot(xs.asarray(a), xs.asarray(b)))
    close(xp.vecdot(tw.tensor(a), tw.tensor(b)), want, "complex128", "vecdot")
    want = np.sum(np.conj(a) * b, axis=0)
    close(xp.vecdot(tw.tensor(a), tw.tensor(b), axis=0), want, "complex128", "vecdot axis 0")
