"""The three fft primitives as tensor ops: the backend's kernel or the host's (through
:func:`~tensorweaver.ops.host_fallback.run_optional`), one graph node per call, named as
PyTorch names them (``FftC2CBackward0``, ...). ``norm`` is the IR's absolute scale
("none", "by_root_n", "by_n"); gradient rules: ``tensorweaver.autograd.fft_rules``.
"""

from __future__ import annotations

from typing import Any, Callable

from tensorweaver.autograd.mode import is_grad_enabled
from tensorweaver.autograd.node import Node
from tensorweaver.contract.dtypes import DType
from tensorweaver.fft import host
from tensorweaver.ops.host_fallback import run_optional
from tensorweaver.tensor import Tensor

#: primitive -> (its host version, its grad_fn name, its output dtype from the input's)
_PRIMITIVES: dict[str, tuple[Callable[..., Any], str, Callable[[DType], DType]]] = {
    "fft_c2c": (host.c2c, "FftC2CBackward0", lambda d: d),
    "fft_r2c": (host.r2c, "FftR2CBackward0", DType.to_complex),
    "fft_c2r": (host.c2r, "FftC2RBackward0", DType.to_real),
}


def _node(op: str, grad_fn: str, x: Tensor, native: object, dtype: DType, saved: tuple) -> Tensor:
    # apply() and labelled() inlined: one input, and a node of its own when it needs one.
    out = Tensor(native, x.backend, dtype)
    if x.requires_grad and is_grad_enabled():
        _attach(op, grad_fn, x, out, saved)
    return out


def _attach(op: str, grad_fn: str, x: Tensor, out: Tensor, saved: tuple) -> None:
    """Hang ``out`` from a node of primitive ``op`` of ``x``, named ``grad_fn``."""
    node = Node(op, (x,), saved)
    node.label = grad_fn
    out._node = node
    out._requires_grad = True


def _run(op: str, x: Tensor, *static: Any) -> Tensor:
    """Primitive ``op`` of ``x`` with its ``static`` arguments (the node saves them)."""
    host_fn, grad_fn, out_dtype = _PRIMITIVES[op]
    dtype = out_dtype(x.dtype)
    native = run_optional(x.backend, op, host_fn, dtype, x.native, *static)
    return _node(op, grad_fn, x, native, dtype, static)


def bound(op: str, like: Tensor, *static: Any) -> Callable[[Tensor], Tensor]:
    """Primitive ``op`` with ``static`` arguments for inputs of ``like``'s backend and dtype,
    the backend's kernel looked up once (what a cached transform calls)."""
    _, grad_fn, out_dtype = _PRIMITIVES[op]
    kernel = getattr(like.backend, op, None)
    if kernel is None:
        return lambda x: _run(op, x, *static)
    dtype = out_dtype(like.dtype)
    dims, norm, last = static  # each primitive's three: unpacked once, not at every call

    def call(x: Tensor) -> Tensor:  # _node inlined: one frame less a call (0.1 us)
        out = Tensor(kernel(x.native, dims, norm, last), x.backend, dtype)
        # x.requires_grad, its property's frame only for a view (whose flag may be its base's)
        grad = x._requires_grad or (x._view_of is not None and x.requires_grad)
        if grad and is_grad_enabled():
            _attach(op, grad_fn, x, out, static)
        return out

    return call


def c2c(x: Tensor, dims: tuple, norm: str, forward: bool) -> Tensor:
    """The complex DFT of complex ``x`` over ``dims`` (inverse unless ``forward``)."""
    return _run("fft_c2c", x, dims, norm, forward)


def r2c(x: Tensor, dims: tuple, norm: str, onesided: bool) -> Tensor:
    """The forward DFT of real ``x`` over ``dims``; half the last one's bins if ``onesided``."""
    return _run("fft_r2c", x, dims, norm, onesided)


def c2r(x: Tensor, dims: tuple, norm: str, last_dim_size: int) -> Tensor:
    """The real inverse DFT of the one-sided spectrum ``x`` over ``dims``, ``last_dim_size``
    points along the last of them."""
    return _run("fft_c2r", x, dims, norm, last_dim_size)
