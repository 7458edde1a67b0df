"""torch.special's functions that PyTorch defines no derivative for (Bessel functions of
integer order, Airy, orthogonal polynomials), as ops: their results are constants (no
gradient, as PyTorch's), integer inputs compute in the default float dtype, float16 and
bfloat16 are refused as PyTorch's CPU and CUDA kernels refuse them, and a backend with the
kernel (the torch plugin) computes them, the others on the host."""

from __future__ import annotations

from typing import Any, Callable

from tensorweaver.autograd.mode import no_grad
from tensorweaver.ops.apply import apply, written_out
from tensorweaver.ops.creation import as_tensor
from tensorweaver.ops.host_fallback import run_optional
from tensorweaver.ops.spellings import broadcast_tensors
from tensorweaver.promotion import get_default_dtype, result_type
from tensorweaver.tensor import Tensor

_HALF = {"float16": "Half", "bfloat16": "BFloat16"}


def _float_dtype(name: str, *operands: Any) -> Any:
    dtype = result_type(*operands) if len(operands) > 1 else operands[0].dtype
    if not dtype.is_floating_point:
        dtype = get_default_dtype()
    if dtype.name in _HALF:
        raise NotImplementedError(
            f"\"{name}\" not implemented for '{_HALF[dtype.name]}' (as in PyTorch); compute it "
            "in float32 with .float()"
        )
    return dtype


def unary(name: str, host: Callable[[Any], Any]) -> Callable:
    """The op ``name(input, *, out=None)`` computing ``host`` where the backend has no kernel."""

    def op(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        if out is not None:
            return written_out(name, op(input), out, differentiable=False, inputs=(input,))
        if not isinstance(input, Tensor):
            raise TypeError(
                f"{name}(): argument 'input' (position 1) must be Tensor, not "
                f"{type(input).__name__}"
            )
        dtype = _float_dtype(name, input)
        with no_grad():
            x = input.to(dtype)
            return apply(name, run_optional(x.backend, name, host, dtype, x.native), dtype, (x,))

    op.__name__ = op.__qualname__ = name
    return op


def binary(name: str, host: Callable[[Any, Any], Any]) -> Callable:
    """The op ``name(input, n, *, out=None)``: either argument may be a Python number."""

    def op(input: Any, n: Any, *, out: Tensor | None = None) -> Tensor:
        if out is not None:
            return written_out(name, op(input, n), out, differentiable=False, inputs=(input, n))
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(
                f"{name}(): expected a Tensor as input or n, got "
                f"({type(input).__name__}, {type(n).__name__})"
            )
        dtype = _float_dtype(name, input, n)
        device = (input if isinstance(input, Tensor) else n).device
        with no_grad():
            x, degree = broadcast_tensors(
                *(
                    v.to(dtype)
                    if isinstance(v, Tensor)
                    else as_tensor(v, dtype=dtype, device=device)
                    for v in (input, n)
                )
            )
            native = run_optional(x.backend, name, host, dtype, x.native, degree.native)
            return apply(name, native, dtype, (x, degree))

    op.__name__ = op.__qualname__ = name
    return op
