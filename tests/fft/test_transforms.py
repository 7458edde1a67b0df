"""Every transform of tw.fft against torch.fft on the same values: result dtype, shape and
values, and the gradients of a real loss, in float32/float64/complex64/complex128, every
norm, odd and even sizes, signal sizes above and below the input's, negative and
unordered dims, batches, empty batches and 0-d inputs where PyTorch defines them."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
from fft_reference import compare, loss, values

DTYPES = ["float32", "float64", "complex64", "complex128"]
NORMS = [None, "backward", "ortho", "forward"]
#: The transforms that take real input only.
REAL_ONLY = {"rfft", "ihfft", "rfft2", "ihfft2", "rfftn", "ihfftn"}

ONE_DIM = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
#: (input shape, keywords): odd and even sizes, n above and below, negative and batch dims
ONE_DIM_CASES = [
    ((5,), {}),
    ((8,), {}),
    ((3, 6), {"n": 9}),
    ((3, 7), {"n": 4}),
    ((4, 3), {"dim": 0}),
    ((2, 5, 3), {"dim": -2, "n": 6}),
    ((1,), {"n": 2}),
]

MANY_DIMS = ["fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2"]
MANY_DIMS += ["fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn"]
MANY_DIM_CASES = [
    ((4, 5), {}),
    ((2, 5, 6), {"dim": (0, -1)}),
    ((2, 5, 6), {"s": (4, 3), "dim": (-1, 1)}),  # dims out of order: the last one is halved
    ((3, 4, 5), {"s": (7, -1)}),
    ((2, 3, 4, 4), {"dim": (1, 2)}),
]


def _inputs(names: list[str]) -> list[tuple[str, str]]:
    """(transform, input dtype) pairs: complex input only where it is allowed (test_errors
    checks the error of the others)."""
    return [(n, d) for n in names for d in DTYPES if n not in REAL_ONLY or d.startswith("float")]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(("name", "dtype"), _inputs(ONE_DIM))
def test_one_dimension_like_torch(backend: str, name: str, dtype: str, norm: str | None) -> None:
    for i, (shape, kwargs) in enumerate(ONE_DIM_CASES):
        compare(name, values(shape, dtype, seed=i), norm=norm, **kwargs)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize(("name", "dtype"), _inputs(MANY_DIMS))
def test_several_dimensions_like_torch(
    backend: str, name: str, dtype: str, norm: str | None
) -> None:
    for i, (shape, kwargs) in enumerate(MANY_DIM_CASES):
        compare(name, values(shape, dtype, seed=i), norm=norm, **kwargs)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfft", "fftn", "rfft2"])
def test_integer_and_bool_input_in_the_default_dtype(backend: str, name: str) -> None:
    compare(name, values((3, 4), "float64").round().astype("int64"))
    compare(name, values((3, 4), "float64") > 0)


@pytest.mark.parametrize("name", ["fftn", "ifftn"])
def test_zero_dimensional_and_no_dims(backend: str, name: str) -> None:
    compare(name, values((), "float64"))
    compare(name, values((), "complex64"))
    compare(name, values((2, 3), "float32"), dim=())


@pytest.mark.parametrize("name", ["fft", "rfft"])
def test_input_with_one_point(backend: str, name: str) -> None:
    compare(name, values((3, 1), "float64"))


@pytest.mark.cunumeric
@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "fft2", "ihfftn"])
def test_few_transforms_like_torch(backend: str, name: str) -> None:
    double, single = ("float64", "float32") if name in REAL_ONLY else ("complex128", "complex64")
    compare(name, values((2, 6), double), norm="ortho")
    compare(name, values((3, 5), single))


@pytest.mark.parametrize("name", ["fft", "ifft2", "rfft", "irfft", "hfft", "ihfft", "irfftn"])
def test_empty_batch_like_numpy(backend: str, name: str) -> None:
    """PyTorch's CPU (MKL) kernels reject an empty batch; NumPy and tensorweaver give one."""
    dtype = "float32" if name in REAL_ONLY else "complex64"
    x = tw.tensor(values((0, 3, 4), dtype), requires_grad=True)
    y = getattr(tw.fft, name)(x, **({"dim": (1, 2)} if name.endswith("n") else {}))
    axes = {"axes": (1, 2)} if name.endswith(("2", "n")) else {}
    want = getattr(np.fft, name)(np.zeros((0, 3, 4), dtype), **axes)
    assert tuple(y.shape) == want.shape and y.detach().resolve_conj().numpy().dtype == want.dtype
    loss(tw, y).backward()
    assert tuple(x.grad.shape) == (0, 3, 4) and x.grad.dtype is x.dtype
