"""What every masked operation shares: canonical dims, the canonical mask, identity values.

A masked operation replaces the masked-out elements of its input by the identity value of the
reduction it runs (``op(identity, v) == v``) and then runs the ordinary op: the gradient is the
ordinary op's gradient through ``tw.where``, so it flows exactly where PyTorch's flows, and the
whole namespace runs on every backend without a primitive of its own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Union

import tensorweaver as tw
from tensorweaver.tensor import Tensor

DimOrDims = Union[int, Sequence[int], None]


def _canonical_dim(dim: DimOrDims, ndim: int) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative dims; None and ``()`` mean every dim."""
    # ``dim=()`` still means "reduce everything" in PyTorch's masked reductions.
    if dim is None or dim == ():
        return tuple(range(ndim))
    ndim = max(ndim, 1)  # a 0-d tensor accepts dim 0 and -1, as PyTorch's reductions do
    dims: list[int] = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d in dims:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        if d >= ndim or d < -ndim:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                f"but got {d})"
            )
        dims.append(d % ndim)
    return tuple(sorted(dims))


def _input_mask(
    input: Tensor, *args: object, mask: Tensor | None = None, **kwargs: object
) -> Tensor:
    """``mask`` broadcast to ``input``'s shape, as booleans."""
    if mask is None:
        raise ValueError("_input_mask requires explicit mask")
    if mask.shape != input.shape:
        if mask.ndim > input.ndim:
            raise IndexError(
                "_input_mask expected broadcastable mask (got mask dimensionality higher than "
                "of the input)"
            )
        mask = tw.broadcast_to(mask, input.shape)
    return mask if mask.dtype == tw.bool else mask.to(dtype=tw.bool)


def _identity(op_name: str, input: Tensor, *args: object) -> tuple[complex, tw.dtype] | None:
    """The identity value of reduction ``op_name`` on ``input``'s dtype and the dtype it has
    (float32 for the median of integers); None where it depends on the data (mean, var,
    std)."""
    dtype = input.dtype
    op_name = op_name.rsplit(".", 1)[-1]
    value: complex | None = None
    if op_name in ("sum", "cumsum"):
        value = 0
    elif op_name in ("prod", "cumprod"):
        value = 1
    elif op_name in ("amax", "argmax", "logaddexp", "logsumexp"):
        if dtype.is_floating_point:
            value = -math.inf
        elif dtype.is_complex and op_name == "logsumexp":
            value = complex(-math.inf, 0)
        # Complex counts as signed, and tw.iinfo refuses it as PyTorch's identity does.
        elif tw.is_signed(input) or dtype == tw.uint8:
            value = tw.iinfo(dtype).min
    elif op_name in ("amin", "argmin"):
        if dtype.is_floating_point:
            value = math.inf
        elif tw.is_signed(input) or dtype == tw.uint8:
            value = tw.iinfo(dtype).max
    elif op_name in ("mean", "var", "std"):
        return None
    elif op_name == "norm":
        ord = args[0] if args else 2
        if ord == -math.inf:
            if not dtype.is_floating_point:
                raise AssertionError(f"input must be floating point, got {dtype}")
            value = math.inf
        else:
            value = 0
    elif op_name == "median":
        # NaN because median runs as nanmedian, which skips NaNs.
        if not dtype.is_floating_point:
            dtype = tw.float32
        value = math.nan
    # Booleans have no identity for max/min-like reductions (PyTorch refuses them too).
    if value is None:
        raise NotImplementedError(f"identity of {op_name} on {dtype} input")
    return value, dtype


def _reduction_identity(op_name: str, input: Tensor, *args: object) -> Tensor | None:
    """The identity value of reduction ``op_name`` on ``input``'s dtype as a 0-d tensor on
    ``input``'s device; None where it depends on the data (mean, var, std)."""
    identity = _identity(op_name, input, *args)
    return None if identity is None else input.new_full((), identity[0], dtype=identity[1])


def _where(mask: Tensor, input: Tensor, fill_value: Tensor | complex) -> Tensor:
    """``input`` where ``mask`` holds, else ``fill_value`` (dense tensors only)."""
    return tw.where(mask, input, fill_value)


def _combine_input_and_mask(
    op: object, input: Tensor, mask: Tensor | None, *args: object
) -> Tensor:
    """``input`` with its masked-out elements replaced by the identity of ``op``."""
    if mask is None:
        return input
    if not callable(op):
        raise ValueError(
            f"_combine_input_and_mask expected masked operation (got {type(op).__name__} object)"
        )
    identity = _identity(op.__name__, input, *args)
    fill_value: Tensor | complex | None = None
    if identity is not None:
        value, dtype = identity
        # As a number, the identity keeps input's dtype in where, which then takes one backend
        # call (a 0-d tensor is built and broadcast: 3x the cost of a small masked sum); beside
        # a bool input a number would promote to int64, and the median's differs in dtype.
        keeps_dtype = dtype == input.dtype and dtype != tw.bool
        fill_value = value if keeps_dtype else input.new_full((), value, dtype=dtype)
    return _where(_input_mask(input, mask=mask), input, fill_value)


def _promoted_sum_dtype(input: Tensor, dtype: tw.dtype | None) -> tw.dtype:
    """The result dtype of a masked sum or prod: small integers and booleans widen to int64."""
    if dtype is not None:
        return dtype
    if input.dtype in (tw.uint8, tw.bool, tw.int8, tw.int16, tw.int32):
        return tw.int64
    return input.dtype


def _any(input: Tensor, dim: tuple[int, ...], keepdim: bool) -> Tensor:
    """``any`` over several dims, one at a time from the last."""
    for d in reversed(dim):
        input = input.any(dim=d, keepdim=keepdim)
    return input


_REDUCTIONS = frozenset(
    "sum prod amax amin argmax argmin mean median norm var std logsumexp".split()
)
_NORMALIZATIONS = frozenset("softmax log_softmax softmin normalize cumsum cumprod".split())


def _output_mask(op: object, input: Tensor, *args: object, **kwargs: object) -> Tensor:
    """Which elements of the result of masked operation ``op`` on these arguments are defined."""
    if not callable(op):
        raise ValueError(f"_output_mask expected masked operation (got {type(op).__name__} object)")
    name = op.__name__
    if name in _NORMALIZATIONS:
        return _input_mask(input, *args, **kwargs)
    if name not in _REDUCTIONS:
        raise ValueError(
            f"_output_mask expected masked operation (got callable {op.__module__}.{name})"
        )
    if name == "norm" and args:
        args = args[1:]  # the first positional argument of norm is ord
    dim = args[0] if args else kwargs.get("dim")
    mask = _input_mask(input, *args, **kwargs)
    return _any(mask, _canonical_dim(dim, input.ndim), bool(kwargs.get("keepdim", False)))
