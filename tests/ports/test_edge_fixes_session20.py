"""Fixes of the twentieth session's edge divergences, against torch 2.13 (the defects that
tests/backends/test_numpy_edge_semantics_session20.py recorded, where a case needs more
than that file's own test)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

NAN = float("nan")


def _error(fn: Any, m: Any) -> BaseException:
    with pytest.raises(Exception) as raised:  # noqa: PT011 - compared with torch's below
        fn(m)
    return raised.value


@pytest.mark.parametrize("op", ["svd", "svdvals", "pinv", "matrix_rank"])
def test_svd_of_nan_raises_torchs_linalg_error(op: str) -> None:
    # Before: numpy.linalg.LinAlgError, a ValueError ("SVD did not converge").
    def fn(m: Any) -> Any:
        return getattr(m.linalg, op)(m.tensor([[NAN, 0.0], [0.0, 1.0]]))

    theirs = _error(fn, torch)
    with entered("numpy"):
        ours = _error(fn, tw)
    assert isinstance(theirs, torch.linalg.LinAlgError) and isinstance(ours, RuntimeError)
    assert type(ours).__name__ == torch.linalg.LinAlgError.__name__.lstrip("_")
    assert str(ours) == str(theirs)


def test_eig_of_nan_raises_runtime_error_like_torch() -> None:
    # Before: numpy.linalg.LinAlgError (a ValueError), "Array must not contain infs or NaNs".
    def fn(m: Any) -> Any:
        return m.linalg.eig(m.tensor([[NAN, 0.0], [0.0, 1.0]]))

    theirs = _error(fn, torch)
    with entered("numpy"):
        ours = _error(fn, tw)
    assert type(theirs) is RuntimeError and isinstance(ours, RuntimeError)
    assert str(ours) == str(theirs)


def test_bool_fill_of_two_to_the_63_is_true_like_torch() -> None:
    with entered("numpy"):
        ours = tw.full((1,), 2**63, dtype=tw.bool).tolist()
    assert ours == torch.full((1,), 2**63, dtype=torch.bool).tolist()


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_eye_of_every_shape_and_dtype_like_torch(spec: str) -> None:
    shapes = [(0, 0), (0, 3), (3, 0), (1, 1), (3, 3), (2, 5), (5, 2), (4, 7), (7, 1)]
    with entered(spec):
        for name in ["float32", "float16", "int64", "bool", "complex64"]:
            for n, m in shapes:
                ours = tw.eye(n, m, dtype=getattr(tw, name))
                theirs = torch.eye(n, m, dtype=getattr(torch, name))
                assert ours.tolist() == theirs.tolist() and str(ours.dtype).split(".")[-1] == name
                assert ours.is_contiguous() and tuple(ours.stride()) == theirs.stride()


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_eye_too_large_for_memory_raises_at_once(spec: str) -> None:
    # Before: > 30 s building two int64 aranges of 2**30 elements (8 GiB each) on NumPy,
    # then NumPy's ValueError; torch raises RuntimeError at once.
    with pytest.raises(RuntimeError):
        torch.eye(2**30)
    with entered(spec):
        start = time.perf_counter()
        with pytest.raises(RuntimeError):
            tw.eye(2**30)
    assert time.perf_counter() - start < 2.0


_BASES = [0j, complex(NAN, 0), 1 + 1j, -2 + 0.5j, 3 - 4j, complex(float("inf"), 0), -1 + 0j]


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_pow_by_a_number_like_torch(spec: str, dtype: str) -> None:
    # Before: x ** 1, ** 3, ** -0.5 ... went through cpow (exp(p * log x)) on torch:cpu, where
    # PyTorch multiplies, copies or takes sqrt; NumPy multiplied integer powers out (** 4).
    def fn(m: Any) -> list:
        x = m.tensor(_BASES, dtype=getattr(m, dtype))
        return [(x**p).tolist() for p in [2, 3, -1, -2, 0.5, -0.5, 2 + 0j, 2.5, 1.5j, 0, 1, 4]]

    with entered(spec):
        ours = fn(tw)
    assert str(ours) == str(fn(torch))


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_complex_pow_by_a_tensor_is_cpow_like_torch(spec: str) -> None:
    # Before (NumPy): 0j ** 0j and nan ** 0j were 1, (1+1j) ** (2+0j) exactly 2j.
    def fn(m: Any) -> list:
        x = m.tensor(_BASES, dtype=m.complex64)
        powers = [0j, 2 + 0j, -1 + 0j, 0.5 + 1j]
        return [(x ** m.full((len(_BASES),), p, dtype=m.complex64)).tolist() for p in powers]

    with entered(spec):
        ours = fn(tw)
    assert str(ours) == str(fn(torch))


def test_complex_pow_gradients_unchanged() -> None:
    with entered("numpy"):
        tw.manual_seed(0)
        x = tw.randn(4, dtype=tw.complex128, requires_grad=True)
        y = tw.randn(4, dtype=tw.complex128, requires_grad=True)
        for fn in [lambda a, b: a**b, lambda a, b: a**2, lambda a, b: a**-0.5, lambda a, b: a**1]:
            assert tw.autograd.gradcheck(fn, (x, y))
