"""Parts, conjugates and moduli of complex tensors against PyTorch: real imag conj
conj_physical angle polar complex sgn view_as_real view_as_complex isreal vdot H mH
adjoint, and conversions between real and complex dtypes."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch
from complex_reference import cplx, like_torch, same
from tensor_reference import raises_like_torch, signed


@pytest.mark.cunumeric
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_parts_and_conjugates(backend: str, dtype: str) -> None:
    z = cplx((3, 4), 1)
    for op in ("real", "imag", "conj", "conj_physical", "angle", "sgn", "abs"):
        like_torch(lambda m, x, op=op: getattr(m, op)(x.to(getattr(m, dtype))), z)
    like_torch(lambda m, x: x.to(getattr(m, dtype)).real, z)
    like_torch(lambda m, x: x.to(getattr(m, dtype)).imag, z)
    like_torch(lambda m, x: x.to(getattr(m, dtype)).conj().resolve_conj(), z)


def test_parts_of_real_tensors(backend: str) -> None:
    r = signed((5,), seed=2)
    like_torch(lambda m, x: m.real(x), r)
    like_torch(lambda m, x: x.real, r)
    like_torch(lambda m, x: m.conj(x), r)
    like_torch(lambda m, x: m.angle(x), r)
    like_torch(lambda m, x: m.angle(x), np.array([-1, 0, 2]))
    like_torch(lambda m, x: m.sgn(x), r)
    raises_like_torch(lambda m, x: x.imag, r)
    raises_like_torch(lambda m, x: m.imag(x), r)


def test_complex_polar_and_views(backend: str) -> None:
    re, im = signed((2, 3), seed=3), signed((3,), seed=4)
    like_torch(lambda m, a, b: m.complex(a, b), re, im)
    like_torch(lambda m, a, b: m.complex(a.float(), b.float()), re, im)
    like_torch(lambda m, a, b: m.polar(a.abs(), b), re, im)
    like_torch(lambda m, x: m.view_as_real(x), cplx((2, 3), 5))
    like_torch(lambda m, x: m.view_as_real(x.to(m.complex64)), cplx((), 6))
    like_torch(lambda m, x: m.view_as_complex(x), signed((3, 2), seed=7))
    like_torch(lambda m, x: m.view_as_complex(m.view_as_real(x)), cplx((4,), 8))
    raises_like_torch(lambda m, a, b: m.complex(a, b.float()), re, im)
    raises_like_torch(lambda m, a, b: m.complex(a.int(), b.int()), re, im)
    raises_like_torch(lambda m, x: m.view_as_real(x), re)
    raises_like_torch(lambda m, x: m.view_as_complex(x), signed((3, 3), seed=9))


def test_isreal_and_predicates(backend: str) -> None:
    z = np.array([1 + 0j, 1j, -2 + 0j, complex(np.nan, 0), complex(0, np.inf)])
    for op in ("isreal", "isnan", "isinf", "isfinite"):
        like_torch(lambda m, x, op=op: getattr(m, op)(x), z)
    like_torch(lambda m, x: m.isreal(x), signed((3,), seed=10))
    assert tw.tensor([1j]).is_complex() and not tw.tensor([1.0]).is_complex()
    assert tw.is_complex(tw.zeros(1, dtype=tw.complex64))
    assert tw.complex64.is_complex and not tw.complex64.is_floating_point
    assert not tw.is_floating_point(tw.zeros(1, dtype=tw.complex128))


def test_adjoints_and_vdot(backend: str) -> None:
    a = cplx((2, 3), 11)
    like_torch(lambda m, x: x.H, a)
    like_torch(lambda m, x: x.mH, cplx((2, 2, 3), 12))
    like_torch(lambda m, x: x.mT, cplx((2, 2, 3), 12))
    like_torch(lambda m, x: x.adjoint(), cplx((2, 2, 3), 12))
    like_torch(lambda m, x, y: m.vdot(x, y), cplx((4,), 13), cplx((4,), 14))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_casts(backend: str, dtype: str) -> None:
    r, z = signed((3,), seed=16), cplx((3,), 17)
    like_torch(lambda m, x: x.to(getattr(m, dtype)), r)
    like_torch(lambda m, x: x.int().to(getattr(m, dtype)), r)
    like_torch(lambda m, x: (x > 0).to(getattr(m, dtype)), r)
    like_torch(lambda m, x: x.to(getattr(m, dtype)), z)
    like_torch(lambda m, x: x.type_as(m.zeros(1, dtype=getattr(m, dtype))), r)
    with pytest.warns(UserWarning, match="(?i)discards the imaginary part"):
        ours = tw.tensor(z).to(tw.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch warns once a process
        same(ours, torch.tensor(z).to(torch.float64))
    like_torch(lambda m, x: x.to(m.bool), np.array([0j, 1j, 1 + 0j]))


def test_nan_to_num_acts_on_each_part(backend: str) -> None:
    z = np.array([complex(np.nan, 1), complex(np.inf, -np.inf), complex(2, np.nan), 1j])
    like_torch(lambda m, x: m.nan_to_num(x), z)
    like_torch(lambda m, x: x.to(m.complex64).nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0), z)


def test_conjugate_transpose_and_complex_casts_spellings(backend: str) -> None:
    r = signed((3,), seed=18)
    raises_like_torch(lambda m, x: x.H, cplx((2, 2, 3), 15))
    like_torch(lambda m, x: x.cfloat(), r)
    like_torch(lambda m, x: x.cdouble(), r)
    like_torch(lambda m, x: m.adjoint(x), cplx((2, 3), 19))
