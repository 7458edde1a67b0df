"""The conformance kit's widening (tensorweaver.conformance.widening): its layouts are the
ones they claim, its cases fail on a backend that is wrong in one layout or dtype, and the
defects it found, each as a named test."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensorweaver import registry
from tensorweaver.check.context import Context
from tensorweaver.check.report import FAIL, OK
from tensorweaver.check.runner import evaluate
from tensorweaver.conformance import widening
from tensorweaver.contract import dtypes as d
from tensorweaver.contract.ir import REQUIRED
from tensorweaver_cunumeric import legate_config


@pytest.fixture(scope="module")
def numpy_context() -> Context:
    return Context(registry.backend_object("numpy", partial=True))


def _case(case_id: str):
    return next(c for c in widening.cases() if c.id == case_id)


def test_every_required_primitive_is_widened() -> None:
    from tensorweaver.check.cases import NO_ARRAY

    covered = set(widening.SPECS).union(*widening.GROUPS.values())
    assert sorted(REQUIRED - NO_ARRAY - covered) == []


@pytest.mark.parametrize("layout", widening.LAYOUTS)
def test_a_layout_holds_the_values_it_claims(numpy_context: Context, layout: str) -> None:
    h = widening.values(d.int16)
    shown, native = widening.place(numpy_context, h, d.int16, layout)
    assert np.array_equal(numpy_context.backend.to_host(native), shown)
    if layout == "long":
        assert np.array_equal(shown, np.concatenate([h] * 8))
    elif layout not in ("broadcast", "broadcast-last", "host-broadcast", "empty", "0-d"):
        assert np.array_equal(shown, h)


def test_channels_last_is_laid_out_as_torch_lays_it_out(numpy_context: Context) -> None:
    h = widening.values(d.float32)
    _, native = widening.place(numpy_context, h, d.float32, "channels-last")
    t = torch.from_numpy(h).to(memory_format=torch.channels_last)
    assert tuple(s // native.itemsize for s in native.strides) == t.stride()


def test_host_layouts_reach_a_sharing_backend_with_their_strides(numpy_context: Context) -> None:
    h = widening.values(d.float64)
    _, fortran = widening.place(numpy_context, h, d.float64, "host-fortran")
    _, broadcast = widening.place(numpy_context, h, d.float64, "host-broadcast")
    assert fortran.flags.f_contiguous and not fortran.flags.c_contiguous
    assert broadcast.strides[0] == 0


def test_a_primitive_wrong_only_in_one_layout_fails_its_case(numpy_context: Context) -> None:
    backend = numpy_context.backend
    right = backend.take

    def take(a, axis, index):  # wrong only where axis 1 is not the innermost but one
        out = right(a, axis, index)
        return out + 1 if a.ndim == 4 and a.strides[1] < a.strides[3] else out

    backend.take = take
    try:
        result = evaluate(_case("widening/index/int8"), numpy_context)
    finally:
        del backend.take
    assert result.verdict == FAIL and "channels-last" in result.detail


def test_a_complex_result_losing_its_imaginary_part_fails(numpy_context: Context) -> None:
    backend = numpy_context.backend
    right = backend.sum
    backend.sum = lambda a, axes, keepdims: right(a, axes, keepdims).real.astype(a.dtype)
    try:
        result = evaluate(_case("widening/sum/complex64"), numpy_context)
    finally:
        del backend.sum
    assert result.verdict == FAIL and "imaginary part" in result.detail


PASSING = ("widening/remainder/float32", "widening/cast/int64", "widening/movement/complex128")


@pytest.mark.parametrize("case_id", PASSING)
def test_the_widening_passes_on_numpy(numpy_context: Context, case_id: str) -> None:
    result = evaluate(_case(case_id), numpy_context)
    assert result.verdict == OK, result.detail


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_torch_remainder_is_exact_where_the_quotient_overflows(dtype: torch.dtype) -> None:
    # torch 2.13's vectorised CPU kernel gave NaN (8 or more elements); its scalar loop 0
    backend = registry.backend_object("torch:cpu")
    tiny = torch.finfo(dtype).smallest_normal / 2**5  # a subnormal: 1.5 / tiny overflows
    a, b = torch.full((64,), 1.5, dtype=dtype), torch.full((64,), -tiny, dtype=dtype)
    scalar_loop = torch.remainder(a[:1], b[:1])  # torch's own answer on one element
    assert scalar_loop.item() == 0.0 == 1.5 % -float(tiny)
    assert torch.equal(backend.remainder(a, b), scalar_loop.expand(64))
    # NaN where it belongs stays: NaN and infinite a, a zero b
    a[:3], b[3] = torch.tensor([float("nan"), float("inf"), -float("inf")]), 0.0
    assert backend.remainder(a, b)[:4].isnan().all()


def test_torch_remainder_traces_for_tw_compile() -> None:
    # the repair reads a flag back, which would stop make_fx (tw.compile's tracer on torch)
    from torch.fx.experimental.proxy_tensor import make_fx

    backend = registry.backend_object("torch:cpu")
    a, b = torch.full((16,), 1.5), torch.full((16,), 2.0**-140)
    graph = make_fx(backend.remainder)(a, b)
    assert torch.equal(graph(a, torch.full((16,), 0.75)), torch.zeros(16))


needs_cunumeric = pytest.mark.skipif(
    legate_config.library_name() is None,
    reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
)


def _cunumeric_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    backend = registry.backend_object("cunumeric")
    dtype = getattr(d, a.dtype.name)
    x, y = backend.from_host(a, dtype), backend.from_host(b, dtype)
    return backend.to_host(backend.matmul(x, y))


def _ends(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Operands whose products and sums pass 2**53 (and wrap around), as torch wraps them."""
    low, high = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
    a = np.array([[high, 1, low], [3, low + 1, 2**20 + 7]], dtype)
    b = np.array([[2, -1], [low, 5], [7, high]], dtype)
    return a, b


@needs_cunumeric
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_cunumeric_integer_matmul_is_exact_beyond_float64(dtype: str) -> None:
    # cuPyNumeric 26.6 multiplied integers in float64: [[2**31 - 1, 1, -2**31]] @ ... came
    # back as -2**31 where torch (and NumPy) wrap the exact sum
    a, b = _ends(dtype)
    want = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert np.array_equal(_cunumeric_matmul(a, b), want)


@needs_cunumeric
def test_cunumeric_integer_matmul_sums_a_long_axis_in_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tensorweaver_cunumeric import intmatmul

    monkeypatch.setattr(intmatmul, "_MOST_TERMS", 8)  # int64: two terms a chunk
    a, b = _ends("int64")
    want = torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert np.array_equal(_cunumeric_matmul(a, b), want)
    none = np.zeros((2, 0), np.int64)
    assert np.array_equal(_cunumeric_matmul(none, none.T), np.zeros((2, 2), np.int64))
