"""Creating complex tensors: from Python complex numbers and NumPy complex arrays, the
constant factories with a complex dtype, and random draws (PyTorch's ``randn`` draws real
and imaginary parts with variance 1/2 each: compared by statistics, not values)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from complex_reference import like_torch, same

COMPLEX = ("complex64", "complex128")


@pytest.mark.cunumeric
def test_python_complex_and_numpy_arrays(backend: str) -> None:
    like_torch(lambda m: m.tensor([1 + 2j, -3.5j, 4]))
    like_torch(lambda m: m.tensor(2 - 1j))
    like_torch(lambda m: m.tensor([[1, 2.5], [3j, 0]]))
    like_torch(lambda m: m.tensor([1, 2], dtype=m.complex128))
    for dtype in (np.complex64, np.complex128):
        array = np.array([[1 + 1j, -2.5 + 0.25j]], dtype=dtype)
        ours = like_torch(lambda m, array=array: m.tensor(array))
        same(tw.from_numpy(array.copy()), torch.from_numpy(array.copy()))
        assert ours.device.name.startswith(backend.split(":")[0])


@pytest.mark.parametrize("dtype", COMPLEX)
def test_constant_factories(backend: str, dtype: str) -> None:
    like_torch(lambda m: m.zeros(2, 3, dtype=getattr(m, dtype)))
    like_torch(lambda m: m.ones(3, dtype=getattr(m, dtype)))
    like_torch(lambda m: m.full((2, 2), 1.5 - 2j, dtype=getattr(m, dtype)))
    like_torch(lambda m: m.full((2,), 3, dtype=getattr(m, dtype)))
    like_torch(lambda m: m.eye(2, dtype=getattr(m, dtype)))
    like_torch(lambda m: m.zeros_like(m.ones(2, dtype=getattr(m, dtype))))
    like_torch(lambda m: m.full_like(m.ones(2, dtype=getattr(m, dtype)), 2j))
    assert tw.empty(2, dtype=getattr(tw, dtype)).dtype is getattr(tw, dtype)


def test_full_infers_complex_from_its_value(backend: str) -> None:
    like_torch(lambda m: m.full((2, 3), 1 + 2j))
    like_torch(lambda m: m.full((2,), 1j, dtype=m.complex128))


def test_linspace_between_complex_ends(backend: str) -> None:
    like_torch(lambda m: m.linspace(0, 1 + 1j, 5))
    like_torch(lambda m: m.linspace(-1j, 2, 4, dtype=m.complex128))


def test_arange_refuses_complex_as_pytorch(backend: str) -> None:
    with pytest.raises(NotImplementedError) as theirs:
        torch.arange(3, dtype=torch.complex64)
    with pytest.raises(type(theirs.value), match="arange"):
        tw.arange(3, dtype=tw.complex64)


def _moments(values: np.ndarray) -> tuple[float, float, float, float]:
    return (
        float(values.real.mean()),
        float(values.imag.mean()),
        float(values.real.var()),
        float(values.imag.var()),
    )


@pytest.mark.parametrize("dtype", COMPLEX)
def test_randn_draws_parts_of_variance_one_half(backend: str, dtype: str) -> None:
    tw.manual_seed(0)
    x = tw.randn(100_000, dtype=getattr(tw, dtype))
    assert x.dtype is getattr(tw, dtype)
    values = np.asarray(x)
    mean_re, mean_im, var_re, var_im = _moments(values)
    theirs = _moments(torch.randn(100_000, dtype=getattr(torch, dtype)).numpy())
    # Standard error of a mean is sqrt(0.5 / n) ~ 0.0022; of a variance ~ 0.0022 too.
    assert abs(mean_re) < 0.012 and abs(mean_im) < 0.012
    assert var_re == pytest.approx(0.5, abs=0.012) and var_im == pytest.approx(0.5, abs=0.012)
    assert var_re == pytest.approx(theirs[2], abs=0.02)
    assert float(np.corrcoef(values.real, values.imag)[0, 1]) == pytest.approx(0, abs=0.015)
    assert (values.real != values.imag).all()


@pytest.mark.parametrize("dtype", COMPLEX)
def test_rand_draws_both_parts_uniformly(backend: str, dtype: str) -> None:
    tw.manual_seed(1)
    values = np.asarray(tw.rand(50_000, dtype=getattr(tw, dtype)))
    for part in (values.real, values.imag):
        assert part.min() >= 0 and part.max() < 1
        assert part.mean() == pytest.approx(0.5, abs=0.01)
        assert part.var() == pytest.approx(1 / 12, abs=0.004)
    assert float(np.corrcoef(values.real, values.imag)[0, 1]) == pytest.approx(0, abs=0.02)


def test_random_draws_follow_the_seed_and_like_functions(backend: str) -> None:
    tw.manual_seed(3)
    a = np.asarray(tw.randn(4, 2, dtype=tw.complex128))
    tw.manual_seed(3)
    b = np.asarray(tw.randn(4, 2, dtype=tw.complex128))
    np.testing.assert_array_equal(a, b)
    z = tw.ones(30_000, dtype=tw.complex64)
    like = np.asarray(tw.randn_like(z))
    assert like.dtype == np.complex64 and like.real.var() == pytest.approx(0.5, abs=0.02)
    assert np.asarray(tw.rand_like(z)).imag.mean() == pytest.approx(0.5, abs=0.01)


def test_random_fill_in_place(backend: str) -> None:
    z = tw.zeros(40_000, dtype=tw.complex128)
    z.normal_()
    values = np.asarray(z)
    assert values.real.var() == pytest.approx(0.5, abs=0.02)
    assert values.imag.var() == pytest.approx(0.5, abs=0.02)
    z.uniform_(-1, 1)
    values = np.asarray(z)
    assert values.real.min() >= -1 and values.imag.max() < 1
    assert values.imag.var() == pytest.approx(1 / 3, abs=0.02)


def test_normal_fill_with_mean_and_std_as_pytorch(backend: str) -> None:
    # PyTorch: each part has the mean, and variance std**2 / 2.
    ours = np.asarray(tw.zeros(60_000, dtype=tw.complex128).normal_(1.0, 2.0))
    theirs = torch.zeros(60_000, dtype=torch.complex128).normal_(1.0, 2.0).numpy()
    for a, b in ((ours.real, theirs.real), (ours.imag, theirs.imag)):
        assert a.mean() == pytest.approx(1.0, abs=0.03) and b.mean() == pytest.approx(1.0, abs=0.03)
        assert a.var() == pytest.approx(2.0, abs=0.06) and b.var() == pytest.approx(2.0, abs=0.06)


def test_generator_draws_complex_samples(backend: str) -> None:
    draws = []
    for _ in range(2):
        g = tw.Generator().manual_seed(5)
        draws.append(np.asarray(tw.randn(20_000, dtype=tw.complex64, generator=g)))
    np.testing.assert_array_equal(draws[0], draws[1])
    assert draws[0].dtype == np.complex64
    assert draws[0].imag.var() == pytest.approx(0.5, abs=0.03)
    g = tw.Generator().manual_seed(6)
    uniform = np.asarray(tw.rand(20_000, dtype=tw.complex128, generator=g))
    assert uniform.real.min() >= 0 and uniform.imag.max() < 1
    assert uniform.imag.mean() == pytest.approx(0.5, abs=0.01)
