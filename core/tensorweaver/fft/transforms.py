"""PyTorch's transforms of ``torch.fft``: complex (``fft``, ``ifft``, ``fftn``, ...), of
real signals (``rfft``, ``irfft``, ...) and of Hermitian ones (``hfft``, ``ihfft``, ...).

Each resizes its input to the signal size (zero padding or trimming at the end, as
PyTorch) and calls one primitive (:mod:`tensorweaver.fft.primitives`): complex to complex,
real to complex (a real input of ``fft`` too, as PyTorch), complex to real. A Hermitian
signal's transform is the real one of its conjugate with the other direction's scale.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from tensorweaver.amp import CPU_FLOAT32, autocast_dtype, float32_operands
from tensorweaver.fft import arguments as a
from tensorweaver.fft import primitives as p
from tensorweaver.linalg.out import write_out
from tensorweaver.ops.complex import conj, conj_physical
from tensorweaver.tensor import Tensor

Dims = Optional[Any]  # an int or a sequence of ints, or None

#: Transforms already resolved, by (function, backend, shape, dtype, n or s, dim, norm, with
#: the types of n or s and dim): the primitive's call on an input that needs no cast,
#: resizing or conjugation. Resolving the arguments again took 2-3 us a call, a tenth of a
#: transform of 8 x 1024 points.
_PLANS: dict[tuple, Callable[[Tensor], Tensor]] = {}
#: Past this many plans the cache starts afresh (a program that meets ever new shapes).
_MAX_PLANS = 256


def _remember(key: tuple | None, plan: Callable[[Tensor], Tensor]) -> None:
    if key is not None:
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        _PLANS[key] = plan


def _complex(
    x: Tensor,
    dims: list,
    sizes: list,
    norm: str | None,
    forward: bool,
    key: Any = None,
    view: bool = False,
) -> Tensor:
    """The c2c transform over ``dims`` (r2c of a real input, conjugated when inverse: as a
    conjugate view with ``view``, PyTorch's ``ifft``); with ``key``, ``x`` is the caller's
    input and the plan is remembered under ``key``."""
    resized = a.resize(x, dims, sizes)
    if not dims:
        return a.as_complex(resized)
    dims, scale = tuple(sorted(dims)), a.scale(norm, forward)
    if resized.dtype.is_complex:
        if resized is x:
            _remember(key, p.bound("fft_c2c", x, dims, scale, forward))
        return p.c2c(resized, dims, scale, forward)
    out = p.r2c(resized, dims, scale, False)
    return out if forward else conj(out) if view else conj_physical(out)


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
    if forward:
        return out
    # PyTorch's inverse over one dimension is a conjugate view (its numpy() and view_as_real
    # refuse it); over more its conjugate is computed
    return conj(out) if len(dims) == 1 else conj_physical(out)


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


# -- resolving a call's arguments: the first call of each key, or one the cache cannot take ---


def _fft(input: Any, n: Any, dim: Any, norm: Any, key: Any) -> Tensor:
    x = a.signal("fft", input)
    d, n = a.one_dim("fft", x, n, dim)
    return _complex(x, [d], [n], norm, True, key if x is input else None)


def _ifft(input: Any, n: Any, dim: Any, norm: Any, key: Any) -> Tensor:
    x = a.signal("ifft", input)
    d, n = a.one_dim("ifft", x, n, dim)
    return _complex(x, [d], [n], norm, False, key if x is input else None, view=True)


def _rfft(input: Any, n: Any, dim: Any, norm: Any, key: Any) -> Tensor:
    x = a.signal("rfft", input, real_only=True)
    d, n = a.one_dim("rfft", x, n, dim)
    return _real("rfft", x, [d], [n], norm, True, key if x is input else None)


def _ihfft(input: Any, n: Any, dim: Any, norm: Any, key: Any) -> Tensor:
    x = a.signal("ihfft", input, real_only=True)
    d, n = a.one_dim("ihfft", x, n, dim)
    return _real("ihfft", x, [d], [n], norm, False, key if x is input else None)


def _irfft(input: Any, n: Any, dim: Any, norm: Any, key: Any) -> Tensor:
    return _to_real("irfft", input, _one(n), (dim,), norm, False, key)


def _hfft(input: Any, n: Any, dim: Any, norm: Any, key: Any) -> Tensor:
    return _to_real("hfft", input, _one(n), (dim,), norm, True, key)


def _one(n: Any) -> Any:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"fft: argument 'n' must be int, not {type(n).__name__}")
    a.check_points(n)  # -1 would mean "the input's size" in s
    return (n,)


def _fftn(input: Any, s: Dims, dim: Dims, norm: Any, key: Any) -> Tensor:
    x = a.signal("fftn", input)
    dims, sizes = a.many_dims("fftn", x, s, dim)
    return _complex(x, dims, sizes, norm, True, key if x is input else None)


def _ifftn(input: Any, s: Dims, dim: Dims, norm: Any, key: Any) -> Tensor:
    x = a.signal("ifftn", input)
    dims, sizes = a.many_dims("ifftn", x, s, dim)
    return _complex(x, dims, sizes, norm, False, key if x is input else None)


def _rfftn(input: Any, s: Dims, dim: Dims, norm: Any, key: Any) -> Tensor:
    x = a.signal("rfftn", input, real_only=True)
    dims, sizes = a.many_dims("rfftn", x, s, dim)
    return _real("rfftn", x, dims, sizes, norm, True, key if x is input else None)


def _ihfftn(input: Any, s: Dims, dim: Dims, norm: Any, key: Any) -> Tensor:
    x = a.signal("ihfftn", input, real_only=True)
    dims, sizes = a.many_dims("ihfftn", x, s, dim)
    return _real("ihfftn", x, dims, sizes, norm, False, key if x is input else None)


def _irfftn(input: Any, s: Dims, dim: Dims, norm: Any, key: Any) -> Tensor:
    return _to_real("irfftn", input, s, dim, norm, False, key)


def _hfftn(input: Any, s: Dims, dim: Dims, norm: Any, key: Any) -> Tensor:
    return _to_real("hfftn", input, s, dim, norm, True, key)


# -- the public functions: a cached plan's call, else the resolution; then PyTorch's out= ----

Resolve = Callable[[Any, Any, Any, Any, Any], Tensor]
#: The transforms PyTorch composes of others (ifft: of a real input), whose out= takes
#: inputs that require grad.
_COMPOSITE: dict[str, Any] = {"ihfft": True, "ifft": lambda x: not x.dtype.is_complex}


def _typed(value: Any) -> tuple:
    """``value`` (s or dim) with its type and its entries' as a plan's key: 1.0 and True
    equal 1, and a plan must not take the sizes and dimensions PyTorch refuses."""
    if type(value) is tuple:
        return (value, *map(type, value))
    return (value, type(value))


def _public(call: Callable[..., Tensor], name: str, doc: str) -> Callable[..., Tensor]:
    call.__name__ = call.__qualname__ = name
    call.__doc__ = doc
    return call


# The plan look-up is written out in both wrappers: as a function of its own (and with the
# out= wrapper a layer of its own) the frames cost 1-2 us of a 25 us rfft of 8 x 1024 points.
def _sized(name: str, resolve: Resolve, doc: str) -> Callable[..., Tensor]:
    """The public ``name(input, n=None, dim=-1, norm=None, *, out=None)``."""
    composite = _COMPOSITE.get(name, False)
    in_float32 = f"fft.{name}" in CPU_FLOAT32

    def call(
        input: Any, n: Any = None, dim: int = -1, norm: Any = None, *, out: Any = None
    ) -> Tensor:
        if in_float32 and autocast_dtype() is not None:  # PyTorch's CPU autocast: in float32
            (input,) = float32_operands(input)
        key = plan = None
        if type(input) is Tensor:
            # the types too: 1.0 and True equal 1, and a plan must not take what PyTorch refuses
            # (the slots, not the properties: this runs once a call)
            shape, dtype = input._shape, input._dtype
            key = (name, input.backend, shape, dtype, n, type(n), dim, type(dim), norm)
            try:
                plan = _PLANS.get(key)
            except TypeError:  # an unhashable argument: resolved (and refused) the long way
                key = None
        value = resolve(input, n, dim, norm, key) if plan is None else plan(input)
        if out is None:
            return value
        return write_out(f"fft_{name}", value, out, input, composite, True, False)

    return _public(call, name, doc)


def _shaped(name: str, of: str, resolve: Resolve, dims: Dims, doc: str) -> Callable[..., Tensor]:
    """The public ``name(input, s=None, dim=dims, norm=None, *, out=None)``, cached as ``of``
    (fft2 is fftn over two dimensions)."""
    in_float32 = f"fft.{name}" in CPU_FLOAT32
    # the keys of the default s and dim, made once: two calls of _typed took 0.35 us of the
    # 1.7 us fft2 adds to torch's 11 us on 8 x 32 x 32 points
    no_s, default_dim = _typed(None), _typed(dims)

    def call(
        input: Any, s: Dims = None, dim: Dims = dims, norm: Any = None, *, out: Any = None
    ) -> Tensor:
        if in_float32 and autocast_dtype() is not None:  # PyTorch's CPU autocast: in float32
            (input,) = float32_operands(input)
        key = plan = None
        if type(input) is Tensor:
            typed_s = no_s if s is None else _typed(s)
            typed_dim = default_dim if dim is dims else _typed(dim)
            key = (of, input.backend, input._shape, input._dtype, typed_s, typed_dim, norm)
            try:
                plan = _PLANS.get(key)
            except TypeError:  # an unhashable argument: resolved (and refused) the long way
                key = None
        value = resolve(input, s, dim, norm, key) if plan is None else plan(input)
        if out is None:
            return value
        return write_out(f"fft_{name}", value, out, input, False, True, False)

    return _public(call, name, doc)


fft = _sized("fft", _fft, "The one-dimensional discrete Fourier transform (``torch.fft.fft``).")
ifft = _sized(
    "ifft", _ifft, "The one-dimensional inverse discrete Fourier transform (``torch.fft.ifft``)."
)
rfft = _sized(
    "rfft", _rfft, "The one-sided transform of a real signal: bins 0..n//2 (``torch.fft.rfft``)."
)
ihfft = _sized(
    "ihfft",
    _ihfft,
    "The inverse of ``hfft``: one-sided inverse transform of a real signal (``torch.fft.ihfft``).",
)
irfft = _sized(
    "irfft",
    _irfft,
    "The inverse of ``rfft``: ``n`` real points (default ``2 * (size - 1)``) from a one-sided "
    "spectrum (``torch.fft.irfft``).",
)
hfft = _sized(
    "hfft",
    _hfft,
    "The transform of a Hermitian-symmetric signal given by its first half: ``n`` real points "
    "(default ``2 * (size - 1)``) (``torch.fft.hfft``).",
)
fftn = _shaped(
    "fftn",
    "fftn",
    _fftn,
    None,
    "The n-dimensional transform over ``dim`` (default: every dimension, or the last "
    "``len(s)``), signal sizes ``s`` (``torch.fft.fftn``).",
)
ifftn = _shaped(
    "ifftn", "ifftn", _ifftn, None, "The n-dimensional inverse transform (``torch.fft.ifftn``)."
)
rfftn = _shaped(
    "rfftn",
    "rfftn",
    _rfftn,
    None,
    "The n-dimensional transform of a real signal, one-sided along the last of ``dim`` "
    "(``torch.fft.rfftn``).",
)
ihfftn = _shaped(
    "ihfftn", "ihfftn", _ihfftn, None, "The inverse of ``hfftn`` (``torch.fft.ihfftn``)."
)
irfftn = _shaped(
    "irfftn",
    "irfftn",
    _irfftn,
    None,
    "The inverse of ``rfftn``: a real signal, ``s[-1]`` points (default ``2 * (size - 1)``) "
    "along the last of ``dim`` (``torch.fft.irfftn``).",
)
hfftn = _shaped(
    "hfftn",
    "hfftn",
    _hfftn,
    None,
    "The n-dimensional transform of a Hermitian-symmetric signal given by its first half "
    "along the last of ``dim`` (``torch.fft.hfftn``).",
)
_TWO = (-2, -1)
fft2 = _shaped("fft2", "fftn", _fftn, _TWO, "``fftn`` over two dimensions (``torch.fft.fft2``).")
ifft2 = _shaped(
    "ifft2", "ifftn", _ifftn, _TWO, "``ifftn`` over two dimensions (``torch.fft.ifft2``)."
)
rfft2 = _shaped(
    "rfft2", "rfftn", _rfftn, _TWO, "``rfftn`` over two dimensions (``torch.fft.rfft2``)."
)
irfft2 = _shaped(
    "irfft2", "irfftn", _irfftn, _TWO, "``irfftn`` over two dimensions (``torch.fft.irfft2``)."
)
hfft2 = _shaped(
    "hfft2", "hfftn", _hfftn, _TWO, "``hfftn`` over two dimensions (``torch.fft.hfft2``)."
)
ihfft2 = _shaped(
    "ihfft2", "ihfftn", _ihfftn, _TWO, "``ihfftn`` over two dimensions (``torch.fft.ihfft2``)."
)
