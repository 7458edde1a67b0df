"""Complex numbers: parts, conjugates, moduli and angles (``torch.real``, ``torch.polar``, ...).

Four primitives carry them (API 2.4: ``real``, ``imag``, ``conj``, ``complex``); everything
else here is composed of those and real ops, so its gradient follows PyTorch's convention:
the gradient of a real loss L with respect to z = x + iy is dL/dx + i dL/dy (the conjugate
Wirtinger derivative, doubled). ``conj`` is a view with PyTorch's conjugate bit
(ops/views.py): it holds the conjugated values and writes back into its base conjugated;
``conj_physical`` computes a new tensor.

``x.real``, ``x.imag``, ``view_as_real`` and ``view_as_complex`` are views too (ops/views.py):
writes into them reach the complex tensor, and they follow its later changes.

The imaginary part of a conjugate view (``z.conj().imag``) has PyTorch's negative bit
(``is_neg``): ``numpy()`` refuses it and ``resolve_neg`` copies it, as PyTorch's.
"""

from __future__ import annotations

import math
from typing import Any

from tensorweaver.contract import dtypes
from tensorweaver.contract.dtypes import DType
from tensorweaver.memory_formats import c_ordered, laid_out, preserved_order
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import views
from tensorweaver.ops.apply import (
    apply,
    broadcast_shapes,
    check_backends,
    expand_native,
    labelled,
    written_out,
)
from tensorweaver.promotion import get_default_dtype
from tensorweaver.tensor import Tensor


def _tensor(op: str, x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    return x


def supports_complex(backend: Any) -> bool:
    """Whether ``backend`` lists a complex dtype (and so has the complex primitives)."""
    return dtypes.complex64 in backend.dtypes or dtypes.complex128 in backend.dtypes


def real(input: Tensor) -> Tensor:
    """The real parts of a complex tensor (``torch.real``); a real tensor itself."""
    x = _tensor("real", input)
    if not x.dtype.is_complex:
        return x
    return apply("real", _in_order_of(x, x.backend.real(x.native)), x.dtype.to_real(), (x,))


def imag(input: Tensor) -> Tensor:
    """The imaginary parts of a complex tensor (``torch.imag``)."""
    x = _tensor("imag", input)
    if not x.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return apply("imag", _in_order_of(x, x.backend.imag(x.native)), x.dtype.to_real(), (x,))


def _in_order_of(x: Tensor, native: Any, tail: tuple[int, ...] = ()) -> Any:
    """``native``, a new array of ``x``'s values (followed by the axes ``tail``), laid out in
    ``x``'s axis order (PyTorch's part or pairs are strided views of ``x``'s memory, whose
    order ops that follow their input's layout keep: ``z.t().real + 1`` has strides (1, 3));
    a backend's part may come back C-ordered. C-ordered ``x`` without a size-1 axis (whose
    stride C order leaves free): ``native`` as it is, told cheaply."""
    if x.ndim < 2 or (c_ordered(x.native) and 1 not in x.shape):
        return native
    order = (*x._preserved_order(), *tail)
    read = getattr(x.backend, "strides", None)
    strides = None if read is None else read(native)
    if strides is not None and preserved_order(tuple(native.shape), strides) == order:
        return native  # (the backend kept x's order: torch's clone does)
    return laid_out(x.backend, native, order)


def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate, computed (``torch.conj_physical``); a real tensor itself."""
    x = _tensor("conj_physical", input)
    if not x.dtype.is_complex:
        return x
    out = apply("conj", x.backend.conj(x.native), x.dtype, (x,))
    if out._node is not None:  # (inline, not labelled(): gradient rules call it often)
        out._node.label = "ConjPhysicalBackward0"
    return out


def conj(input: Tensor) -> Tensor:
    """The complex conjugate as a view of ``input`` with the conjugate bit set
    (``torch.conj``, ops/views.py); a real tensor itself."""
    x = _tensor("conj", input)
    return views.conj(x) if x.dtype.is_complex else x


def resolve_conj(input: Tensor) -> Tensor:
    """A new tensor with the conjugate's values where ``input`` has the conjugate bit set
    (``torch.resolve_conj``), else ``input`` itself."""
    x = _tensor("resolve_conj", input)
    return x.clone() if is_conj(x) else x


def resolve_neg(input: Tensor) -> Tensor:
    """A new tensor with ``input``'s values where it has PyTorch's negative bit (the
    imaginary part of a conjugate view, ``z.conj().imag``: ``is_neg``), else ``input``
    itself (``torch.resolve_neg``)."""
    from tensorweaver.ops.spellings import is_neg  # (spellings imports this module)

    x = _tensor("resolve_neg", input)
    return x.clone() if is_neg(x) else x


def is_conj(input: Tensor) -> bool:
    """Whether ``input`` has PyTorch's conjugate bit: it is a conjugate view (``conj()``,
    ``mH``, ``adjoint()``), or a view or ``detach()`` of one, conjugated an odd number of
    times; a complex part (``real``, ``view_as_complex``) starts afresh."""
    t = _tensor("is_conj", input)
    if not t.dtype.is_complex:
        return False
    conjugated = False
    while True:
        view = t._view_of
        if view is not None:
            up = view[0]
            if getattr(view[1], "conjugates", False):
                conjugated = not conjugated
            elif up.dtype is not t.dtype:
                return conjugated
            t = up
        elif t._alias_of is not None:
            t = t._alias_of
        else:
            return conjugated


def complex(real: Tensor, imag: Tensor) -> Tensor:
    """The complex tensor ``real + i * imag`` (``torch.complex``): two float32 or two float64
    tensors, broadcast together."""
    re, im = _tensor("complex", real), _tensor("complex", imag)
    if re.dtype is not im.dtype:
        raise RuntimeError(
            f"complex(): expected real and imag to have the same dtype, but got "
            f"{re.dtype.name} and {im.dtype.name}; convert one with .to(...)"
        )
    if re.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(
            f"complex(): expected both inputs to be float32 or float64 tensors, got "
            f"{re.dtype.name} (convert with .float() or .double())"
        )
    backend = check_backends("complex", (re, im))
    _require_complex(backend, "complex")
    rn, imn = re.native, im.native
    if re.shape != im.shape:
        shape = broadcast_shapes("complex", re.shape, im.shape)
        rn, imn = expand_native(re, shape), expand_native(im, shape)
    return apply("complex", backend.complex(rn, imn), re.dtype.to_complex(), (re, im))


def _require_complex(backend: Any, op: str) -> None:
    if not supports_complex(backend):
        raise TypeError(
            f"{op}(): the {backend.device.name} device has no complex dtypes (its backend does "
            "not list complex64/complex128); move the tensors to a device that has them, e.g. "
            ".to('cpu')"
        )


_POLAR_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64)


def polar(abs: Tensor, angle: Tensor) -> Tensor:
    """The complex tensor with modulus ``abs`` and argument ``angle`` (``torch.polar``)."""
    r, theta = _tensor("polar", abs), _tensor("polar", angle)
    if r.dtype not in _POLAR_DTYPES or theta.dtype not in _POLAR_DTYPES:
        raise RuntimeError(
            "polar: Expected both inputs to be Half, Float or Double tensors but got "
            f"{dtypes.SCALAR_TYPE_NAMES[r.dtype.name]} and "
            f"{dtypes.SCALAR_TYPE_NAMES[theta.dtype.name]}"
        )
    if r.dtype is not theta.dtype:
        raise RuntimeError(
            f"polar: Expected object of scalar type {dtypes.SCALAR_TYPE_NAMES[r.dtype.name]} "
            f"but got scalar type {dtypes.SCALAR_TYPE_NAMES[theta.dtype.name]} for second "
            "argument"
        )
    r_, theta_ = r.detach(), theta.detach()
    value = complex(ew.mul(r_, ew.cos(theta_)), ew.mul(r_, ew.sin(theta_)))
    # One node keeping its output, as PyTorch's PolarBackward0 saves its result alone: its
    # rule (autograd/gradients.py) reads it, and a write through ``.data`` reaches it
    return apply("polar", value.native, value.dtype, (r, theta), value.native)


def angle(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The argument of each element, in [-pi, pi] (``torch.angle``): for real tensors pi
    where negative, else 0 (NaN stays NaN), with a zero gradient."""
    if out is not None:
        return written_out("angle", angle(input), out, inputs=(input,))
    x = _tensor("angle", input)
    if x.dtype.is_complex:
        from tensorweaver.ops.special import atan2

        return labelled(atan2(imag(x), real(x)), "AngleBackward0", x)
    if x.dtype.kind != "f":
        x = x.to(get_default_dtype())
    v = x.detach()
    # pi times a tensor of x's dtype: a Python pi in where() would round to the default dtype.
    value = ew.where(ew.isnan(v), v, ew.mul(ew.lt(v, 0).to(v.dtype), math.pi))
    return labelled(ew.with_zero_gradient(value, x), "AngleBackward0", x)


def sgn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``z / |z|`` for complex tensors (0 at 0), ``sign`` for real ones (``torch.sgn``)."""
    if out is not None:
        return written_out("sgn", sgn(input), out, same_dtype=True, inputs=(input,))
    x = _tensor("sgn", input)
    # labelled: torch's node saves the result, so an in-place change of it is refused
    return labelled(_sgn(x), "SgnBackward0", x)


def _sgn(x: Tensor) -> Tensor:
    if not x.dtype.is_complex:
        return ew.sign(x)
    modulus = ew.abs(x)
    safe = ew.where(ew.eq(modulus, 0), 1.0, modulus)
    return ew.where(ew.eq(modulus, 0), 0.0, ew.div(x, safe))


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor as a real one with a last dimension of 2: (real, imag)
    (``torch.view_as_real``). Differs from PyTorch: a new tensor, not a view."""
    from tensorweaver.ops.movement import stack

    x = _tensor("view_as_real", input)
    if not x.dtype.is_complex:
        raise RuntimeError(
            f"view_as_real is only supported for complex tensors, got {x.dtype.name}; "
            "make one with tw.complex(re, im)"
        )
    if is_conj(x):
        raise RuntimeError(
            "view_as_real doesn't work on unresolved conjugated tensors: a conjugate view "
            "holds its base's memory unconjugated. Use view_as_real(x.resolve_conj()), a "
            "new tensor that does not alias x"
        )
    pairs = stack((real(x), imag(x)), dim=-1)
    native = _in_order_of(x, pairs.native, (x.ndim,))
    if native is not pairs.native:  # (the pair axis innermost, after x's own order)
        pairs.data = Tensor(native, pairs.backend, pairs.dtype)
    return labelled(pairs, "ViewAsRealBackward0", x)


def view_as_complex(input: Tensor) -> Tensor:
    """A float32/float64 tensor whose last dimension has size 2 as a complex tensor
    (``torch.view_as_complex``). Differs from PyTorch: a new tensor, not a view."""
    x = _tensor("view_as_complex", input)
    if x.dtype not in (dtypes.float32, dtypes.float64):
        raise RuntimeError(
            f"view_as_complex is only supported for float and double tensors, but got a "
            f"tensor of scalar type: {x.dtype.name}"
        )
    if not x.shape or x.shape[-1] != 2:
        raise RuntimeError(
            f"Tensor must have a last dimension of size 2, got shape {tuple(x.shape)}"
        )
    return complex(x[..., 0], x[..., 1])


def gradient_as(g: Tensor, dtype: DType) -> Tensor:
    """A gradient brought to its input's dtype: a real input of a complex computation gets
    the real part (PyTorch's convention), silently; any other change is a cast."""
    if g.dtype.is_complex and not dtype.is_complex:
        g = real(g)
    return g if g.dtype is dtype else ew.cast(g, dtype)
