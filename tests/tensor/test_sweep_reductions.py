"""A differential sweep of reductions and order statistics against PyTorch: seeded random
programs (op × input) over every dtype, NaN and inf, 0-d and empty inputs, empty reduced
dims, dims out of range, keepdim, and transposed, strided and expanded views; results or
exception classes must agree with torch's, and float64 programs also compare gradients.

Where torch leaves the index of tied values unspecified (topk, kthvalue, median, mode), a
program compares the values and the values its indices pick.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from tensor_reference import grads_like_torch
from test_sweep_indexing import (
    VALUE_DTYPES,
    failures,
    grad_failures,
    host_values,
    laid_out,
    programs,
    same_as_torch,
    shape_of,
)
from tw_backends import share_for

LAYOUTS = ("contiguous", "contiguous", "transposed", "strided", "expanded")
nan, inf = float("nan"), float("inf")


def with_specials(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, layout: str):
    """``laid_out`` values with NaN, inf and -inf sprinkled into float inputs."""
    laid = laid_out(rng, shape, dtype, layout)

    def make(m: Any) -> Any:  # torch's nanmedian of an expanded input reads garbage
        return laid(m).contiguous() if m is not tw else laid(m)

    if not dtype.startswith(("float", "bfloat")) or rng.random() < 0.4 or 0 in shape:
        return make
    spots = rng.random(shape) < 0.2
    specials = rng.choice([nan, inf, -inf], shape)
    return lambda m: m.where(m.tensor(spots), m.tensor(specials, dtype=getattr(m, dtype)), make(m))


def picked(m: Any, x: Any, result: Any, dim: int, keepdim: bool) -> tuple[Any, Any]:
    """``(values, x's values at the indices)`` of a ``(values, indices)`` result."""
    indices = result.indices if keepdim or x.dim() == 0 else result.indices.unsqueeze(dim)
    return result.values, m.take_along_dim(x, indices, dim)


SIMPLE = (
    "sum",
    "prod",
    "mean",
    "nansum",
    "nanmean",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "all",
    "any",
    "count_nonzero",
    "logsumexp",
    "std",
    "var",
    "aminmax",
)
WITH_INDICES = ("max", "min", "median", "nanmedian", "mode", "kthvalue", "topk", "sort")
SCANS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
WITH_OPTIONS = ("sum-dtype", "prod-dtype", "mean-dtype", "cumsum-dtype", "quantile", "binary-max")


def reduce_program(rng: np.random.Generator):
    shape = shape_of(rng)
    dtype = str(rng.choice(VALUE_DTYPES))
    x = with_specials(rng, shape, dtype, str(rng.choice(LAYOUTS)))
    ndim = max(len(shape), 1)
    dim = (
        int(rng.integers(-ndim - 1, ndim + 1))
        if rng.random() < 0.1
        else int(rng.integers(-ndim, ndim))
    )
    keepdim = bool(rng.random() < 0.5)
    op = str(rng.choice(SIMPLE + WITH_INDICES + SCANS + WITH_OPTIONS + ("no-dim",)))
    name = f"{op}({dim}, keepdim={keepdim}) of {dtype}{shape}"
    if op in WITH_OPTIONS:
        return options_program(rng, op, x, shape, dtype, dim, keepdim)
    if op == "no-dim":
        op = str(rng.choice(["sum", "prod", "mean", "amax", "max", "min", "argmax", "median"]))
        return f"{op}() of {dtype}{shape}", dtype, lambda m: getattr(x(m), op)()
    if op in ("sum", "prod", "mean", "nansum", "nanmean", "amax", "amin", "logsumexp"):
        if op != "prod" and len(shape) >= 2 and rng.random() < 0.3:
            dims = (0, -1)
            return f"{op}{dims} of {dtype}{shape}", dtype, lambda m: getattr(x(m), op)(dims)
        return name, dtype, lambda m: getattr(x(m), op)(dim, keepdim=keepdim)
    if op in ("argmax", "argmin", "all", "any"):
        return name, dtype, lambda m: getattr(m, op)(x(m), dim=dim, keepdim=keepdim)
    if op == "aminmax":  # (of an empty dim: test_numeric_reduction_gaps)
        x = with_specials(rng, tuple(max(n, 1) for n in shape), dtype, "contiguous")
        return name, dtype, lambda m: tuple(m.aminmax(x(m), dim=dim, keepdim=keepdim))
    if op == "count_nonzero":
        return name, dtype, lambda m: m.count_nonzero(x(m), dim)
    if op in ("std", "var"):
        correction = int(rng.integers(0, 3))
        return (
            f"{name} correction={correction}",
            dtype,
            lambda m: getattr(x(m), op)(dim, correction=correction, keepdim=keepdim),
        )
    if op in ("max", "min"):  # torch picks the first of tied extremes
        return name, dtype, lambda m: getattr(x(m), op)(dim, keepdim)
    if op == "mode":  # torch's mode of NaN depends on its sort's undefined order of NaN
        x = laid_out(rng, shape, dtype, "contiguous")
    if op in ("median", "nanmedian", "mode"):
        return name, dtype, lambda m: picked(m, x(m), getattr(x(m), op)(dim, keepdim), dim, keepdim)
    if op == "kthvalue":
        k = int(rng.integers(0, (shape[dim] if shape and -ndim <= dim < ndim else 1) + 2))
        return (
            f"kthvalue({k}, {dim}) of {dtype}{shape}",
            dtype,
            lambda m: picked(m, x(m), x(m).kthvalue(k, dim, keepdim), dim, keepdim),
        )
    if op == "topk":
        k = int(rng.integers(0, (shape[dim] if shape and -ndim <= dim < ndim else 1) + 2))
        largest = bool(rng.random() < 0.5)
        return (
            f"topk({k}, {dim}, largest={largest}) of {dtype}{shape}",
            dtype,
            lambda m: picked(m, x(m), x(m).topk(k, dim, largest), dim, True),
        )
    if op == "sort":
        descending = bool(rng.random() < 0.5)
        return (
            f"sort({dim}, descending={descending}) of {dtype}{shape}",
            dtype,
            lambda m: x(m).sort(dim=dim, descending=descending, stable=True),
        )
    if op == "logcumsumexp" and not -ndim <= dim < ndim:  # (test_numeric_reduction_gaps)
        dim = 0
    return name, dtype, lambda m: getattr(x(m), op)(dim)


def options_program(rng: np.random.Generator, op: str, x: Any, shape, dtype, dim, keepdim):
    """Reductions with a ``dtype=``, ``quantile`` with its options, ``max(a, b)``."""
    name = f"{op}({dim}, keepdim={keepdim}) of {dtype}{shape}"
    if op.endswith("-dtype"):
        op = op[: -len("-dtype")]
        out = str(rng.choice(VALUE_DTYPES))
        if op == "cumsum":
            return (
                f"{name} -> {out}",
                (dtype, out),
                lambda m: x(m).cumsum(dim, dtype=getattr(m, out)),
            )
        return (
            f"{name} -> {out}",
            (dtype, out),
            lambda m: getattr(x(m), op)(dim, keepdim=keepdim, dtype=getattr(m, out)),
        )
    if op == "quantile":
        q = rng.choice([0.0, 0.3, 0.5, 1.0, 1.5])
        qs = rng.random(3) if rng.random() < 0.5 else None
        how = str(rng.choice(["linear", "lower", "higher", "midpoint", "nearest"]))
        fn = str(rng.choice(["quantile", "nanquantile"]))
        return (
            f"{fn}(q={q if qs is None else qs.tolist()}, {how}) {name}",
            dtype,
            lambda m: getattr(m, fn)(
                x(m),
                q if qs is None else m.tensor(qs, dtype=getattr(m, dtype)),
                dim,
                keepdim,
                interpolation=how,
            ),
        )
    other = str(rng.choice(VALUE_DTYPES))
    y = with_specials(rng, shape[1:], other, "contiguous")
    fn = str(rng.choice(["max", "min", "maximum", "fmax"]))
    return (
        f"{fn}(x, {other}{shape[1:]}) of {dtype}{shape}",
        (dtype, other),
        lambda m: getattr(m, fn)(x(m), y(m)),
    )


def counting_program(rng: np.random.Generator):
    """unique, unique_consecutive, bincount, histc, searchsorted, bucketize."""
    op = str(
        rng.choice(
            ["unique", "unique_consecutive", "bincount", "histc", "searchsorted", "bucketize"]
        )
    )
    dtype = str(rng.choice(VALUE_DTYPES))
    if op in ("unique", "unique_consecutive"):
        shape = shape_of(rng)
        dim = (
            None if rng.random() < 0.5 or not shape else int(rng.integers(-len(shape), len(shape)))
        )
        flags = dict(
            return_inverse=bool(rng.random() < 0.5), return_counts=bool(rng.random() < 0.5)
        )
        # torch orders slices holding NaN, and the NaNs an inverse points at, by its sort's
        # undefined order of NaN
        fill = with_specials if dim is None and not flags["return_inverse"] else laid_out
        x = fill(rng, shape, dtype, str(rng.choice(LAYOUTS)))
        if op == "unique":
            flags["sorted"] = True
        return (
            f"{op}(dim={dim}, {flags}) of {dtype}{shape}",
            dtype,
            lambda m: getattr(m, op)(x(m), dim=dim, **flags),
        )
    if op == "bincount":
        n = int(rng.integers(0, 6))
        dtype = str(rng.choice(["uint8", "int8", "int16", "int32", "int64", "float32", "bool"]))
        values = rng.integers(-1 if rng.random() < 0.15 else 0, 6, n)
        weights = rng.integers(-4, 5, n) / 4.0 if rng.random() < 0.5 else None
        minlength = int(rng.integers(0, 8))
        cast = (
            (lambda m: m.tensor(values > 0))
            if dtype == "bool"
            else (lambda m: m.tensor(values, dtype=getattr(m, dtype)))
        )
        weigh = None if weights is None else (lambda m: m.tensor(weights))
        return (
            f"bincount({values.tolist()}:{dtype}, weights={weights}, minlength={minlength})",
            (),
            lambda m: m.bincount(cast(m), None if weigh is None else weigh(m), minlength),
        )
    if op == "histc":
        dtype = str(rng.choice(["float32", "float64", "int64", "float16", "bfloat16"]))
        x = with_specials(rng, shape_of(rng), dtype, "contiguous")
        bins = int(rng.integers(1, 6))
        low, high = sorted(rng.integers(-4, 5, 2).tolist())
        return (
            f"histc(bins={bins}, min={low}, max={high}) of {dtype}",
            dtype,
            lambda m: m.histc(x(m), bins=bins, min=low, max=high),
        )
    shape = shape_of(rng, int(rng.integers(1, 3)))
    # sorted in the dtype: NaN boundaries are left out (torch's binary search treats a NaN
    # boundary as below every value, which no sorted order produces)
    boundaries = np.sort(host_values(rng, shape[-1:] if op == "bucketize" else shape, dtype), -1)
    values = with_specials(rng, shape[:-1] + (3,), dtype, "contiguous")
    right = bool(rng.random() < 0.5)
    out_int32 = bool(rng.random() < 0.3)
    sorted_on = lambda m: m.tensor(boundaries, dtype=getattr(m, dtype))  # noqa: E731
    if op == "bucketize":
        return (
            f"bucketize({boundaries.tolist()}, right={right}, out_int32={out_int32}) of {dtype}",
            dtype,
            lambda m: m.bucketize(values(m), sorted_on(m), right=right, out_int32=out_int32),
        )
    return (
        f"searchsorted({boundaries.tolist()}, right={right}) of {dtype}",
        dtype,
        lambda m: m.searchsorted(sorted_on(m), values(m), right=right, out_int32=out_int32),
    )


SWEEP = {
    "reduce": programs(reduce_program, 400, 11),
    "counting": programs(counting_program, 150, 12),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("template", sorted(SWEEP))
def test_random_programs_like_torch(backend: str, template: str) -> None:
    assert failures(share_for(backend, SWEEP[template])) == []


# --- gradients (float64) -------------------------------------------------------------------

#: Ops whose gradient follows the index torch picks among ties: their inputs are distinct.
TIE_FREE = ("median", "nanmedian", "kthvalue", "topk", "sort", "mode")


def grad_program(rng: np.random.Generator):
    """``(name, fn(m, x), x)``: a reduction of a float64 leaf; zeros (for prod and cumprod),
    ties (for amax and max) and an empty dim included."""
    shape = shape_of(rng)
    ndim = max(len(shape), 1)
    dim = int(rng.integers(-ndim, ndim))
    keepdim = bool(rng.random() < 0.5)
    op = str(
        rng.choice(
            [
                "sum", "prod", "mean", "amax", "amin", "max", "min", "logsumexp", "std", "var",
                "norm", "nansum", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
                *TIE_FREE, "quantile",
            ]
        )
    )  # fmt: skip
    if op in TIE_FREE:
        x = rng.permutation(max(int(np.prod(shape)), 1))[: int(np.prod(shape))].reshape(shape) / 4.0
    else:
        x = host_values(rng, shape, "float64")
    name = f"{op}({dim}, keepdim={keepdim}) of {shape}"
    if op in ("sum", "prod", "mean", "amax", "amin", "logsumexp", "nansum"):
        return name, lambda m, t: getattr(t, op)(dim, keepdim=keepdim), x
    if op in ("max", "min", "median", "nanmedian", "mode"):
        return name, lambda m, t: getattr(t, op)(dim, keepdim).values, x
    if op in ("std", "var"):
        return name, lambda m, t: getattr(t, op)(dim, correction=0, keepdim=keepdim), x
    if op == "norm":
        return name, lambda m, t: t.norm(dim=dim, keepdim=keepdim), x
    if op in ("cumsum", "cumprod", "logcumsumexp"):
        return name, lambda m, t: getattr(t, op)(dim), x
    if op in ("cummax", "cummin"):
        return name, lambda m, t: getattr(t, op)(dim).values, x
    if op == "kthvalue":
        return name, lambda m, t: t.kthvalue(1, dim, keepdim).values, x
    if op == "topk":
        return name, lambda m, t: t.topk(min(2, t.shape[dim] if t.dim() else 1), dim).values, x
    if op == "sort":
        return name, lambda m, t: t.sort(dim, descending=True).values, x
    return name, lambda m, t: m.quantile(t, 0.3, dim, keepdim), x


GRADS = [grad_program(np.random.default_rng([13, i])) for i in range(150)]


@pytest.mark.cunumeric
def test_random_gradients_like_torch(backend: str) -> None:
    assert grad_failures(share_for(backend, GRADS)) == []


# --- what the sweep found, one test each -----------------------------------------------------


def test_std_of_a_constant_slice_has_zero_gradient_like_torch(backend: str) -> None:
    # was NaN (the square root's slope at 0 times 0)
    x = np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]])
    grads_like_torch(lambda m, t: t.std(1), x)
    grads_like_torch(lambda m, t: t.std(1, correction=0, keepdim=True), x)
    grads_like_torch(lambda m, t: t.std(), np.ones((2, 2)))


# std_mean took sqrt of the variance: a NaN gradient where a slice is constant
def test_std_mean_of_a_constant_slice_has_zero_gradient_like_torch(backend: str) -> None:
    x = np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]])
    grads_like_torch(lambda m, t: m.std_mean(t, 1)[0], x)


def test_median_checks_dim_and_size_before_the_bool_dtype_like_torch(backend: str) -> None:
    # raised NotImplementedError for bool before IndexError for the dim or the empty slice
    same_as_torch(lambda m: m.median(m.tensor([True]), 0))
    same_as_torch(lambda m: m.median(m.tensor([True]), 1))
    same_as_torch(lambda m: m.zeros(0, dtype=m.bool).median(0))
    same_as_torch(lambda m: m.zeros(0, dtype=m.bool).nanmedian(0))
    same_as_torch(lambda m: m.tensor([[True, False]]).kthvalue(1, 2))


def test_searchsorted_of_bools_raises_like_torch(backend: str) -> None:
    # gave indices; PyTorch has no bool kernel (mixed with integers it promotes)
    bools = lambda m: m.tensor([False, True])  # noqa: E731
    same_as_torch(lambda m: m.searchsorted(bools(m), bools(m)))
    same_as_torch(lambda m: m.bucketize(bools(m), bools(m), right=True))
    same_as_torch(lambda m: m.searchsorted(m.tensor([0, 1, 2]), bools(m)))
    same_as_torch(lambda m: m.searchsorted(bools(m), m.tensor([1, 0])))


UNIQUE_DIM_INPUTS = {
    "rows": np.array([[1, 2], [0, 5], [1, 2], [0, 1]]),
    "cube": np.random.default_rng(0).integers(0, 2, (4, 3, 5)),
    "floats": np.array([[0.5, -1.0, 0.5], [2.0, -1.0, 2.0]]),
    "bools": np.array([[True, False], [True, False], [False, False]]),
    "empty-rows": np.zeros((0, 2)),
    "empty-slices": np.zeros((3, 0)),
    "0d": np.array(3),
}


@pytest.mark.cunumeric
def test_unique_along_a_dim_like_torch(backend: str) -> None:
    # raised NotImplementedError. On cuPyNumeric each new shape's first unique(dim=) costs
    # ~1-2 s of task setup: there a share of the inputs, covering 2-d, empty and 0-d.
    chosen = ("rows", "empty-rows", "0d") if backend == "cunumeric" else UNIQUE_DIM_INPUTS
    for x in (UNIQUE_DIM_INPUTS[name] for name in chosen):
        for dim in range(-x.ndim, x.ndim) if x.ndim else (0,):
            same_as_torch(
                lambda m, x=x, dim=dim: m.unique(
                    m.tensor(x), dim=dim, return_inverse=True, return_counts=True
                )
            )
        same_as_torch(lambda m, x=x: m.tensor(x).unique(dim=0))
        same_as_torch(lambda m, x=x: m.unique_consecutive(m.tensor(x), dim=-1))


@pytest.mark.cunumeric
def test_sorting_an_expanded_integer_tensor_like_torch(backend: str) -> None:
    # cuPyNumeric's sort of a broadcast view aborted the process (SIGABRT)
    row = np.array([[3, 1, 2]])
    same_as_torch(lambda m: m.tensor(row).expand(4, 3).sort(dim=0, stable=True))
    same_as_torch(lambda m: m.tensor(row).expand(4, 3).argsort(dim=-1, stable=True))
    same_as_torch(lambda m: m.tensor([5]).expand(3).kthvalue(2).values)
    same_as_torch(lambda m: m.tensor(row).expand(2, 3).median())


@pytest.mark.parametrize(
    "program",
    [
        # aminmax of an empty dim raised RuntimeError; PyTorch IndexError
        lambda m: m.aminmax(m.zeros(2, 0), dim=1),
        lambda m: m.aminmax(m.zeros(2, 0)),
        lambda m: tuple(m.aminmax(m.zeros(2, 0), dim=0)),
        # logcumsumexp of integers raised NotImplementedError before IndexError for the dim
        lambda m: m.logcumsumexp(m.zeros(3, 1, dtype=m.int16), -4),
    ],
    ids=["aminmax-empty-dim", "aminmax-empty-all", "aminmax-other-dim", "logcumsumexp-dim-first"],
)
def test_numeric_reduction_checks_like_torch(backend: str, program) -> None:
    same_as_torch(program)
