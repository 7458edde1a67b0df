"""Masked reductions: ``tw.masked.sum`` ... ``tw.masked.std``, PyTorch's ``torch.masked``.

Each replaces masked-out elements by its identity (``_mask._combine_input_and_mask``) and runs
the ordinary reduction, so values, dtypes, errors and gradients are those of that reduction.
Results over fully masked-out rows are the identity (sum, prod, amax, ...) or NaN (mean,
median, var, std), as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable

import tensorweaver as tw
from tensorweaver.masked._mask import (
    DimOrDims,
    _canonical_dim,
    _combine_input_and_mask,
    _input_mask,
    _promoted_sum_dtype,
)
from tensorweaver.tensor import Tensor


def sum(
    input: Tensor,
    dim: DimOrDims = None,
    *,
    keepdim: bool | None = False,
    dtype: tw.dtype | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """Sum of the masked-in elements over ``dim`` (all dims if None); identity 0."""
    dtype = _promoted_sum_dtype(input, dtype)
    dim_ = _canonical_dim(dim, input.ndim)
    return tw.sum(_combine_input_and_mask(sum, input, mask), dim_, bool(keepdim), dtype=dtype)


def prod(
    input: Tensor,
    dim: DimOrDims = None,
    *,
    keepdim: bool | None = False,
    dtype: tw.dtype | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """Product of the masked-in elements over ``dim``; identity 1."""
    dtype = _promoted_sum_dtype(input, dtype)
    dim_ = _canonical_dim(dim, input.ndim)
    result = _combine_input_and_mask(prod, input, mask).to(dtype=dtype)
    # One dim at a time from the last: ``prod`` takes a single dim.
    for d in reversed(dim_):
        result = result.prod(dim=d, keepdim=bool(keepdim))
    return result


def _extremum(name: str, doc: str) -> Callable[..., Tensor]:
    """The masked ``amax`` or ``amin``: ``tw.<name>`` over the masked-in elements."""

    def extremum(
        input: Tensor,
        dim: DimOrDims = None,
        *,
        keepdim: bool | None = False,
        dtype: tw.dtype | None = None,
        mask: Tensor | None = None,
    ) -> Tensor:
        dtype = input.dtype if dtype is None else dtype
        mask_input = _combine_input_and_mask(extremum, input, mask)
        dim_ = _canonical_dim(dim, mask_input.ndim)
        return getattr(tw, name)(mask_input, dim_, bool(keepdim)).to(dtype=dtype)

    extremum.__name__ = extremum.__qualname__ = name
    extremum.__doc__ = doc
    return extremum


amax = _extremum(
    "amax", "Maximum of the masked-in elements; identity -inf (the dtype's minimum for integers)."
)
amin = _extremum(
    "amin", "Minimum of the masked-in elements; identity inf (the dtype's maximum for integers)."
)


def _arg_extremum(name: str, doc: str) -> Callable[..., Tensor]:
    """The masked ``argmax`` or ``argmin``: ``tw.<name>`` over the masked-in elements."""

    def arg_extremum(
        input: Tensor,
        dim: int | None = None,
        *,
        keepdim: bool | None = False,
        dtype: tw.dtype | None = None,
        mask: Tensor | None = None,
    ) -> Tensor:
        dtype = input.dtype if dtype is None else dtype
        mask_input = _combine_input_and_mask(arg_extremum, input, mask)
        return getattr(tw, name)(mask_input, dim, bool(keepdim)).to(dtype=dtype)

    arg_extremum.__name__ = arg_extremum.__qualname__ = name
    arg_extremum.__doc__ = doc
    return arg_extremum


argmax = _arg_extremum(
    "argmax",
    "Index of the maximum masked-in element; the result has ``input``'s dtype unless "
    "``dtype`` is given (as in PyTorch).",
)
argmin = _arg_extremum("argmin", "Index of the minimum masked-in element; dtype as :func:`argmax`.")


def _is_inexact(dtype: tw.dtype) -> bool:
    """Whether ``dtype`` is floating point or complex."""
    return dtype.is_floating_point or dtype.is_complex


def _count(input: Tensor, dim: DimOrDims, keepdim: bool, mask: Tensor | None) -> Tensor:
    """How many masked-in elements each reduced row has (int64); every element if no mask."""
    if mask is None:
        ones = tw.ones(input.shape, dtype=tw.int64, device=input.device)
        return sum(ones, dim, keepdim=keepdim)
    return mask.sum(dim=dim, keepdim=keepdim)


def mean(
    input: Tensor,
    dim: DimOrDims = None,
    *,
    keepdim: bool | None = False,
    dtype: tw.dtype | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """Mean of the masked-in elements; NaN over fully masked-out rows."""
    source = "Optional"
    if dtype is None:
        dtype, source = input.dtype, "Input"
    if not _is_inexact(dtype):
        raise ValueError(
            f"mean(): Could not infer output dtype. {source} dtype must be either a floating "
            f"point or complex dtype. Got: {dtype}"
        )
    inmask = None if mask is None else _input_mask(input, mask=mask)
    count = _count(input, dim, bool(keepdim), inmask)
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask)
    return total / count


def median(
    input: Tensor,
    dim: int = -1,
    *,
    keepdim: bool = False,
    dtype: tw.dtype | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """Median (the lower of the two middle values) of the masked-in elements along one ``dim``;
    NaN over fully masked-out rows, which integer inputs refuse."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    if not is_float:
        input = input.to(dtype=tw.float32)
    # Masked-out elements become NaN, which nanmedian skips.
    output = tw.nanmedian(_combine_input_and_mask(median, input, mask), dim_, keepdim).values
    if is_float:
        return output
    if tw.isnan(output).any():
        raise ValueError(
            "masked median expects no fully masked out rows if dtype is not floating point"
        )
    return output.to(dtype=dtype)


def logsumexp(
    input: Tensor,
    dim: DimOrDims = None,
    *,
    keepdim: bool = False,
    dtype: tw.dtype | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """``log(sum(exp(x)))`` of the masked-in elements; -inf over fully masked-out rows."""
    dtype = input.dtype if dtype is None else dtype
    dim_ = _canonical_dim(dim, input.ndim)
    mask_input = _combine_input_and_mask(logsumexp, input, mask)
    return tw.logsumexp(mask_input, dim_, keepdim=keepdim).to(dtype=dtype)


def norm(
    input: Tensor,
    ord: float | None = 2.0,
    dim: DimOrDims = None,
    *,
    keepdim: bool | None = False,
    dtype: tw.dtype | None = None,
    mask: Tensor | None = None,
) -> Tensor:
    """Vector ``ord``-norm of the masked-in elements; identity 0 (inf for ``ord=-inf``)."""
    dtype = input.dtype if dtype is None else dtype
    mask_input = _combine_input_and_mask(norm, input, mask, ord)
    dim_ = _canonical_dim(dim, input.ndim)
    return tw.linalg.vector_norm(mask_input, ord, dim_, bool(keepdim), dtype=dtype)


def _dispersion(name: str, take_sqrt: bool, doc: str) -> Callable[..., Tensor]:
    """The masked ``var``, or with ``take_sqrt`` ``std``: the masked-in elements' squared
    distances from their mean, summed and divided by count - correction clamped at 0; NaN
    over fully masked-out rows.

    Both take ``correction`` as a float: PyTorch 2.13 annotates std's as ``int | None`` and
    var's as ``int | float | None``, but both run one body that takes either."""

    def dispersion(
        input: Tensor,
        dim: DimOrDims = None,
        unbiased: bool | None = None,
        *,
        correction: float | None = None,
        keepdim: bool | None = False,
        dtype: tw.dtype | None = None,
        mask: Tensor | None = None,
    ) -> Tensor:
        if unbiased is not None and correction is not None:
            raise AssertionError("Only one of unbiased and correction may be given")
        correction_ = 1.0
        if unbiased is not None:
            correction_ = 1.0 if unbiased else 0.0
        if correction is not None:
            correction_ = float(correction)
        if dtype is None:
            dtype = input.dtype if _is_inexact(input.dtype) else tw.float32
        compute_dtype = dtype if _is_inexact(dtype) else tw.float32
        inmask = None if mask is None else _input_mask(input, mask=mask)
        count = _count(input, dim, True, inmask)
        sample_total = sum(input, dim, keepdim=True, dtype=dtype, mask=inmask)
        x = tw.subtract(input, tw.divide(sample_total, count))
        total = sum(x * x.conj(), dim, keepdim=keepdim, dtype=compute_dtype, mask=inmask)
        if not keepdim:
            count = count.reshape(total.shape)
        if correction_ != 0:
            # The count is real even when the data are complex.
            count = tw.subtract(count.to(compute_dtype.to_real()), correction_)
            count = tw.maximum(count, count.new_zeros([]))
        output = tw.divide(total, count).to(dtype=dtype)
        return tw.sqrt(output) if take_sqrt else output

    dispersion.__name__ = dispersion.__qualname__ = name
    dispersion.__doc__ = doc
    return dispersion


var = _dispersion(
    "var", False, "Sample variance of the masked-in elements (``correction`` 1 unless given)."
)
std = _dispersion("std", True, "Sample standard deviation of the masked-in elements.")
