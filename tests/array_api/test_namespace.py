"""The array API namespace (``tensorweaver.array_api``) against NumPy in float64, the
``Tensor`` protocol methods (``__array_namespace__``, ``__array__``, DLPack, ``to_device``)
and ``tw.asarray``."""

from __future__ import annotations

import array_api_strict as xs
import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.array_api as xp
import torch

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(3, 4))
INTS = np.array([3, 1, 3, 2, 1, 7, 1])


def close(out: tw.Tensor, expected: np.ndarray) -> None:
    got = np.asarray(out.detach().resolve_conj())  # (torch's np.asarray refuses either)
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


# -- the namespace -------------------------------------------------------------------------


def test_array_namespace_and_versions() -> None:
    x = tw.tensor([1.0])
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2023.12") is xp
    assert xp.__array_api_version__ in xp.API_VERSIONS
    with pytest.raises(ValueError, match="2019.01"):
        x.__array_namespace__(api_version="2019.01")


@pytest.mark.parametrize(
    ("name", "numpy_function"),
    [
        ("add", np.add),
        ("subtract", np.subtract),
        ("multiply", np.multiply),
        ("divide", np.divide),
        ("pow", lambda a, b: np.abs(a) ** b),
        ("maximum", np.maximum),
        ("hypot", np.hypot),
        ("logaddexp", np.logaddexp),
        ("greater_equal", np.greater_equal),
        ("not_equal", np.not_equal),
    ],
)
def test_binary_functions(backend: str, name: str, numpy_function) -> None:
    a = np.abs(A) if name == "pow" else A
    close(getattr(xp, name)(xp.asarray(a), xp.asarray(B)), numpy_function(a, B))


def test_promotion_counts_0d_arrays(backend: str) -> None:
    # PyTorch's rules treat a 0-d tensor as a scalar; the standard's do not.
    small = xp.asarray([1, 2], dtype=xp.int8)
    wide = xp.asarray(300, dtype=xp.int16)
    out = xp.add(small, wide)
    assert out.dtype == xp.int16
    close(out, np.array([301, 302]))
    assert xp.result_type(small, wide) == xp.int16
    assert xp.result_type(small, 1.5) == tw.get_default_dtype()
    assert xp.result_type(xp.float32, 1.5) == xp.float32


def test_dtype_functions() -> None:
    assert xp.isdtype(xp.int8, "signed integer")
    assert xp.isdtype(xp.uint8, ("real floating", "integral"))
    assert not xp.isdtype(xp.float64, "integral")
    assert xp.can_cast(xp.int8, xp.int16) and not xp.can_cast(xp.int16, xp.int8)
    assert not xp.can_cast(xp.float32, xp.int64) and not xp.can_cast(xp.bool, xp.int8)
    info = xp.finfo(xp.float64)
    assert (info.bits, info.eps, info.dtype) == (64, np.finfo(np.float64).eps, xp.float64)
    assert xp.iinfo(xp.int16).max == np.iinfo(np.int16).max
    with pytest.raises(ValueError, match="kind"):
        xp.isdtype(xp.int8, "integer")


def test_unary_and_lazy_names(backend: str) -> None:
    close(xp.negative(xp.asarray(A)), -A)
    close(xp.bitwise_invert(xp.asarray(INTS)), ~INTS)
    close(xp.clip(xp.asarray(A), min=-0.5, max=0.5), np.clip(A, -0.5, 0.5))
    # A name is present exactly where the core has its function.
    for name, core_name in [("acos", "acos"), ("sinh", "sinh"), ("copysign", "copysign")]:
        assert hasattr(xp, name) == hasattr(tw, core_name)
    with pytest.raises(AttributeError):
        xp.no_such_function  # noqa: B018


def test_statistics(backend: str) -> None:
    x = xp.asarray(A)
    close(xp.std(x, axis=0, correction=1), np.std(A, axis=0, ddof=1))
    close(xp.var(x, axis=(0, 1), keepdims=True), np.var(A, keepdims=True))
    close(xp.max(x, axis=1), A.max(axis=1))
    close(xp.min(x, axis=()), A)
    close(xp.prod(x, axis=(0, 1)), A.prod())
    ints = xp.asarray(INTS.astype(np.int8))
    assert xp.sum(ints).dtype == xp.int64
    close(xp.cumulative_sum(x, axis=1, include_initial=True), _cumsum_initial(A))
    close(xp.cumulative_prod(xp.asarray(A[0])), np.cumprod(A[0]))


def _cumsum_initial(a: np.ndarray) -> np.ndarray:
    return np.concatenate([np.zeros((a.shape[0], 1)), np.cumsum(a, axis=1)], axis=1)


def test_manipulation(backend: str) -> None:
    x = xp.asarray(A)
    close(xp.concat([x, x], axis=None), np.concatenate([A, A], axis=None))
    mixed = xp.concat([xp.asarray([1], dtype=xp.int8), xp.asarray([300], dtype=xp.int16)])
    assert mixed.dtype == xp.int16
    close(mixed, np.array([1, 300]))
    close(xp.permute_dims(x, (1, 0)), A.T)
    close(xp.matrix_transpose(xp.stack([x, x])), np.stack([A, A]).swapaxes(-1, -2))
    close(xp.expand_dims(x, axis=(0, -1)), A[None, :, :, None])
    close(xp.squeeze(xp.asarray(A[None]), axis=0), A)
    with pytest.raises(ValueError, match="size 1"):
        xp.squeeze(x, axis=0)
    close(xp.flip(x), A[::-1, ::-1])
    close(xp.roll(x, 2), np.roll(A, 2))
    close(xp.repeat(x, 2, axis=1), np.repeat(A, 2, axis=1))
    close(xp.tile(x, (2, 1)), np.tile(A, (2, 1)))
    close(xp.moveaxis(x, 0, 1), np.moveaxis(A, 0, 1))
    assert [np.asarray(u).tolist() for u in xp.unstack(x, axis=1)] == A.T.tolist()
    close(xp.reshape(x, (12,), copy=False), A.reshape(12))
    close(xp.reshape(x, (4, 3), copy=True), A.reshape(4, 3))


def test_creation(backend: str) -> None:
    close(xp.eye(3, 5, k=2), np.eye(3, 5, k=2))
    close(xp.linspace(0, 1, 4, endpoint=False), np.linspace(0, 1, 4, endpoint=False))
    close(xp.arange(1, 7, 2), np.arange(1, 7, 2))
    close(xp.full_like(xp.asarray(A), 2.5), np.full_like(A, 2.5))
    for shape in (3, (2, 3), ()):  # the standard's int shape too, which torch.full refuses
        for make in ("zeros", "ones", "empty"):
            assert getattr(xp, make)(shape).shape == getattr(xs, make)(shape).shape
        close(xp.full(shape, 1.5), np.full(shape, 1.5))
    close(xp.triu(xp.asarray(A), k=1), np.triu(A, k=1))
    gx, gy = xp.meshgrid(xp.asarray(A[0]), xp.asarray(B[0]))
    nx, ny = np.meshgrid(A[0], B[0])
    close(gx, nx)
    close(gy, ny)


def test_searching_sorting_sets(backend: str) -> None:
    x = xp.asarray(A)
    close(xp.argmax(x, axis=1, keepdims=True), A.argmax(axis=1)[:, None])
    close(xp.argmin(x), A.argmin())
    close(
        xp.count_nonzero(xp.asarray(INTS - 1), keepdims=True),
        np.count_nonzero(INTS - 1, keepdims=True),
    )
    assert len(xp.nonzero(x > 0)) == 2
    close(xp.nonzero(x > 0)[1], np.nonzero(A > 0)[1])
    close(xp.searchsorted(xp.asarray(np.sort(A[0])), 0.1), np.searchsorted(np.sort(A[0]), 0.1))
    close(xp.where(x > 0, x, 0.0), np.where(A > 0, A, 0.0))
    close(xp.sort(x, axis=0, descending=True), -np.sort(-A, axis=0))
    close(xp.argsort(xp.asarray(INTS), stable=True), np.argsort(INTS, kind="stable"))
    values, index, inverse, counts = np.unique(INTS, True, True, True)
    out = xp.unique_all(xp.asarray(INTS))
    for got, expected in zip(out, (values, index, inverse, counts)):
        close(got, expected)
    close(xp.unique_counts(xp.asarray(INTS)).counts, counts)
    close(xp.unique_inverse(xp.asarray(INTS)).inverse_indices, inverse)
    close(xp.unique_values(xp.asarray(INTS)), values)
    probe = np.array([[0, 1], [7, 4]])
    close(xp.isin(xp.asarray(probe), xp.asarray(INTS)), np.isin(probe, INTS))
    close(xp.isin(xp.asarray(probe), xp.asarray(INTS), invert=True), ~np.isin(probe, INTS))
    assert xp.broadcast_shapes((2, 1), (3,)) == np.broadcast_shapes((2, 1), (3,))
    with pytest.raises(ValueError, match="broadcast_shapes"):
        xp.broadcast_shapes((2,), (3,))


def test_linear_algebra_and_indexing(backend: str) -> None:
    x, y = xp.asarray(A), xp.asarray(B)
    close(xp.matmul(x, y.mT), A @ B.T)
    close(xp.vecdot(x, y), np.sum(A * B, axis=-1))
    close(xp.tensordot(x, y, axes=([1], [1])), np.tensordot(A, B, axes=([1], [1])))
    idx = xp.asarray([2, -1])
    close(xp.take(x, idx, axis=1), np.take(A, [2, -1], axis=1))
    order = xp.argsort(x, axis=1)
    close(xp.take_along_axis(x, order, axis=1), np.sort(A, axis=1))
    close(xp.diff(x, axis=1, n=2), np.diff(A, axis=1, n=2))
    assert bool(xp.all(xp.asarray(INTS), axis=0)) and not bool(xp.any(x > 10))


def test_linalg_extension(backend: str) -> None:
    la = xp.linalg
    m = xp.asarray(A @ A.T + 3 * np.eye(3))
    u, s, vh = la.svd(xp.asarray(A), full_matrices=False)
    close(s, np.linalg.svd(A, compute_uv=False))
    close(u @ (s[:, None] * vh), A)
    close(la.eigh(m).eigenvalues, np.linalg.eigvalsh(np.asarray(m)))
    close(la.trace(m, offset=1), np.trace(np.asarray(m), offset=1))
    close(la.vector_norm(xp.asarray(A), axis=1, ord=1), np.linalg.norm(A, ord=1, axis=1))
    close(la.matrix_norm(m, ord="fro"), np.linalg.norm(np.asarray(m)))
    close(la.cholesky(m, upper=True), np.linalg.cholesky(np.asarray(m)).T)


def test_gradients_flow(backend: str) -> None:
    def loss(t: tw.Tensor) -> tw.Tensor:
        return xp.sum(xp.std(t, axis=0, correction=1) * xp.vecdot(t, t, axis=0))

    x = xp.asarray(A).requires_grad_()
    assert tw.autograd.gradcheck(loss, (x,))


# -- the namespace's inspection API and devices ----------------------------------------------


def test_info(backend: str) -> None:
    info = xp.__array_namespace_info__()
    x = xp.asarray(A)
    assert info.default_device() == x.device
    assert info.capabilities()["boolean indexing"]
    assert info.default_dtypes()["real floating"] == tw.get_default_dtype()
    assert info.default_dtypes()["indexing"] == xp.int64
    assert set(info.dtypes(kind="signed integer")) == {"int8", "int16", "int32", "int64"}
    assert info.dtypes(kind="bool") == {"bool": xp.bool}


def test_devices_and_to_device(backend: str) -> None:
    x = xp.asarray(A)
    other = "torch:cpu" if backend == "numpy" else "numpy"
    moved = x.to_device(other)
    assert moved.device == tw.device(other) and moved.device != x.device
    close(moved, A)
    back = xp.asarray(moved, device=x.device)
    assert back.device == x.device
    assert xp.zeros_like(moved).device == moved.device
    assert xp.ones(2, device=moved.device).device == moved.device


# -- __array__ and DLPack ---------------------------------------------------------------------


@pytest.mark.cunumeric
def test_numpy_asarray(backend: str) -> None:
    t = xp.asarray(A)
    copied = np.asarray(t)
    copied[0, 0] = 99.0  # a copy: the tensor keeps its values
    close(t, A)
    close(xp.asarray(np.asarray(t, dtype=np.float32)), A.astype(np.float32))
    if backend == "cunumeric":
        with pytest.raises(ValueError, match="copy=False"):
            np.asarray(t, copy=False)
        return
    view = np.asarray(t, copy=False)
    assert not view.flags.writeable
    np.testing.assert_array_equal(view, A)
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(t, dtype=np.float32, copy=False)
    assert np.asarray(xp.sum(t), copy=False) == pytest.approx(A.sum())


@pytest.mark.cunumeric
def test_dlpack_copy_false_never_copies(backend: str) -> None:
    source = torch.from_numpy(A.copy())
    if backend == "cunumeric":  # its backend imports no DLPack: the core copies
        with pytest.raises(ValueError, match="asarray: copy=False"):
            tw.asarray(source, copy=False)
        with pytest.raises(ValueError, match="from_dlpack: copy=False"):
            xp.from_dlpack(source, device=backend, copy=False)
        return
    shared = xp.from_dlpack(source, device=backend, copy=False)
    source[0, 0] = 5.0
    assert np.asarray(shared)[0, 0] == 5.0
    assert np.asarray(tw.asarray(source, copy=False))[0, 0] == 5.0


@pytest.mark.cunumeric
def test_dlpack_to_numpy_and_torch(backend: str) -> None:
    t = xp.asarray(A)
    assert t.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(t), A)
    np.testing.assert_allclose(np.from_dlpack(xp.sum(t)), A.sum(), rtol=1e-12)
    torch.testing.assert_close(torch.from_dlpack(t), torch.from_dlpack(A))
    copied = np.from_dlpack(t, copy=True)
    assert not np.shares_memory(copied, np.from_dlpack(t))
    np.testing.assert_array_equal(copied, A)


def test_dlpack_round_trip(backend: str) -> None:
    t = xp.asarray(A)
    back = xp.from_dlpack(t)
    assert back.device == t.device
    close(back, A)
    close(tw.from_dlpack(torch.from_dlpack(t)), A)
    close(xp.from_dlpack(np.from_dlpack(t), copy=True), A)


# -- tw.asarray -------------------------------------------------------------------------------


def test_asarray_from_tensors(backend: str) -> None:
    t = tw.tensor(A, requires_grad=True)
    assert tw.asarray(t) is t
    assert tw.asarray(t, dtype=tw.float64, copy=None) is t
    copied = tw.asarray(t, copy=True)
    assert copied is not t
    close(copied, A)
    with pytest.raises(ValueError, match="copy=False"):
        tw.asarray(t, dtype=tw.float32, copy=False)
    assert tw.asarray(t, requires_grad=False).requires_grad is False
    assert t.requires_grad  # the argument keeps its flag
    plain = t.detach()
    assert tw.asarray(plain, requires_grad=True).requires_grad and not plain.requires_grad


@pytest.mark.cunumeric
def test_asarray_from_numpy(backend: str) -> None:
    a = A.copy()
    close(tw.asarray(a, dtype=tw.float32), a.astype(np.float32))
    with pytest.raises(ValueError, match="copy=False"):
        tw.asarray(a, dtype=tw.float32, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        tw.asarray([1.0, 2.0], copy=False)
    for copy in (None, True, False):  # negative strides: torch's ValueError, whatever copy=
        with pytest.raises(ValueError, match="negative"):
            tw.asarray(a[::-1], copy=copy)
    copied = tw.asarray(a, copy=True)
    maybe_shared = tw.asarray(a)
    a[0, 0] = 42.0
    assert np.asarray(copied)[0, 0] == A[0, 0]
    if backend == "cunumeric":  # no memory shared with the host: copy=None copies
        assert np.asarray(maybe_shared)[0, 0] == A[0, 0]
        with pytest.raises(ValueError, match="copy=False"):
            tw.asarray(a, copy=False)
        return
    assert np.asarray(maybe_shared)[0, 0] == 42.0  # NumPy and torch:cpu share host memory
    shared = tw.asarray(a, copy=False)
    other = "torch:cpu" if backend == "numpy" else "numpy"
    elsewhere = tw.asarray(a, device=other, copy=False)
    a[1, 1] = -3.0
    assert np.asarray(shared)[1, 1] == -3.0
    assert elsewhere.device == tw.device(other) and np.asarray(elsewhere)[1, 1] == -3.0


def test_asarray_from_other_arrays(backend: str) -> None:
    from_torch = tw.asarray(torch.from_numpy(A))
    assert from_torch.dtype == tw.float64 and from_torch.device == tw.device(backend)
    close(from_torch, A)
    strict = tw.asarray(xs.asarray(INTS.astype(np.int32)))
    assert strict.dtype == tw.int32
    close(strict, INTS)
    close(tw.asarray(memoryview(A)), A)
    close(tw.asarray([[1, 2], [3, 4]], dtype=tw.float64), np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert tw.asarray(2.5).dtype == tw.get_default_dtype()
    assert tw.asarray(torch.ones(2), device="numpy").device == tw.device("numpy")
