"""tw.masked's edge cases against torch.masked (PyTorch 2.13): integer, boolean and complex
inputs, ``dtype=``, empty and 0-d tensors, masks of other dtypes and shapes, and the errors
PyTorch raises (class and message)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from tensor_reference import like_torch, raises_like_torch

INTS = np.array([[1, 5, 3], [4, 2, 6]])
#: Row 1 fully masked out: identities show there.
MASK = np.array([[True, False, True], [False, False, False]])
COLUMNS = np.array([True, False, True])
EMPTY = np.zeros((0, 3))
EMPTY_MASK = np.zeros((0, 3), dtype=bool)
FLOATS = INTS.astype(np.float64)
COMPLEX = INTS + 1j * INTS[::-1]
Case = Callable[..., Any]

#: name -> (call, its array arguments): results agree with PyTorch in dtype, shape, values.
VALUES: dict[str, tuple[Case, tuple[np.ndarray, ...]]] = {
    "sum_int": (lambda m, x, k: m.masked.sum(x, 1, mask=k), (INTS, MASK)),
    "sum_bool": (lambda m, x, k: m.masked.sum(x > 2, 1, mask=k), (INTS, MASK)),
    "sum_int32_keeps_int64": (lambda m, x, k: m.masked.sum(x.int(), -1, mask=k), (INTS, MASK)),
    "sum_dtype": (lambda m, x, k: m.masked.sum(x, (0, 1), dtype=m.float32, mask=k), (FLOATS, MASK)),
    "prod_bool": (lambda m, x, k: m.masked.prod(x > 2, 1, mask=k), (INTS, MASK)),
    "prod_dims": (lambda m, x, k: m.masked.prod(x, (1, 0), keepdim=True, mask=k), (INTS, MASK)),
    "amax_int": (lambda m, x, k: m.masked.amax(x, 1, mask=k), (INTS, MASK)),
    "amin_uint8": (lambda m, x, k: m.masked.amin(x.to(m.uint8), 1, mask=k), (INTS, MASK)),
    "amax_float32_dtype": (
        lambda m, x, k: m.masked.amax(x.float(), 0, dtype=m.float64, mask=k),
        (FLOATS, MASK),
    ),
    "argmax_int": (lambda m, x, k: m.masked.argmax(x, 1, mask=k), (INTS, MASK)),
    "argmin_float_is_float": (lambda m, x, k: m.masked.argmin(x, 0, mask=k), (FLOATS, COLUMNS)),
    "argmax_dtype": (
        lambda m, x, k: m.masked.argmax(x, 1, keepdim=True, dtype=m.int64, mask=k),
        (FLOATS, MASK),
    ),
    "argmax_all": (lambda m, x, k: m.masked.argmax(x, mask=k), (FLOATS, MASK)),
    "cumsum_int": (lambda m, x, k: m.masked.cumsum(x, 1, mask=k), (INTS, MASK)),
    "cumprod_dtype": (
        lambda m, x, k: m.masked.cumprod(x, -1, dtype=m.float64, mask=k),
        (INTS, MASK),
    ),
    "median_int": (lambda m, x: m.masked.median(x, 1), (INTS,)),
    "median_int_mask": (lambda m, x, k: m.masked.median(x, 1, mask=k), (INTS, COLUMNS)),
    "median_keepdim": (lambda m, x, k: m.masked.median(x, 0, keepdim=True, mask=k), (FLOATS, MASK)),
    "mean_dtype": (lambda m, x, k: m.masked.mean(x, 1, dtype=m.float64, mask=k), (INTS, MASK)),
    "var_int_is_float32": (lambda m, x, k: m.masked.var(x, 1, mask=k), (INTS, MASK)),
    "std_int_dtype": (lambda m, x, k: m.masked.std(x, 0, dtype=m.float64, mask=k), (INTS, MASK)),
    "softmax_int_dtype": (
        lambda m, x, k: m.masked.softmax(x, 1, dtype=m.float64, mask=k),
        (INTS, MASK),
    ),
    "log_softmax_float32_dtype": (
        lambda m, x, k: m.masked.log_softmax(x.float(), 0, dtype=m.float64, mask=k),
        (FLOATS, COLUMNS),
    ),
    "logsumexp_int": (lambda m, x, k: m.masked.logsumexp(x, 1, mask=k), (INTS, MASK)),
    "normalize_dtype": (
        lambda m, x, k: m.masked.normalize(x.float(), 2.0, 1, dtype=m.float64, mask=k),
        (FLOATS, MASK),
    ),
    "norm_ninf": (lambda m, x, k: m.masked.norm(x, -np.inf, 1, mask=k), (FLOATS, MASK)),
    "norm_inf_dims": (lambda m, x, k: m.masked.norm(x, np.inf, (-1, 0), mask=k), (FLOATS, MASK)),
    "norm_zero": (lambda m, x, k: m.masked.norm(x, 0, 1, keepdim=True, mask=k), (FLOATS, MASK)),
    "mask_of_ints": (lambda m, x: m.masked.sum(x, 1, mask=m.tensor([1, 0, 2])), (FLOATS,)),
    "logaddexp_dtype": (
        lambda m, x, k: m.masked.logaddexp(x, x[0], dtype=m.float32, input_mask=k),
        (FLOATS, MASK),
    ),
    "empty_sum": (lambda m, x, k: m.masked.sum(x, 0, mask=k), (EMPTY, COLUMNS)),
    "empty_amax_other_dim": (lambda m, x, k: m.masked.amax(x, 1, mask=k), (EMPTY, EMPTY_MASK)),
    "empty_mean": (lambda m, x: m.masked.mean(x, 0), (EMPTY,)),
    "empty_var": (lambda m, x: m.masked.var(x, 0), (EMPTY,)),
    "empty_softmax": (lambda m, x, k: m.masked.softmax(x, 0, mask=k), (EMPTY, EMPTY_MASK)),
    "scalar_sum": (lambda m, x: m.masked.sum(x[0, 0], 0, mask=m.tensor(False)), (FLOATS,)),
    "scalar_softmax": (lambda m, x: m.masked.softmax(x[0, 0], -1, mask=m.tensor(True)), (FLOATS,)),
    "logsumexp_complex": (lambda m, x, k: m.masked.logsumexp(x, 1, mask=k), (COMPLEX, MASK)),
    "var_complex": (lambda m, x, k: m.masked.var(x, 1, mask=k), (COMPLEX, MASK)),
    "mean_complex": (lambda m, x, k: m.masked.mean(x, -1, mask=k), (COMPLEX, MASK)),
    "input_mask": (lambda m, x, k: m.masked._input_mask(x, mask=k), (FLOATS, COLUMNS)),
    "output_mask_reduction": (
        lambda m, x, k: m.masked._output_mask(m.masked.sum, x, 1, mask=k, keepdim=True),
        (FLOATS, MASK),
    ),
    "output_mask_norm": (
        lambda m, x, k: m.masked._output_mask(m.masked.norm, x, 2.0, 0, mask=k),
        (FLOATS, MASK),
    ),
    "output_mask_normalization": (
        lambda m, x, k: m.masked._output_mask(m.masked.softmax, x, 1, mask=k),
        (FLOATS, COLUMNS),
    ),
}

#: name -> (call, its array arguments): both raise an error of the same built-in class.
ERRORS: dict[str, tuple[Case, tuple[np.ndarray, ...], tuple[str, ...]]] = {
    "median_int_fully_masked": (
        lambda m, x, k: m.masked.median(x, 1, mask=k),
        (INTS, MASK),
        ("fully masked out rows",),
    ),
    "mean_int": (lambda m, x, k: m.masked.mean(x, 1, mask=k), (INTS, MASK), ("mean", "Long|int64")),
    "softmax_int": (lambda m, x, k: m.masked.softmax(x, 1, mask=k), (INTS, MASK), ()),
    "norm_int": (lambda m, x, k: m.masked.norm(x, 2.0, 1, mask=k), (INTS, MASK), ("norm",)),
    "norm_ninf_int": (
        lambda m, x, k: m.masked.norm(x, -np.inf, 1, mask=k),
        (INTS, MASK),
        ("floating point",),
    ),
    "empty_amax": (lambda m, x: m.masked.amax(x, 0), (EMPTY,), ("amax", "non-zero size")),
    "empty_argmax": (lambda m, x: m.masked.argmax(x, 0), (EMPTY,), ("argmax", "non-zero size")),
    "empty_median": (lambda m, x: m.masked.median(x, 0), (EMPTY,), ("median", "non-zero size")),
    "mask_more_dims": (
        lambda m, x, k: m.masked.sum(x, 1, mask=k[None]),
        (FLOATS, MASK),
        ("broadcastable mask",),
    ),
    "mask_not_broadcastable": (
        lambda m, x: m.masked.sum(x, 1, mask=m.tensor([True, False])),
        (FLOATS,),
        (),
    ),
    "duplicate_dims": (lambda m, x: m.masked.sum(x, (1, 1)), (FLOATS,), ("multiple times",)),
    # Spelled differently, the duplicate passes the canonical dims and sum refuses it.
    "duplicate_dims_spelled_apart": (lambda m, x: m.masked.sum(x, (1, -1)), (FLOATS,), ("dim",)),
    "dim_out_of_range": (lambda m, x: m.masked.amax(x, 2), (FLOATS,), (r"\[-2, 1\]",)),
    "softmax_dim_out_of_range": (lambda m, x: m.masked.softmax(x, -3), (FLOATS,), ("range",)),
    "argmax_dim_out_of_range": (lambda m, x: m.masked.argmax(x, 2), (FLOATS,), ("range",)),
    "var_unbiased_and_correction": (
        lambda m, x: m.masked.var(x, 1, True, correction=1),
        (FLOATS,),
        ("unbiased and correction",),
    ),
    "amax_bool": (lambda m, x, k: m.masked.amax(x > 2, 1, mask=k), (INTS, MASK), ("amax", "bool")),
    "logsumexp_bool": (
        lambda m, x, k: m.masked.logsumexp(x > 2, 1, mask=k),
        (INTS, MASK),
        ("logsumexp",),
    ),
    "amax_complex": (lambda m, x, k: m.masked.amax(x, 1, mask=k), (COMPLEX, MASK), ("iinfo",)),
    "input_mask_without_mask": (lambda m, x: m.masked._input_mask(x), (FLOATS,), ("mask",)),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_value_like_torch(backend: str, name: str) -> None:
    fn, arrays = VALUES[name]
    like_torch(fn, *arrays)


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_error_like_torch(backend: str, name: str) -> None:
    fn, arrays, match = ERRORS[name]
    raises_like_torch(fn, *arrays, match=match)


@pytest.mark.cunumeric
def test_softmax_and_sum_on_every_backend(backend: str) -> None:
    like_torch(lambda m, x, k: m.masked.softmax(x, 1, mask=k), FLOATS, MASK)
    like_torch(lambda m, x, k: m.masked.sum(x, 1, mask=k), FLOATS, MASK)
