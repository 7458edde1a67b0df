"""Ops through the core on the device, where the core rewrites them before the backend sees
them: broadcasting, type promotion, negative axes, views made non-contiguous by permute
and slicing, NaN/inf propagation and duplicate indices. Each is compared with the same
expression in NumPy float64."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np

import tensorweaver as tw
from tensorweaver.check.case import Case, Failure, Measure
from tensorweaver.check.cases.operands import inf, nan
from tensorweaver.check.compare import host_dtype, measure_array, widen
from tensorweaver.check.context import Context
from tensorweaver.contract import dtypes as d


def _normal(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.standard_normal(shape)


def _fixed(values: Any) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: np.asarray(values)


_ROWS = _fixed([[0, 2, 0], [1, 1, 1]])  # duplicates within each row
_MIXED = _fixed([[1.0, nan, -2.0], [inf, -1.0, 0.5], [-inf, 3.0, 0.0]])

#: id -> (input makers, the core expression, the NumPy expression). Float inputs become
#: tensors of the device's float dtype; integer ones int64, boolean ones bool.
CASES: dict[str, tuple[tuple[Callable, ...], Callable, Callable]] = {
    # broadcasting and promotion
    "broadcast/add": ((_normal(3, 1), _normal(4)), lambda x, y: x + y, lambda x, y: x + y),
    "broadcast/mul-3d": ((_normal(2, 1, 3), _normal(4, 1)), lambda x, y: x * y, lambda x, y: x * y),
    "broadcast/compare": ((_normal(3, 1), _normal(1, 4)), lambda x, y: x < y, lambda x, y: x < y),
    "broadcast/where": (
        (_fixed([[True], [False], [True]]), _normal(1, 4)),
        lambda c, x: tw.where(c, x, 2.5),
        lambda c, x: np.where(c, x, 2.5),
    ),
    "broadcast/scalar": (
        (_normal(2, 3),),
        lambda x: 2.0 ** (1.5 - x) / 3,
        lambda x: 2.0 ** (1.5 - x) / 3,
    ),
    "broadcast/matmul": (
        (_normal(2, 1, 3, 4), _normal(5, 4, 2)),
        lambda x, y: x @ y,
        lambda x, y: x @ y,
    ),
    "promotion/int-float": (
        (_fixed([[1, -2, 3]]), _normal(2, 3)),
        lambda i, x: i + x * i,
        lambda i, x: i + x * i,
    ),
    # negative axes
    "negative-axis/sum": ((_normal(2, 3, 4),), lambda x: x.sum(dim=-1), lambda x: x.sum(axis=-1)),
    "negative-axis/mean": (
        (_normal(2, 3, 4),),
        lambda x: x.mean(dim=(-2, -1), keepdim=True),
        lambda x: x.mean(axis=(-2, -1), keepdims=True),
    ),
    "negative-axis/max": (
        (_normal(2, 3, 4),),
        lambda x: tuple(x.max(dim=-2)),
        lambda x: (x.max(axis=-2), x.argmax(axis=-2)),
    ),
    "negative-axis/cumsum": ((_normal(2, 5),), lambda x: x.cumsum(-1), lambda x: x.cumsum(-1)),
    "negative-axis/cat": (
        (_normal(2, 3), _normal(2, 2)),
        lambda x, y: tw.cat([x, y], dim=-1),
        lambda x, y: np.concatenate([x, y], axis=-1),
    ),
    "negative-axis/stack": (
        (_normal(2, 3), _normal(2, 3)),
        lambda x, y: tw.stack([x, y], dim=-1),
        lambda x, y: np.stack([x, y], axis=-1),
    ),
    "negative-axis/gather": (
        (_normal(2, 4), _ROWS),
        lambda x, i: x.gather(-1, i),
        lambda x, i: np.take_along_axis(x, i, -1),
    ),
    "negative-axis/transpose": (
        (_normal(2, 3, 4),),
        lambda x: x.transpose(-1, -3).flip(-2),
        lambda x: np.flip(np.swapaxes(x, -1, -3), -2),
    ),
    "negative-axis/softmax": (
        (_normal(3, 4),),
        lambda x: x.softmax(-2),
        lambda x: np.exp(x) / np.exp(x).sum(axis=-2, keepdims=True),
    ),
    # non-contiguous views
    "non-contiguous/permute": (
        (_normal(2, 3, 4),),
        lambda x: (x.permute(2, 0, 1).exp() + 1).reshape(4, 6),
        lambda x: (np.exp(x.transpose(2, 0, 1)) + 1).reshape(4, 6),
    ),
    "non-contiguous/slice": (
        (_normal(4, 6),),
        lambda x: x[1:, ::2] * x[:3, 1::2],
        lambda x: x[1:, ::2] * x[:3, 1::2],
    ),
    "non-contiguous/matmul": (
        (_normal(4, 3), _normal(2, 4)),
        lambda x, y: x.T @ y.T,
        lambda x, y: x.T @ y.T,
    ),
    "non-contiguous/reduce": (
        (_normal(3, 4, 5),),
        lambda x: x.permute(2, 1, 0)[::2].sum(dim=(0, 2)),
        lambda x: x.transpose(2, 1, 0)[::2].sum(axis=(0, 2)),
    ),
    "non-contiguous/flip-index": (
        (_normal(5, 3),),
        lambda x: x.flip(0)[[0, 2, 2]],
        lambda x: x[::-1][[0, 2, 2]],
    ),
    # NaN and inf
    "nan-inf/elementwise": (
        (_MIXED,),
        lambda x: (x.exp(), (x * 0).abs(), x.sign(), x.clamp(-1, 1), x.relu(), x.sqrt()),
        lambda x: (
            np.exp(x),
            np.abs(x * 0),
            _sign(x),
            np.clip(x, -1, 1),
            np.maximum(x, 0),
            np.sqrt(x),
        ),
    ),
    "nan-inf/reduce": (
        (_MIXED,),
        lambda x: (x.sum(dim=1), x.amax(dim=0), x.amin(dim=1), x.mean()),
        lambda x: (x.sum(axis=1), x.max(axis=0), x.min(axis=1), x.mean()),
    ),
    "nan-inf/matmul": ((_MIXED, _normal(3, 2)), lambda x, y: x @ y, lambda x, y: x @ y),
    "nan-inf/division": (
        (_fixed([1.0, -1.0, 0.0, nan]),),
        lambda x: (x / 0.0, x.log(), x.isnan(), x.isinf()),
        lambda x: (x / 0.0, np.log(x), np.isnan(x), np.isinf(x)),
    ),
    # duplicate indices
    "duplicates/scatter_add": (
        (_normal(2, 4), _ROWS, _normal(2, 3)),
        lambda x, i, s: x.scatter_add(1, i, s),
        lambda x, i, s: _add_at(x, i, s),
    ),
    "duplicates/index_add": (
        (_normal(3, 2), _fixed([2, 0, 2, 2]), _normal(4, 2)),
        lambda x, i, s: x.index_add(0, i, s),
        lambda x, i, s: _index_add(x, i, s),
    ),
    "indexing/mask": ((_normal(3, 4),), lambda x: x[x > 0], lambda x: x[x > 0]),
}


def _sign(x: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x), 0.0, np.sign(x))  # PyTorch's sign(NaN) is 0


def _add_at(x: np.ndarray, index: np.ndarray, src: np.ndarray) -> np.ndarray:
    out = x.copy()
    np.add.at(out, (np.arange(index.shape[0])[:, None], index), src)
    return out


def _index_add(x: np.ndarray, index: np.ndarray, src: np.ndarray) -> np.ndarray:
    out = x.copy()
    np.add.at(out, index, src)
    return out


def _as_tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _case(key: str) -> Callable[[Context], Iterator[Measure]]:
    makers, on_core, on_numpy = CASES[key]

    def run(ctx: Context) -> Iterator[Measure]:
        rng = np.random.default_rng(zlib.crc32(key.encode()))
        hosts = [m(rng) for m in makers]
        with ctx.scope(), np.errstate(all="ignore"):
            tensors = [
                tw.tensor(h, dtype=ctx.float if h.dtype.kind == "f" else None) for h in hosts
            ]
            got = _as_tuple(on_core(*tensors))
            want = _as_tuple(on_numpy(*(widen(h) for h in hosts)))
        for n, (t, w) in enumerate(zip(got, want)):
            host = np.asarray(t)
            if host.dtype != host_dtype(t.dtype):
                raise Failure(
                    "backend arrays",
                    f"a {t.dtype.name} tensor holds a {host.dtype} array (output {n})",
                )
            what = f"output {n}" if len(got) > 1 else "output"
            dtype = ctx.float if t.dtype.is_floating_point else t.dtype
            if dtype.is_floating_point:
                yield measure_array(what, host, np.asarray(w, np.float64), dtype)
            else:
                yield measure_array(
                    what, host.astype(np.float64), np.asarray(w, np.float64), d.float64, 0.0
                )

    return run


def cases() -> list[Case]:
    return [Case(f"core/{key}", _case(key)) for key in CASES]
