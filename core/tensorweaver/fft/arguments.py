"""PyTorch's argument rules for ``tw.fft``: the input's dtype, the dimensions and signal
sizes (``n``/``s`` and ``dim``), the ``norm`` names, and the zero padding or trimming to
the signal size, with PyTorch's exception types (``torch/_refs/fft.py`` and
``aten/src/ATen/native/SpectralOps.cpp`` state them).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensorweaver.contract import dtypes
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops.complex import supports_complex
from tensorweaver.promotion import get_default_dtype
from tensorweaver.tensor import Tensor

#: Public norm -> the IR's scale of a forward-direction transform (fft, rfft, hfft).
_FORWARD_SCALE = {"backward": "none", "ortho": "by_root_n", "forward": "by_n"}
#: ... and of an inverse-direction one (ifft, irfft, ihfft).
_INVERSE_SCALE = {"backward": "by_n", "ortho": "by_root_n", "forward": "none"}


def scale(norm: str | None, forward: bool) -> str:
    """The IR's scale for ``norm`` (None: "backward") in a transform's direction."""
    if norm is None:
        norm = "backward"
    table = _FORWARD_SCALE if forward else _INVERSE_SCALE
    if not isinstance(norm, str) or norm not in table:
        raise RuntimeError(
            f'Invalid normalization mode: "{norm}" (use "backward", "ortho" or "forward")'
        )
    return table[norm]


def signal(op: str, input: Any, real_only: bool = False) -> Tensor:
    """``input`` in a dtype the transforms take: float32/float64 or complex as it is,
    integers and bool in the default float dtype (PyTorch's rules; half precision has
    no CPU kernel there, so it is an error here too)."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"fft_{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    if not supports_complex(input.backend):
        raise TypeError(
            f"fft_{op}(): the {input.backend.device.name} device has no complex dtypes (its "
            "backend does not list complex64/complex128); move the tensor to one that has "
            "them, e.g. .to('cpu')"
        )
    dtype = input.dtype
    if dtype in (dtypes.float16, dtypes.bfloat16):
        raise RuntimeError(
            f"fft_{op}(): unsupported dtype {dtype.name} (as PyTorch's CPU kernels); convert "
            "the input with .float() first"
        )
    if dtype.is_complex:
        if real_only:
            raise RuntimeError(
                f"{op} expects a real input tensor, but got {dtype.name}; take .real or use "
                f"the complex transform instead"
            )
        return input
    if dtype.kind != "f":
        return ew.cast(input, get_default_dtype())
    return input


def as_complex(x: Tensor) -> Tensor:
    """A real ``x`` as complex of its precision (imaginary parts 0); complex as it is."""
    return x if x.dtype.is_complex else ew.cast(x, x.dtype.to_complex())


def wrap_dim(d: Any, ndim: int, name: str = "dim") -> int:
    """A dimension as a non-negative index (PyTorch's IndexError when out of range)."""
    if isinstance(d, bool) or not isinstance(d, int):
        raise TypeError(f"fft: argument '{name}' must be int, not {type(d).__name__}")
    if ndim == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    if not -ndim <= d < ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but "
            f"got {d})"
        )
    return d % ndim


def check_points(n: int) -> None:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")


def one_dim(op: str, x: Tensor, n: Any, dim: Any) -> tuple[int, int]:
    """``(dim, n)`` of a one-dimensional transform, ``n`` defaulting to the input's size."""
    d = wrap_dim(dim, x.ndim)
    if n is None:
        n = x.shape[d]
    elif isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"fft_{op}(): argument 'n' must be int, not {type(n).__name__}")
    check_points(n)
    return d, n


def _int_list(op: str, name: str, value: Any) -> list[int] | None:
    if value is None:
        return None
    items = [value] if isinstance(value, int) else value
    if not isinstance(items, Sequence) or any(
        isinstance(v, bool) or not isinstance(v, int) for v in items
    ):
        raise TypeError(
            f"fft_{op}(): argument '{name}' must be tuple of ints, not {type(value).__name__}"
        )
    return list(items)


def many_dims(op: str, x: Tensor, s: Any, dim: Any) -> tuple[list[int], list[int]]:
    """``(dims, sizes)`` of an n-dimensional transform, PyTorch's defaults: every
    dimension, or the last ``len(s)`` ones; an ``s`` entry of -1 keeps the input's size."""
    sizes = _int_list(op, "s", s)
    dims = _int_list(op, "dim", dim)
    if dims is not None:
        dims = [wrap_dim(d, x.ndim) for d in dims]
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"fft_{op}(): FFT dims must be unique, got {dim}")
    if sizes is not None:
        if dims is not None and len(dims) != len(sizes):
            raise RuntimeError(
                f"When given, dim and shape arguments must have the same length (fft_{op}: "
                f"s={s}, dim={dim})"
            )
        if len(sizes) > x.ndim:
            raise RuntimeError(
                f"Got shape with {len(sizes)} values but input tensor only has {x.ndim} dimensions."
            )
        if dims is None:
            dims = list(range(x.ndim - len(sizes), x.ndim))
        sizes = [x.shape[d] if n == -1 else n for d, n in zip(dims, sizes)]
    else:
        dims = list(range(x.ndim)) if dims is None else dims
        sizes = [x.shape[d] for d in dims]
    for n in sizes:
        check_points(n)
    return dims, sizes


def resize(x: Tensor, dims: Sequence[int], sizes: Sequence[int]) -> Tensor:
    """``x`` zero-padded or trimmed at the end of each of ``dims`` to ``sizes``."""
    shape = x.shape
    if all(shape[d] == n for d, n in zip(dims, sizes)):
        return x
    widths = [(0, 0)] * x.ndim
    for d, n in zip(dims, sizes):
        widths[d] = (0, n - x.shape[d])
    return mv.pad_dims(x, widths)


def halved(dims: Sequence[int]) -> tuple:
    """``dims`` for a one-sided primitive: the others sorted, the halved one last."""
    return (*sorted(dims[:-1]), dims[-1])


def require_dims(op: str, dims: Sequence[int]) -> None:
    if not dims:
        raise RuntimeError(f"{op} must transform at least one axis")


def c2r_dims(op: str, x: Tensor, s: Any, dim: Any) -> tuple[list[int], list[int], int]:
    """``(dims, input sizes, output size of the last dim)`` of a transform to a real signal:
    ``many_dims``'s, the last output size ``s[-1]`` or else twice its input size minus 2,
    the input resized to half that plus one along it."""
    dims, sizes = many_dims(op, x, s, dim)
    require_dims(op, dims)
    given = _int_list(op, "s", s)
    last = given[-1] if given is not None and given[-1] != -1 else 2 * (x.shape[dims[-1]] - 1)
    check_points(last)
    return dims, [*sizes[:-1], last // 2 + 1], last
