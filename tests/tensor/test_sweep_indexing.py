"""A differential sweep of indexing, index writes and the gather/scatter family against
PyTorch: seeded random programs (op template × input) over every value dtype, index dtypes,
negative and out-of-range positions, duplicates, 0-d and empty tensors, and transposed,
strided and expanded views. Each program runs on tensorweaver and on torch; the results
(values, dtype, shape, the written tensor and its base) or the exception classes must agree.
Float64 programs also compare gradients.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor_reference import (
    REAL_DTYPE_NAMES,
    assert_like_torch,
    builtin_class,
    grads_like_torch,
    supports,
)
from tw_backends import share_for

VALUE_DTYPES = REAL_DTYPE_NAMES
INDEX_DTYPES = ("int64", "int64", "int32", "uint8", "bool")
LAYOUTS = ("contiguous", "transposed", "strided", "expanded")
Program = Callable[[Any], Any]


# --- running one program on both libraries -------------------------------------------------


def outcome(program: Program, m: Any) -> tuple[Any, BaseException | None]:
    """``program(m)``'s result, or the exception it raised."""
    try:
        return program(m), None
    except Exception as error:  # noqa: BLE001 - the class is what is compared
        return None, error


def same_as_torch(program: Program) -> None:
    """``program`` gives tensorweaver what it gives torch: equal results, or an exception of
    the built-in class torch raises."""
    theirs, error = outcome(program, torch)
    ours, mine = outcome(program, tw)
    if error is not None:
        want = builtin_class(error)
        assert isinstance(mine, want), (
            f"torch raises {error!r}, tensorweaver gives {mine or ours!r}"
        )
    elif mine is not None:
        raise AssertionError(f"torch gives a result, tensorweaver raises {mine!r}") from mine
    else:
        assert_like_torch(ours, theirs)


def failures(programs: list[tuple[str, tuple[str, ...], Program]]) -> list[str]:
    """The names of ``programs`` (those whose dtypes this device has) that differ from torch."""
    found = []
    for name, dtypes, program in programs:
        if all(map(supports, dtypes)):
            try:
                same_as_torch(program)
            except Exception as error:  # noqa: BLE001 - every difference is reported
                found.append(f"{name}: {type(error).__name__}: {str(error).strip()[:300]}")
    return found


# --- inputs --------------------------------------------------------------------------------


def host_values(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Host values for ``dtype``, exact in every dtype (few distinct values: ties)."""
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "uint8":
        return rng.integers(0, 9, shape).astype(np.uint8)
    if dtype.startswith("int"):
        return rng.integers(-8, 9, shape).astype(dtype)
    return rng.integers(-16, 17, shape) / 4.0


def viewed(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, layout: str):
    """A function ``m -> (tensor, view of it of shape)``: ``layout`` is the view."""
    if layout == "transposed" and len(shape) >= 2:
        source = host_values(rng, shape[:-2] + shape[-1:] + shape[-2:-1], dtype)
        view: Callable[[Any], Any] = lambda t: t.mT  # noqa: E731
    elif layout == "strided" and len(shape) >= 1:
        source = host_values(rng, shape[:-1] + (2 * shape[-1],), dtype)
        view = lambda t: t[..., 1::2]  # noqa: E731
    elif layout == "expanded" and len(shape) >= 1:
        source = host_values(rng, (1,) + shape[1:], dtype)
        view = lambda t: t.expand(shape)  # noqa: E731
    else:
        source = host_values(rng, shape, dtype)
        view = lambda t: t  # noqa: E731

    def make(m: Any) -> tuple[Any, Any]:
        owner = m.tensor(source, dtype=getattr(m, dtype))
        return owner, view(owner)

    return make


def laid_out(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, layout: str):
    """A function ``m -> tensor`` of ``shape``: ``layout`` is the view it is taken through."""
    make = viewed(rng, shape, dtype, layout)
    return lambda m: make(m)[1]


def positions(
    rng: np.random.Generator, size: int, count: int, *, unique: bool, bad: bool
) -> np.ndarray:
    """``count`` positions along an axis of ``size``, some negative; distinct modulo ``size``
    when ``unique``; one out of range when ``bad`` (all of them for an empty axis)."""
    if size == 0:  # no position is in range
        return np.zeros(count, dtype=np.int64)
    if unique:
        count = min(count, size)
        chosen = rng.permutation(size)[:count]
    else:
        chosen = rng.integers(0, size, count)
    chosen = np.where(rng.random(count) < 0.3, chosen - size, chosen)
    if bad and count:
        chosen[rng.integers(count)] = rng.choice([size, -size - 1, size + 3])
    return chosen.astype(np.int64)


def shape_of(rng: np.random.Generator, ndim: int | None = None) -> tuple[int, ...]:
    """A small shape, sometimes with an empty axis."""
    ndim = int(rng.integers(0, 4)) if ndim is None else ndim
    sizes = rng.integers(1, 5, ndim)
    if ndim and rng.random() < 0.1:
        sizes[rng.integers(ndim)] = 0
    return tuple(int(n) for n in sizes)


def index_tensor(values: np.ndarray, dtype: str, transposed: bool = False):
    """``m -> index tensor`` of ``values`` as ``dtype`` (through ``.mT`` when asked, so the
    index is not contiguous)."""
    if transposed and values.ndim == 2:
        source = np.ascontiguousarray(values.T)
        return lambda m: m.tensor(source, dtype=getattr(m, dtype)).mT
    return lambda m: m.tensor(values, dtype=getattr(m, dtype))


# --- reading: x[...], index_select, gather, take, take_along_dim, masked_select ------------


def getitem_program(rng: np.random.Generator):
    shape = shape_of(rng, int(rng.integers(1, 4)))
    dtype = str(rng.choice(VALUE_DTYPES))
    x = laid_out(rng, shape, dtype, str(rng.choice(LAYOUTS)))
    bad = rng.random() < 0.25
    n = shape[0]
    kind = str(rng.choice(["tensor", "list", "pair", "mask", "badmask", "ellipsis", "int", "0d"]))
    idx = positions(rng, n, int(rng.integers(0, 5)), unique=False, bad=bad)
    index_dtype = str(rng.choice(["int64", "int32"]))
    if kind == "tensor":
        at = index_tensor(idx, index_dtype)
        return f"x[{idx.tolist()}:{index_dtype}]", dtype, lambda m: x(m)[at(m)]
    if kind == "list":
        return f"x[{idx.tolist()}]", dtype, lambda m: x(m)[idx.tolist()]
    if kind == "int":
        i = int(rng.integers(-n - 1, n + 1))
        return f"x[{i}]", dtype, lambda m: x(m)[i]
    if kind == "0d":
        i = int(rng.integers(-n - 1, n + 1))
        return f"x[tensor({i})]", dtype, lambda m: x(m)[m.tensor(i)]
    if kind == "pair" and len(shape) >= 2:
        rows = positions(rng, n, 4, unique=False, bad=False).reshape(2, 2)
        cols = positions(rng, shape[1], 2, unique=False, bad=bad)
        r, c = index_tensor(rows, "int64", transposed=True), index_tensor(cols, index_dtype)
        return f"x[{rows.tolist()}.mT, {cols.tolist()}]", dtype, lambda m: x(m)[r(m), c(m)]
    if kind == "ellipsis":
        last = shape[-1]
        cols = positions(rng, last, 3, unique=False, bad=bad)
        c = index_tensor(cols, index_dtype)
        return f"x[None, ..., {cols.tolist()}]", dtype, lambda m: x(m)[None, ..., c(m)]
    mask_shape = shape if kind == "mask" else shape[:-1] + (shape[-1] + 1,)
    mask = rng.random(mask_shape) < 0.5
    mask_dtype = str(rng.choice(["bool", "uint8"]))
    at = index_tensor(mask, mask_dtype)
    return f"x[mask{mask_shape}:{mask_dtype}]", dtype, lambda m: x(m)[at(m)]


def along_program(rng: np.random.Generator):
    """index_select, gather, take_along_dim, take, masked_select."""
    shape = shape_of(rng)
    dtype = str(rng.choice(VALUE_DTYPES))
    x = laid_out(rng, shape, dtype, str(rng.choice(LAYOUTS)))
    ndim = max(len(shape), 1)
    dim = (
        int(rng.integers(-ndim - 1, ndim + 1))
        if rng.random() < 0.15
        else int(rng.integers(-ndim, ndim))
    )
    size = shape[dim] if shape and -ndim <= dim < ndim else 1
    bad = rng.random() < 0.25
    index_dtype = str(rng.choice(INDEX_DTYPES[:3]))
    op = str(rng.choice(["index_select", "gather", "take_along_dim", "take", "masked_select"]))
    if op == "index_select":
        idx = positions(rng, size, int(rng.integers(0, 5)), unique=False, bad=bad) % max(size, 1)
        if bad:
            idx[:1] = -1 if rng.random() < 0.5 else size
        at = index_tensor(idx, index_dtype)
        return (
            f"index_select({dim}, {idx.tolist()}:{index_dtype})",
            dtype,
            lambda m: x(m).index_select(dim, at(m)),
        )
    if op == "take":
        numel = int(np.prod(shape))
        idx = positions(rng, numel, 4, unique=False, bad=bad)
        at = index_tensor(idx, "int64")
        return f"take({idx.tolist()})", dtype, lambda m: m.take(x(m), at(m))
    if op == "masked_select":
        mask_shape = shape[1:] if rng.random() < 0.7 else shape + (2,)
        mask = rng.random(mask_shape) < 0.5
        at = index_tensor(mask, "bool")
        return f"masked_select(mask{mask_shape})", dtype, lambda m: m.masked_select(x(m), at(m))
    # gather / take_along_dim: an index as large as x (or smaller) in the other dims
    index_shape = list(shape) if shape else []
    for i in range(len(index_shape)):
        if rng.random() < 0.3 and index_shape[i] > 0:
            index_shape[i] = int(rng.integers(1, index_shape[i] + 1))
    if index_shape and -ndim <= dim < ndim:
        index_shape[dim] = int(rng.integers(0, 4))
    count = int(np.prod(index_shape)) if index_shape else 1
    idx = (positions(rng, size, count, unique=False, bad=bad) % max(size, 1)).reshape(index_shape)
    bad = bad and idx.size > 0
    if bad:
        idx.flat[0] = -1 if rng.random() < 0.5 else size
    at = index_tensor(idx, index_dtype, transposed=rng.random() < 0.3)
    name = f"{op}({dim}, {idx.tolist()}:{index_dtype}) of {shape}"
    if op == "gather":
        return name, dtype, lambda m: x(m).gather(dim, at(m))

    def take_along_dim(m: Any) -> Any:
        out = m.take_along_dim(x(m), at(m), dim)
        if bad and m is torch:  # torch's CPU kernel reads out of bounds: gather's error is right
            raise RuntimeError("index out of bounds")
        return out

    return name, dtype, take_along_dim


# --- writing: __setitem__, index_put_, index_add_, index_copy_, index_fill_, scatter* ------


REDUCES = ("sum", "prod", "mean", "amax", "amin")
WRITES = (
    "setitem",
    "index_put_",
    "index_add_",
    "index_copy_",
    "index_fill_",
    "scatter_",
    "scatter_value",
    "scatter_add_",
    "scatter_reduce_",
    "masked_fill_",
    "masked_scatter_",
)


def write_program(rng: np.random.Generator):
    """An in-place write; the program returns its result, the written tensor and the tensor
    that one views."""
    shape = shape_of(rng, int(rng.integers(1, 4)))
    op = str(rng.choice(WRITES))
    if op in ("index_fill_", "index_copy_"):  # torch's kernels fail on some empty targets
        shape = tuple(max(n, 1) for n in shape)
    dtype = str(rng.choice(VALUE_DTYPES))
    layout = str(rng.choice(LAYOUTS))
    base = viewed(rng, shape, dtype, layout)
    ndim = len(shape)
    dim = int(rng.integers(-ndim, ndim))
    size = shape[dim]
    bad = rng.random() < 0.2
    accumulate = bool(rng.random() < 0.5)
    unique = op in ("index_copy_", "scatter_", "setitem") or (op == "index_put_" and not accumulate)
    src_dtype = dtype if rng.random() < 0.9 else str(rng.choice(VALUE_DTYPES))

    # Half the writes go into a transposed or strided view, which writes into the tensor it
    # views; the others into a clone (writes into an expanded view: see the test below).
    through_view = layout in ("transposed", "strided") and rng.random() < 0.5
    through_view = through_view and op != "index_add_"

    def written(change: Callable[[Any, Any], Any]) -> Program:
        def program(m: Any) -> Any:
            owner, x = base(m)
            if not through_view:
                # torch's error class for index_add_ depends on the strides: contiguous
                owner = x = x.contiguous().clone() if op == "index_add_" else x.clone()
            result = change(m, x)
            return result, x, owner

        return program

    if op in ("setitem", "index_put_"):
        idx = positions(rng, shape[0], int(rng.integers(0, 5)), unique=unique, bad=bad)
        at = index_tensor(idx, "int64")
        value = laid_out(rng, (len(idx),) + shape[1:], src_dtype, "contiguous")
        if op == "setitem":
            name = f"x[{idx.tolist()}] = {src_dtype}"
            return name, (dtype, src_dtype), written(lambda m, x: x.__setitem__(at(m), value(m)))
        name = f"index_put_(({idx.tolist()},), {src_dtype}, accumulate={accumulate})"
        return (
            name,
            (dtype, src_dtype),
            written(lambda m, x: x.index_put_((at(m),), value(m), accumulate=accumulate)),
        )
    if op in ("index_add_", "index_copy_", "index_fill_"):
        idx = positions(rng, size, int(rng.integers(0, 5)), unique=unique, bad=False) % max(size, 1)
        if bad:
            idx[:1] = -1 if rng.random() < 0.5 else size
        index_dtype = str(rng.choice(["int64", "int32"]))
        at = index_tensor(idx, index_dtype)
        src_shape = list(shape)
        src_shape[dim] = len(idx)
        src_layout = "contiguous" if op == "index_add_" else str(rng.choice(LAYOUTS[:3]))
        src = laid_out(rng, tuple(src_shape), src_dtype, src_layout)
        name = f"{op}({dim}, {idx.tolist()}:{index_dtype}) on {shape}"
        if op == "index_add_":
            alpha = 2 if dtype != "bool" else True
            return (
                name,
                (dtype, src_dtype),
                written(lambda m, x: x.index_add_(dim, at(m), src(m), alpha=alpha)),
            )
        if op == "index_copy_":
            return name, (dtype, src_dtype), written(lambda m, x: x.index_copy_(dim, at(m), src(m)))
        return name, (dtype,), written(lambda m, x: x.index_fill_(dim, at(m), 1))
    if op in ("masked_fill_", "masked_scatter_"):
        mask_shape = shape[1:] if rng.random() < 0.8 else shape[:-1] + (shape[-1] + 1,)
        mask = rng.random(mask_shape) < 0.5
        at = index_tensor(mask, "bool")
        source = laid_out(rng, shape, src_dtype, "contiguous")
        if op == "masked_fill_":
            return (
                f"masked_fill_(mask{mask_shape})",
                (dtype,),
                written(lambda m, x: x.masked_fill_(at(m), 1)),
            )
        return (
            f"masked_scatter_(mask{mask_shape}, {src_dtype})",
            (dtype, src_dtype),
            written(lambda m, x: x.masked_scatter_(at(m), source(m))),
        )
    # scatter family: an index no larger than x in the other dims, along dim any length
    index_shape = [int(rng.integers(0, n + 1)) for n in shape]
    # longer than src along dim: torch raises (but for an empty index, which numeric.py's
    # scatter_reduce checks: test_scatter_reduce_gaps)
    if rng.random() < 0.1 and (op != "scatter_reduce_" or 0 not in index_shape):
        index_shape[dim] += 1
    if unique:  # distinct positions along dim in every row: a random permutation's head
        order = np.argsort(
            rng.random(
                tuple(index_shape[: dim % ndim]) + (size,) + tuple(index_shape[dim % ndim + 1 :])
            ),
            axis=dim,
        )
        idx = np.take(order, np.arange(min(index_shape[dim], size)), axis=dim)
    else:
        idx = rng.integers(0, max(size, 1), index_shape)
    if bad and idx.size:
        idx.flat[0] = -1 if rng.random() < 0.5 else size
    at = index_tensor(idx, "int64", transposed=rng.random() < 0.3)
    src = laid_out(rng, shape, src_dtype, "contiguous")
    name = f"{op}({dim}, {idx.tolist()}) on {shape}"
    if op == "scatter_":
        reduce = rng.choice([None, "add", "multiply"])
        if reduce is None:
            return name, (dtype, src_dtype), written(lambda m, x: x.scatter_(dim, at(m), src(m)))
        return (
            f"{name} reduce={reduce}",
            (dtype, src_dtype),
            written(lambda m, x: x.scatter_(dim, at(m), src(m), reduce=reduce)),
        )
    if op == "scatter_value":
        return name, (dtype,), written(lambda m, x: x.scatter_(dim, at(m), 2))
    if op == "scatter_add_":
        return name, (dtype, src_dtype), written(lambda m, x: x.scatter_add_(dim, at(m), src(m)))
    # (mean of bools: test_scatter_reduce_gaps)
    reduce = str(rng.choice(REDUCES[:2] + REDUCES[3:] if dtype == "bool" else REDUCES))
    include_self = bool(rng.random() < 0.5)
    return (
        f"scatter_reduce_{name}, {reduce}, include_self={include_self}",
        (dtype, src_dtype),
        written(
            lambda m, x: x.scatter_reduce_(dim, at(m), src(m), reduce, include_self=include_self)
        ),
    )


def programs(template, count: int, seed: int) -> list[tuple[str, tuple[str, ...], Program]]:
    """``count`` programs of ``template``, named by their seed and what they do."""
    made = []
    for i in range(count):
        name, dtypes, program = template(np.random.default_rng([seed, i]))
        dtypes = (dtypes,) if isinstance(dtypes, str) else dtypes
        made.append((f"{i}:{name}", dtypes, program))
    return made


SWEEP = {
    "getitem": programs(getitem_program, 150, 1),
    "along": programs(along_program, 150, 2),
    "write": programs(write_program, 250, 3),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("template", sorted(SWEEP))
def test_random_programs_like_torch(backend: str, template: str) -> None:
    assert failures(share_for(backend, SWEEP[template])) == []


# --- gradients (float64) -------------------------------------------------------------------


def grad_program(rng: np.random.Generator):
    """``(name, fn(m, x, src), x, src)``: a differentiable read or write of float64 leaves;
    duplicate positions and tied values (quarters) included."""
    shape = shape_of(rng, int(rng.integers(1, 4)))
    x = host_values(rng, shape, "float64")
    dim = int(rng.integers(-len(shape), len(shape)))
    size = shape[dim]
    count = int(rng.integers(1, 5))
    idx = positions(rng, size, count, unique=False, bad=False) % max(size, 1)
    if size == 0:
        idx = idx[:0]
    src_shape = list(shape)
    src_shape[dim] = len(idx)
    src = host_values(rng, tuple(src_shape), "float64")
    full = host_values(rng, shape, "float64")
    scatter_index = rng.integers(0, max(size, 1), shape) if size else np.zeros(shape, np.int64)
    mask = rng.random(shape[1:]) < 0.5
    op = str(rng.choice([
        "getitem", "mask", "index_select", "gather", "take", "index_put", "index_add",
        "scatter_add", "scatter_reduce", "masked_fill", "masked_scatter", "index_fill",
    ]))  # fmt: skip

    def tensor(m: Any, values: np.ndarray) -> Any:
        return m.tensor(values)

    if op == "getitem":
        rows = positions(rng, shape[0], 4, unique=False, bad=False)
        return f"x[{rows.tolist()}]", lambda m, a, b: a[tensor(m, rows)] * 2, x, src
    if op == "mask":
        return f"x[:, mask{mask.shape}]", lambda m, a, b: a[:, tensor(m, mask)] ** 2, x, src
    if op == "index_select":
        return (
            f"index_select({dim}, {idx.tolist()})",
            lambda m, a, b: a.index_select(dim, tensor(m, idx)),
            x,
            src,
        )
    if op == "gather":
        return (
            f"gather({dim}) on {shape}",
            lambda m, a, b: a.gather(dim, tensor(m, scatter_index)),
            x,
            src,
        )
    if op == "take":
        flat = rng.integers(-x.size, x.size, 5) if x.size else np.zeros(0, np.int64)
        return f"take({flat.tolist()})", lambda m, a, b: m.take(a, tensor(m, flat)), x, src
    if op == "index_put":
        rows = positions(rng, shape[0], count, unique=False, bad=False)
        values = host_values(rng, (len(rows),) + shape[1:], "float64")
        accumulate = bool(rng.random() < 0.7)
        rows = rows if accumulate else np.unique(rows % shape[0])
        values = values[: len(rows)]
        return (
            f"index_put(({rows.tolist()},), accumulate={accumulate})",
            lambda m, a, b: a.index_put((tensor(m, rows),), b, accumulate=accumulate),
            x,
            values,
        )
    if op == "index_add":
        return (
            f"index_add({dim}, {idx.tolist()})",
            lambda m, a, b: a.index_add(dim, tensor(m, idx), b, alpha=3),
            x,
            src,
        )
    if op == "scatter_add":
        return (
            f"scatter_add({dim}) on {shape}",
            lambda m, a, b: a.scatter_add(dim, tensor(m, scatter_index), b),
            x,
            full,
        )
    if op == "scatter_reduce":
        if not x.size:  # an empty input: test_scatter_reduce_gaps
            return grad_program(rng)
        reduce = str(rng.choice(REDUCES))
        include_self = bool(rng.random() < 0.5)
        return (
            f"scatter_reduce({dim}, {reduce}, include_self={include_self}) on {shape}",
            lambda m, a, b: a.scatter_reduce(
                dim, tensor(m, scatter_index), b, reduce, include_self=include_self
            ),
            x,
            full,
        )
    if op == "masked_fill":
        return (
            f"masked_fill(mask{mask.shape})",
            lambda m, a, b: a.masked_fill(tensor(m, mask), 2.0),
            x,
            src,
        )
    if op == "masked_scatter":
        return (
            f"masked_scatter(mask{mask.shape})",
            lambda m, a, b: a.masked_scatter(tensor(m, mask), b),
            x,
            full,
        )
    return (
        f"index_fill({dim}, {idx.tolist()})",
        lambda m, a, b: a.index_fill(dim, tensor(m, idx), -1.0),
        x,
        src,
    )


GRADS = [grad_program(np.random.default_rng([4, i])) for i in range(120)]


def grad_failures(cases: list) -> list[str]:
    """The names of ``cases`` whose float64 gradients differ from torch's."""
    found = []
    for i, (name, fn, *arrays) in enumerate(cases):
        try:
            forward = lambda m: fn(m, *(m.tensor(a) for a in arrays))  # noqa: B023, E731
            if outcome(forward, torch)[1] is not None:
                same_as_torch(forward)  # no gradient where the forward raises
            else:
                grads_like_torch(fn, *arrays)
        except Exception as error:  # noqa: BLE001 - every difference is reported
            found.append(f"{i}:{name}: {type(error).__name__}: {str(error).strip()[:300]}")
    return found


@pytest.mark.cunumeric
def test_random_gradients_like_torch(backend: str) -> None:
    assert grad_failures(share_for(backend, GRADS)) == []


# --- what the sweep found, one test each -----------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda m, x, i, s: x.scatter(1, i, s),
        lambda m, x, i, s: x.scatter(1, i, s, reduce="add"),
        lambda m, x, i, s: x.scatter_add(1, i, s),
        lambda m, x, i, s: x.index_add(1, i[0], s),
    ],
    ids=["scatter", "scatter-add", "scatter_add", "index_add"],
)
def test_scatters_take_src_of_the_same_dtype_only_like_torch(backend: str, call) -> None:
    # these cast src silently (int8 into float16, float64 into float32)
    for src_dtype in ("float64", "int8"):
        same_as_torch(
            lambda m, src_dtype=src_dtype: call(
                m,
                m.zeros(2, 4),
                m.tensor([[0, 1], [2, 3]]),
                m.ones(2, 2, dtype=getattr(m, src_dtype)),
            )
        )


@pytest.mark.parametrize("shape", [(3,), (3, 4), (3, 4, 5), (2, 1, 1, 2)])
@pytest.mark.parametrize("alpha", [1, 2])
def test_index_add_out_of_range_raises_torch_class(backend: str, shape, alpha: int) -> None:
    # always RuntimeError before; PyTorch raises IndexError for a 1-d input, an inner dim or
    # alpha other than 1
    for d, n in enumerate(shape):
        src_shape = shape[:d] + (1,) + shape[d + 1 :]
        for bad in (n, -1):
            same_as_torch(
                lambda m, d=d, bad=bad, src_shape=src_shape: m.zeros(shape).index_add(
                    d, m.tensor([bad]), m.ones(src_shape), alpha=alpha
                )
            )


def test_scatter_multiply_like_torch(backend: str) -> None:
    # raised NotImplementedError
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    index = np.array([[0, 0, 1], [1, 0, 1]])
    src = np.array([[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]])
    same_as_torch(
        lambda m: m.tensor(x).scatter(1, m.tensor(index), m.tensor(src), reduce="multiply")
    )
    same_as_torch(lambda m: m.tensor(x).scatter(0, m.tensor(index), 2.0, reduce="multiply"))
    same_as_torch(lambda m: m.tensor(x).scatter_(1, m.tensor(index), 2.0, reduce="mean"))


@pytest.mark.cunumeric
def test_0d_inputs_of_gather_and_scatters_like_torch(backend: str) -> None:
    # a 1-d index into a 0-d input crashed inside the NumPy and cuPyNumeric backends
    x = lambda m: m.tensor(2.5)  # noqa: E731
    same_as_torch(lambda m: x(m).gather(0, m.tensor([0, 0])))
    same_as_torch(lambda m: x(m).scatter(0, m.tensor([0]), m.tensor([1.0])))
    same_as_torch(lambda m: x(m).scatter(0, m.tensor([0]), 7.0))
    same_as_torch(lambda m: x(m).scatter_add(0, m.tensor([0, 0]), m.tensor([1.0, 2.0])))
    same_as_torch(lambda m: x(m).scatter(0, m.tensor([0]), m.tensor([3.0]), reduce="multiply"))
    same_as_torch(lambda m: x(m).index_add(0, m.tensor([0]), m.tensor(1.0)))
    same_as_torch(lambda m: x(m).index_add(0, m.tensor(0), m.tensor(1.0)))
    same_as_torch(lambda m: x(m).index_add(0, m.tensor([1]), m.tensor(1.0)))
    grads_like_torch(lambda m, t: t.scatter_add(0, m.tensor([0, 0]), t.reshape(1).expand(2)), 1.5)


def _set(x: Any, index: Any, value: Any) -> Any:
    x[index] = value
    return x


def test_writes_through_an_index_take_values_of_the_tensors_dtype_like_torch(backend) -> None:
    # cast silently; PyTorch's index_put_ requires the dtype, its masked_fill_ (one bool mask,
    # one value) and basic indexing do not
    other = lambda m, *shape: m.ones(shape, dtype=m.float64)  # noqa: E731
    mask = [True, False, True]
    same_as_torch(lambda m: _set(m.zeros(3, 4), m.tensor([0, 2]), other(m, 4)))
    same_as_torch(lambda m: _set(m.zeros(3, 4), [0], other(m)))
    same_as_torch(lambda m: _set(m.zeros(3, 4), (0, [1, 2]), other(m, 2)))
    same_as_torch(lambda m: _set(m.zeros(3, 4), m.tensor(mask), other(m, 4)))
    same_as_torch(lambda m: _set(m.zeros(3, 4), m.tensor(mask), other(m)))
    same_as_torch(lambda m: _set(m.zeros(3, 4), mask, other(m, 1)))
    same_as_torch(lambda m: _set(m.zeros(3, 4), m.tensor(1), other(m, 4)))
    same_as_torch(lambda m: _set(m.zeros(3, 4), slice(0, 2), other(m, 4)))
    same_as_torch(lambda m: _set(m.zeros(3, 4), m.tensor([0]), m.ones(4, dtype=m.int64)))


def test_indices_into_an_empty_result_are_not_checked_like_torch(backend: str) -> None:
    # raised IndexError where PyTorch reads or writes nothing
    empty = lambda m: m.zeros(4, 0, 4)  # noqa: E731
    same_as_torch(lambda m: empty(m)[m.tensor([-5, 7])])
    same_as_torch(lambda m: empty(m)[[7], [0]])  # the empty dimension's index is checked
    same_as_torch(lambda m: m.zeros(0, 3)[[0]])
    same_as_torch(lambda m: _set(empty(m), [9, -7], 1.0))
    same_as_torch(lambda m: empty(m).index_put_((m.tensor([9]),), m.zeros(()), accumulate=True))
    same_as_torch(lambda m: empty(m).index_fill_(0, m.tensor([9]), 1.0))
    same_as_torch(lambda m: empty(m).index_add_(0, m.tensor([9]), m.zeros(1, 0, 4)))


@pytest.mark.parametrize(
    "write",
    [
        lambda m, x: x.masked_fill_(m.tensor([True, False, True]), 1.0),
        lambda m, x: x.index_fill_(1, m.tensor([0]), 2.0),
        lambda m, x: x.index_put_((m.tensor([0]),), m.ones(3)),
    ],
    ids=["masked_fill_", "index_fill_", "index_put_"],
)
def test_writes_torch_allows_into_an_expanded_tensor(backend: str, write) -> None:
    def program(m: Any) -> Any:
        base = m.zeros(1, 3)
        x = base.expand(2, 3)
        write(m, x)
        return x, base

    same_as_torch(program)


@pytest.mark.cunumeric
def test_integer_scatter_add_is_exact_beyond_2_to_the_53(backend: str) -> None:
    # cuPyNumeric summed int64 in float64: 2**60 + 1 came back as 2**60
    big = np.array([2**60 + 1, 1, -(2**62) - 3, 2**62 + 5])
    same_as_torch(
        lambda m: m.zeros(3, dtype=m.int64).scatter_add(0, m.tensor([0, 0, 1, 1]), m.tensor(big))
    )
    same_as_torch(
        lambda m: m.zeros(3, dtype=m.int64).index_add(0, m.tensor([0, 2, 2, 0]), m.tensor(big))
    )
    same_as_torch(
        lambda m: m.tensor([2**63 - 1, 5]).index_put_(
            (m.tensor([0, 0, 1]),), m.tensor([1, 2**62, -7]), accumulate=True
        )
    )


@pytest.mark.parametrize(
    "program",
    [
        # an empty index larger than src raised; PyTorch checks no size of an empty index
        lambda m: m.zeros(1, 1, 3).scatter_reduce(
            0, m.zeros(2, 0, 2, dtype=m.int64), m.ones(1, 1, 3), "amax"
        ),
        # the mean of bools: PyTorch has no kernel (NotImplementedError); we gave a result
        lambda m: m.zeros(2, dtype=m.bool).scatter_reduce(
            0, m.tensor([0, 0]), m.tensor([True, False]), "mean"
        ),
    ],
    ids=["empty-index", "bool-mean"],
)
def test_scatter_reduce_edges_like_torch(backend: str, program) -> None:
    same_as_torch(program)


def test_scatter_reduce_gradient_of_an_empty_input(backend: str) -> None:
    index = np.zeros((2, 0, 2), np.int64)
    grads_like_torch(
        lambda m, x, src: x.scatter_reduce(1, m.tensor(index), src, "prod"),
        np.zeros((2, 0, 2)),
        np.zeros((2, 0, 2)),
    )
