"""Complex products and complex scatter-adds against torch 2.13, on every backend that lists
complex dtypes (cuPyNumeric included). cuPyNumeric 26.6 raised from Legate on any complex
``prod`` (no complex product reduction), and its ``scatter_add`` summed a complex ``src``
through a real-weighted histogram that kept only the real parts, silently: ``scatter_add``,
``index_add`` and the gradient of ``gather`` and of advanced indexing all lost the
imaginary parts."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

COMPLEX = ("complex64", "complex128")
pytestmark = pytest.mark.cunumeric


def _values(shape: tuple[int, ...], name: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1.5, 1.5, shape) + 1j * rng.uniform(-1.5, 1.5, shape)).astype(name)


def _close(got: tw.Tensor, want: torch.Tensor) -> None:
    assert str(got.dtype) == str(want.dtype).replace("torch.", "tensorweaver.")
    rtol = 1e-5 if want.dtype == torch.complex64 else 1e-12
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", COMPLEX)
def test_prod_of_complex(backend, name):
    a = _values((2, 3, 5), name)
    x, t = tw.tensor(a), torch.from_numpy(a)
    _close(x.prod(), t.prod())
    for dim, keepdim in ((0, False), (1, True), (2, False)):
        _close(x.prod(dim, keepdim=keepdim), t.prod(dim, keepdim=keepdim))
    empty = np.zeros((2, 0), name)
    _close(tw.tensor(empty).prod(1), torch.from_numpy(empty).prod(1))


@pytest.mark.parametrize("name", COMPLEX)
def test_scatter_add_and_index_add_of_complex(backend, name):
    a, src = _values((3, 4), name), _values((2, 4), name, seed=1)
    index = np.array([[2, 0, 2, 1], [2, 2, 0, 1]])  # duplicates accumulate
    x, s, i = tw.tensor(a), tw.tensor(src), tw.tensor(index)
    t, ts, ti = torch.from_numpy(a), torch.from_numpy(src), torch.from_numpy(index)
    _close(x.scatter_add(0, i, s), t.scatter_add(0, ti, ts))
    rows = np.array([1, 1])
    _close(x.index_add(0, tw.tensor(rows), s), t.index_add(0, torch.from_numpy(rows), ts))


@pytest.mark.parametrize("name", COMPLEX)
def test_scatter_add_of_complex_non_finite_parts(backend, name):
    inf, nan = float("inf"), float("nan")
    src = np.array([[complex(1.0, inf), complex(-2.0, -inf), complex(nan, 0.5), 1j]], name)
    index = np.array([[0, 1, 2, 2]])
    want = torch.zeros(1, 3, dtype=getattr(torch, name))
    want = want.scatter_add(1, torch.from_numpy(index), torch.from_numpy(src))
    got = tw.zeros(1, 3, dtype=getattr(tw, name)).scatter_add(1, tw.tensor(index), tw.tensor(src))
    g, w = got.numpy(), want.numpy()
    np.testing.assert_array_equal(g.real, w.real)
    np.testing.assert_array_equal(g.imag, w.imag)


@pytest.mark.parametrize("name", COMPLEX)
def test_gradient_of_gathering_complex(backend, name):
    a = _values((3, 4), name)
    index = np.array([[0, 0, 2], [1, 1, 1]])
    x = tw.tensor(a, requires_grad=True)
    t = torch.from_numpy(a).requires_grad_(True)
    g = _values((2, 3), name, seed=2)
    x.gather(1, tw.tensor(index)).backward(tw.tensor(g))
    t.gather(1, torch.from_numpy(index)).backward(torch.from_numpy(g))
    _close(x.grad, t.grad)
    x.grad = None
    t.grad = None
    rows = [2, 0, 2]
    x[rows].backward(tw.tensor(_values((3, 4), name, seed=3)))
    t[rows].backward(torch.from_numpy(_values((3, 4), name, seed=3)))
    _close(x.grad, t.grad)
