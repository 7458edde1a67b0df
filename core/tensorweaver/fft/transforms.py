"""PyTorch's transforms of ``torch.fft``: complex (``fft``, ``ifft``, ``fftn``, ...), of
real signals (``rfft``, ``irfft``, ...) and of Hermitian ones (``hfft``, ``ihfft``, ...).

Each resizes its input to the signal size (zero padding or trimming at the end, as
PyTorch) and calls one primitive (:mod:`tensorweaver.fft.primitives`): complex to complex,
real to complex (a real input of ``fft`` too, as PyTorch), complex to real. A Hermitian
signal's transform is the real one of its conjugate with the other direction's scale.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from tensorweaver.fft import arguments as a
from tensorweaver.fft import primitives as p
from tensorweaver.ops.complex import conj_physical
from tensorweaver.tensor import Tensor

Dims = Optional[Any]  # an int or a sequence of ints, or None

#: Transforms already resolved, by (function, backend, shape, dtype, n or s, dim, norm): the
#: primitive's call on an input that needs no cast, resizing or conjugation. Resolving the
#: arguments again took 2-3 us a call, a tenth of a transform of 8 x 1024 points.
_PLANS: dict[tuple, Callable[[Tensor], Tensor]] = {}
#: Past this many plans the cache starts afresh (a program that meets ever new shapes).
_MAX_PLANS = 256


def _plan(op: str, input: Any, n: Any, dim: Any, norm: Any) -> tuple:
    """(the cache key of this call or None, its cached plan or None)."""
    if type(input) is not Tensor:
        return None, None
    key = (op, input.backend, input.shape, input.dtype, n, dim, norm)
    try:
        return key, _PLANS.get(key)
    except TypeError:  # an unhashable argument: resolved (and refused) the long way
        return None, None


def _remember(key: tuple | None, plan: Callable[[Tensor], Tensor]) -> None:
    if key is not None:
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = plan


def _complex(
    x: Tensor, dims: list, sizes: list, norm: str | None, forward: bool, key: Any = None
) -> Tensor:
    """The c2c transform over ``dims`` (r2c of a real input, conjugated when inverse); with
    ``key``, ``x`` is the caller's input and the plan is remembered under ``key``."""
    resized = a.resize(x, dims, sizes)
    if not dims:
        return a.as_complex(resized)
    dims, scale = tuple(sorted(dims)), a.scale(norm, forward)
    if resized.dtype.is_complex:
        if resized is x:
            _remember(key, p.bound("fft_c2c", x, dims, scale, forward))
        return p.c2c(resized, dims, scale, forward)
    out = p.r2c(resized, dims, scale, False)
    return out if forward else conj_physical(out)


def _real(
    op: str, x: Tensor, dims: list, sizes: list, norm: str | None, forward: bool, key: Any = None
) -> Tensor:
    """The one-sided r2c transform (``rfft``; ``ihfft``, the inverse, conjugated)."""
    a.require_dims(op, dims)
    resized = a.resize(x, dims, sizes)
    halved, scale = a.halved(dims), a.scale(norm, forward)
    if forward and resized is x:
        _remember(key, p.bound("fft_r2c", x, halved, scale, True))
    out = p.r2c(resized, halved, scale, True)
    return out if forward else conj_physical(out)


def _to_real(
    op: str, input: Any, s: Any, dim: Any, norm: str | None, hermitian: bool, key: Any = None
) -> Tensor:
    """The c2r transform (``irfftn``; ``hfftn`` of the conjugate with the forward scale):
    the last dimension's output size is ``s[-1]``, by default twice its input's minus 2."""
    x = a.as_complex(a.signal(op, input))
    dims, sizes, last = a.c2r_dims(op, x, s, dim)
    x = a.resize(x, dims, sizes)
    halved, scale = a.halved(dims), a.scale(norm, hermitian)
    if hermitian:
        x = conj_physical(x)
    elif x is input:
        _remember(key, p.bound("fft_c2r", x, halved, scale, last))
    return p.c2r(x, halved, scale, last)


# -- one dimension ----------------------------------------------------------------------------


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional discrete Fourier transform (``torch.fft.fft``)."""
    key, plan = _plan("fft", input, n, dim, norm)
    if plan is not None:
        return plan(input)
    x = a.signal("fft", input)
    d, n = a.one_dim("fft", x, n, dim)
    return _complex(x, [d], [n], norm, True, key if x is input else None)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-dimensional inverse discrete Fourier transform (``torch.fft.ifft``)."""
    key, plan = _plan("ifft", input, n, dim, norm)
    if plan is not None:
        return plan(input)
    x = a.signal("ifft", input)
    d, n = a.one_dim("ifft", x, n, dim)
    return _complex(x, [d], [n], norm, False, key if x is input else None)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The one-sided transform of a real signal: bins 0..n//2 (``torch.fft.rfft``)."""
    key, plan = _plan("rfft", input, n, dim, norm)
    if plan is not None:
        return plan(input)
    x = a.signal("rfft", input, real_only=True)
    d, n = a.one_dim("rfft", x, n, dim)
    return _real("rfft", x, [d], [n], norm, True, key if x is input else None)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``hfft``: one-sided inverse transform of a real signal
    (``torch.fft.ihfft``)."""
    key, plan = _plan("ihfft", input, n, dim, norm)
    if plan is not None:
        return plan(input)
    x = a.signal("ihfft", input, real_only=True)
    d, n = a.one_dim("ihfft", x, n, dim)
    return _real("ihfft", x, [d], [n], norm, False, key if x is input else None)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The inverse of ``rfft``: ``n`` real points (default ``2 * (size - 1)``) from a one-sided
    spectrum (``torch.fft.irfft``)."""
    key, plan = _plan("irfft", input, n, dim, norm)
    if plan is not None:
        return plan(input)
    return _to_real("irfft", input, _one(n), (dim,), norm, False, key)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:
    """The transform of a Hermitian-symmetric signal given by its first half: ``n`` real
    points (default ``2 * (size - 1)``) (``torch.fft.hfft``)."""
    key, plan = _plan("hfft", input, n, dim, norm)
    if plan is not None:
        return plan(input)
    return _to_real("hfft", input, _one(n), (dim,), norm, True, key)


def _one(n: Any) -> Any:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"fft: argument 'n' must be int, not {type(n).__name__}")
    a.check_points(n)  # -1 would mean "the input's size" in s
    return (n,)


# -- several dimensions -----------------------------------------------------------------------


def fftn(input: Tensor, s: Dims = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The n-dimensional transform over ``dim`` (default: every dimension, or the last
    ``len(s)``), signal sizes ``s`` (``torch.fft.fftn``)."""
    key, plan = _plan("fftn", input, s, dim, norm)
    if plan is not None:
        return plan(input)
    x = a.signal("fftn", input)
    dims, sizes = a.many_dims("fftn", x, s, dim)
    return _complex(x, dims, sizes, norm, True, key if x is input else None)


def ifftn(input: Tensor, s: Dims = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The n-dimensional inverse transform (``torch.fft.ifftn``)."""
    key, plan = _plan("ifftn", input, s, dim, norm)
    if plan is not None:
        return plan(input)
    x = a.signal("ifftn", input)
    dims, sizes = a.many_dims("ifftn", x, s, dim)
    return _complex(x, dims, sizes, norm, False, key if x is input else None)


def rfftn(input: Tensor, s: Dims = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The n-dimensional transform of a real signal, one-sided along the last of ``dim``
    (``torch.fft.rfftn``)."""
    key, plan = _plan("rfftn", input, s, dim, norm)
    if plan is not None:
        return plan(input)
    x = a.signal("rfftn", input, real_only=True)
    dims, sizes = a.many_dims("rfftn", x, s, dim)
    return _real("rfftn", x, dims, sizes, norm, True, key if x is input else None)


def ihfftn(input: Tensor, s: Dims = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The inverse of ``hfftn`` (``torch.fft.ihfftn``)."""
    key, plan = _plan("ihfftn", input, s, dim, norm)
    if plan is not None:
        return plan(input)
    x = a.signal("ihfftn", input, real_only=True)
    dims, sizes = a.many_dims("ihfftn", x, s, dim)
    return _real("ihfftn", x, dims, sizes, norm, False, key if x is input else None)


def irfftn(input: Tensor, s: Dims = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The inverse of ``rfftn``: a real signal, ``s[-1]`` points (default ``2 * (size - 1)``)
    along the last of ``dim`` (``torch.fft.irfftn``)."""
    key, plan = _plan("irfftn", input, s, dim, norm)
    if plan is not None:
        return plan(input)
    return _to_real("irfftn", input, s, dim, norm, False, key)


def hfftn(input: Tensor, s: Dims = None, dim: Dims = None, norm: str | None = None) -> Tensor:
    """The n-dimensional transform of a Hermitian-symmetric signal given by its first half
    along the last of ``dim`` (``torch.fft.hfftn``)."""
    key, plan = _plan("hfftn", input, s, dim, norm)
    if plan is not None:
        return plan(input)
    return _to_real("hfftn", input, s, dim, norm, True, key)


def fft2(input: Tensor, s: Dims = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """``fftn`` over two dimensions (``torch.fft.fft2``)."""
    return fftn(input, s, dim, norm)


def ifft2(input: Tensor, s: Dims = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """``ifftn`` over two dimensions (``torch.fft.ifft2``)."""
    return ifftn(input, s, dim, norm)


def rfft2(input: Tensor, s: Dims = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """``rfftn`` over two dimensions (``torch.fft.rfft2``)."""
    return rfftn(input, s, dim, norm)


def irfft2(input: Tensor, s: Dims = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """``irfftn`` over two dimensions (``torch.fft.irfft2``)."""
    return irfftn(input, s, dim, norm)


def hfft2(input: Tensor, s: Dims = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """``hfftn`` over two dimensions (``torch.fft.hfft2``)."""
    return hfftn(input, s, dim, norm)


def ihfft2(input: Tensor, s: Dims = None, dim: Dims = (-2, -1), norm: str | None = None) -> Tensor:
    """``ihfftn`` over two dimensions (``torch.fft.ihfft2``)."""
    return ihfftn(input, s, dim, norm)
