"""The torch plugin: its hooks and device records, its fused composites, and the
primitives on the dtypes and cases where torch needed adapting (bfloat16, float16,
NaN in ``sign``, bool ``argmax``/``cumsum``/``matmul``).

The shared primitive suite in tests/primitives covers torch:cpu for the common dtypes;
this file does not repeat it. References are NumPy float64; gradients are also checked
by central finite differences of those references.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tensorweaver.contract import dtypes as d  # noqa: E402
from tensorweaver.contract import ir  # noqa: E402
from tensorweaver.contract.records import AVAILABLE, STATUSES, UNAVAILABLE  # noqa: E402
from tensorweaver_torch import devices, plugin  # noqa: E402

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
EPS = {d.bfloat16: 2.0**-7, d.float16: 2.0**-10, d.float32: 2.0**-23, d.float64: 2.0**-52}
HALVES = (d.bfloat16, d.float16)


def backend_for(*kinds: str):
    record = next(r for r in plugin.tw_devices(probe=True) if r.kind in kinds)
    return plugin.tw_create_backend(device=record)


def torch_dtype(dtype: d.DType) -> torch.dtype:
    return getattr(torch, dtype.name)  # the contract spells every dtype as torch does


@pytest.fixture(scope="module")
def cpu():
    return backend_for("cpu")


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


# --- hooks and device records -------------------------------------------------------


def test_backend_info() -> None:
    info = plugin.tw_backend_info()
    assert (info.name, info.library, info.install) == (
        "torch",
        "torch",
        "pip install tensorweaver[torch]",
    )
    assert info.api_version == "2.0"


def test_plugin_module_does_not_import_torch() -> None:
    code = "import sys, tensorweaver_torch.plugin; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("probe", [False, True])
def test_device_records_well_formed(probe: bool) -> None:
    records = plugin.tw_devices(probe=probe)
    for r in records:
        assert r.name == f"torch:{r.kind}:{r.index}" and r.backend == "torch"
        assert r.status in STATUSES
        assert r.detail["torch"] == torch.__version__
        assert torch.device(r.detail["torch_device"]) == devices.torch_device(r.kind, r.index)
        json.dumps(r.as_dict())  # JSON-friendly
    # best first: the CPU, always present, comes last
    assert records[-1].name == "torch:cpu:0" and records[-1].status == AVAILABLE
    assert [r.kind for r in records[:-1]] == sorted(
        (r.kind for r in records[:-1]), key=["cuda", "rocm", "mps", "xpu"].index
    )


def test_cpu_record_detail() -> None:
    detail = plugin.tw_devices(probe=True)[-1].detail
    assert detail["threads"] == torch.get_num_threads()
    assert detail["bf16"] is True
    assert detail["cpu_capability"] == torch.backends.cpu.get_cpu_capability()


def test_rocm_gpus_are_named_by_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.version, "hip", "6.2.4")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    records = plugin.tw_devices(probe=False)
    assert [r.name for r in records[:2]] == ["torch:rocm:0", "torch:rocm:1"]
    assert records[1].detail["torch_device"] == "cuda:1"
    assert records[1].detail["hip"] == "6.2.4"
    assert devices.torch_device("rocm", 1) == torch.device("cuda", 1)


def test_torch_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    (record,) = plugin.tw_devices(probe=True)
    assert (record.name, record.status) == ("torch:cpu:0", UNAVAILABLE)
    assert "not installed" in record.detail["reason"]
    assert "pip install tensorweaver[torch]" in record.detail["reason"]
    (problem,) = plugin.tw_diagnose()
    assert "not installed" in problem.message and problem.fix == "pip install tensorweaver[torch]"


def test_create_refuses_an_unavailable_device() -> None:
    record = plugin.tw_devices(probe=True)[-1]
    broken = type(record)(record.name, "torch", "cpu", 0, UNAVAILABLE, {"reason": "gone"})
    with pytest.raises(RuntimeError, match="gone"):
        plugin.tw_create_backend(device=broken)


def test_backend_object_is_complete(cpu) -> None:
    assert ir.missing_primitives(cpu) == []
    assert cpu.dtypes == frozenset(d.ALL)
    for name in ir.COMPOSITES:
        assert callable(getattr(cpu, f"fused_{name}"))
        assert callable(getattr(cpu, f"fused_{name}_backward"))


def test_registry_finds_the_plugin() -> None:
    from tensorweaver import registry

    assert registry.backend_object("torch:cpu").device.name == "torch:cpu:0"


# --- fused composites against NumPy float64 -----------------------------------------


def ref_softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def ref_log_softmax(x, axis):
    shifted = x - x.max(axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis, keepdims=True))


def ref_conv2d(x, w, b, stride, padding, dilation, groups):
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    og = o // groups
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    out = np.zeros((n, o, oh, ow))
    for g in range(groups):
        xs, ws = xp[:, g * cg : (g + 1) * cg], w[g * og : (g + 1) * og]
        for i in range(kh):
            for j in range(kw):
                patch = xs[
                    :,
                    :,
                    i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                    j * dw : j * dw + sw * (ow - 1) + 1 : sw,
                ]
                out[:, g * og : (g + 1) * og] += np.einsum("nchw,oc->nohw", patch, ws[:, :, i, j])
    return out if b is None else out + b.reshape(1, o, 1, 1)


def ref_max_pool2d(x, kernel, stride, padding):
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=-np.inf)
    oh = (xp.shape[2] - kh) // sh + 1
    ow = (xp.shape[3] - kw) // sw + 1
    windows = [
        xp[:, :, i : i + sh * (oh - 1) + 1 : sh, j : j + sw * (ow - 1) + 1 : sw]
        for i in range(kh)
        for j in range(kw)
    ]
    return np.max(windows, axis=0)


def ref_layer_norm(x, w, b, normalized_ndim, eps):
    axes = tuple(range(x.ndim - normalized_ndim, x.ndim))
    centred = x - x.mean(axes, keepdims=True)
    y = centred / np.sqrt((centred**2).mean(axes, keepdims=True) + eps)
    return (y if w is None else y * w) + (0 if b is None else b)


def ref_attention(q, k, v, mask, causal, scale):
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        keep = np.tril(np.ones(scores.shape[-2:], dtype=bool))
        scores = np.where(keep, scores, -np.inf)
    return ref_softmax(scores, -1) @ v


def ref_relu(x):
    return np.maximum(x, 0)


def ref_linear(x, w, b):
    return x @ w.T + b


# name, reference, shapes of the tensor inputs, the other arguments
COMPOSITE_CASES = [
    ("relu", ref_relu, [(3, 5)], ()),
    ("linear", ref_linear, [(2, 3, 4), (5, 4), (5,)], ()),
    ("softmax", ref_softmax, [(3, 5)], (1,)),
    ("softmax", ref_softmax, [(4, 2, 3)], (0,)),
    ("log_softmax", ref_log_softmax, [(3, 5)], (1,)),
    ("conv2d", ref_conv2d, [(2, 2, 5, 5), (4, 1, 3, 3), (4,)], ((1, 1), (1, 1), (1, 1), 2)),
    ("conv2d", ref_conv2d, [(1, 3, 7, 6), (2, 3, 3, 2)], (None, (2, 1), (0, 1), (2, 1), 1)),
    ("max_pool2d", ref_max_pool2d, [(2, 2, 5, 6)], ((2, 2), (2, 2), (1, 0))),
    ("max_pool2d", ref_max_pool2d, [(1, 2, 6, 6)], ((3, 3), (2, 1), (1, 1))),
    ("layer_norm", ref_layer_norm, [(3, 4), (4,), (4,)], (1, 1e-5)),
    ("layer_norm", ref_layer_norm, [(2, 3, 4)], (None, None, 2, 1e-3)),
    (
        "scaled_dot_product_attention",
        ref_attention,
        [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 3)],
        (None, False, 0.5),
    ),
    (
        "scaled_dot_product_attention",
        ref_attention,
        [(2, 4, 3), (2, 5, 3), (2, 5, 2)],
        (None, True, 0.7),
    ),
]
CASE_IDS = [f"{c[0]}-{i}" for i, c in enumerate(COMPOSITE_CASES)]


def fused_forward(backend, name, inputs, args, dtype):
    tensors = [backend.from_host(x, dtype) for x in inputs]
    return getattr(backend, f"fused_{name}")(*tensors, *args)


@pytest.mark.parametrize("dtype", [d.float64, d.float32, d.bfloat16], ids=lambda t: t.name)
@pytest.mark.parametrize(("name", "reference", "shapes", "args"), COMPOSITE_CASES, ids=CASE_IDS)
def test_fused_forward(cpu, rng, name, reference, shapes, args, dtype) -> None:
    inputs = [rng.standard_normal(s) for s in shapes]
    out, _ = fused_forward(cpu, name, inputs, args, dtype)
    assert out.dtype == torch_dtype(dtype)
    assert not out.requires_grad  # later primitives on it must record nothing
    # Inputs rounded to dtype, reference in float64: what remains is the kernel's error.
    rounded = [cpu.to_host(cpu.from_host(x, dtype)).astype(np.float64) for x in inputs]
    expected = reference(*rounded, *args)
    tol = 8 * EPS[dtype] if dtype is not d.float64 else 1e-12
    np.testing.assert_allclose(
        cpu.to_host(out), expected, rtol=tol, atol=tol * np.abs(expected).max()
    )


@pytest.mark.parametrize(("name", "reference", "shapes", "args"), COMPOSITE_CASES, ids=CASE_IDS)
def test_fused_backward(cpu, rng, name, reference, shapes, args) -> None:
    inputs = [rng.standard_normal(s) for s in shapes]
    out, saved = fused_forward(cpu, name, inputs, args, d.float64)
    grad_out = rng.standard_normal(tuple(out.shape))
    # An absent optional tensor (None among the other arguments) wants no gradient.
    needs = (True,) * len(inputs) + tuple(False for a in args if a is None)
    grads = getattr(cpu, f"fused_{name}_backward")(saved, cpu.from_host(grad_out, d.float64), needs)
    assert len(grads) == len(needs) and all(g is None for g in grads[len(inputs) :])

    def loss(*xs):
        return float(np.sum(grad_out * reference(*xs, *args)))

    h = 1e-6
    for i, (x, grad) in enumerate(zip(inputs, grads)):
        numeric = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            plus, minus = [a.copy() for a in inputs], [a.copy() for a in inputs]
            plus[i][idx] += h
            minus[i][idx] -= h
            numeric[idx] = (loss(*plus) - loss(*minus)) / (2 * h)
        np.testing.assert_allclose(cpu.to_host(grad), numeric, rtol=1e-6, atol=1e-7)


def test_fused_backward_can_run_twice(cpu, rng) -> None:
    x = cpu.from_host(rng.standard_normal((3, 4)), d.float64)
    _, saved = cpu.fused_softmax(x, 1)
    g = cpu.from_host(rng.standard_normal((3, 4)), d.float64)
    (first,) = cpu.fused_softmax_backward(saved, g, (True,))
    (second,) = cpu.fused_softmax_backward(saved, g, (True,))
    np.testing.assert_array_equal(cpu.to_host(first), cpu.to_host(second))


# --- primitives on bfloat16 and float16 ---------------------------------------------


def bf16_round(x) -> np.ndarray:
    """float32 -> the nearest bfloat16 (ties to even), as float32: NumPy has no bf16."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return rounded.astype(np.uint32).view(np.float32)


def test_bf16_host_round_trip(cpu, rng) -> None:
    x = rng.standard_normal(1000).astype(np.float32)
    x[:3] = [1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8)]  # ties: to even
    host = cpu.to_host(cpu.from_host(x, d.bfloat16))
    assert host.dtype == np.float32
    np.testing.assert_array_equal(host, bf16_round(x))
    assert cpu.to_host(cpu.from_host(x, d.float16)).dtype == np.float16


def test_host_transfers_copy(cpu) -> None:
    source = np.arange(6.0)[::-1]  # negative strides, which torch.from_numpy refuses
    source.flags.writeable = False
    t = cpu.from_host(source, d.float32)
    host = cpu.to_host(t)
    host[0] = 99.0
    np.testing.assert_array_equal(cpu.to_host(t), [5, 4, 3, 2, 1, 0])


UNARY_REFS = {
    "neg": np.negative,
    "abs": np.abs,
    "sign": np.sign,
    "exp": np.exp,
    "log": np.log,
    "sin": np.sin,
    "cos": np.cos,
    "tanh": np.tanh,
    "sqrt": np.sqrt,
    "erf": np.vectorize(math.erf),
    "floor": np.floor,
    "ceil": np.ceil,
    "round": np.round,
    "trunc": np.trunc,
}


def half_input(backend, values, dtype):
    """The backend array and its exact values in float64 (rounded to dtype on the way)."""
    a = backend.from_host(np.asarray(values, np.float32), dtype)
    return a, backend.to_host(a).astype(np.float64)


def check_close(backend, result, expected, dtype, rtol) -> None:
    assert result.dtype == torch_dtype(dtype)
    np.testing.assert_allclose(
        backend.to_host(result).astype(np.float64), expected, rtol=rtol, atol=rtol * 1e-3
    )


@pytest.mark.parametrize("dtype", HALVES, ids=lambda t: t.name)
@pytest.mark.parametrize("name", sorted(UNARY_REFS))
def test_half_unary(cpu, rng, name, dtype) -> None:
    values = rng.uniform(-4, 4, 64)
    values[:6] = [0.5, 1.5, 2.5, -0.5, -2.5, 0.0]  # round: halves go to even
    if name in ("log", "sqrt"):
        values = np.abs(values) + 0.1
    a, exact = half_input(cpu, values, dtype)
    # One rounding of a float32-accurate result: half an ulp.
    check_close(cpu, getattr(cpu, name)(a), UNARY_REFS[name](exact), dtype, EPS[dtype] / 2)


BINARY_REFS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "floordiv": np.floor_divide,
    "remainder": np.remainder,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


@pytest.mark.parametrize("dtype", HALVES, ids=lambda t: t.name)
@pytest.mark.parametrize("name", sorted(BINARY_REFS))
def test_half_binary(cpu, rng, name, dtype) -> None:
    x = rng.uniform(-4, 4, 64)
    # Divisors are powers of two, so that a / b is exact and floor() cannot tip over.
    y = rng.choice([-4.0, -2.0, -1.0, -0.5, 0.5, 1.0, 2.0, 4.0], 64)
    if name == "pow":
        x, y = rng.uniform(0.5, 2, 64), rng.uniform(-2, 2, 64)
    a, ea = half_input(cpu, x, dtype)
    b, eb = half_input(cpu, y, dtype)
    check_close(cpu, getattr(cpu, name)(a, b), BINARY_REFS[name](ea, eb), dtype, EPS[dtype] / 2)
    # a 0-d operand broadcasts
    s, es = half_input(cpu, np.float32(y[0]), dtype)
    check_close(cpu, getattr(cpu, name)(a, s), BINARY_REFS[name](ea, es), dtype, EPS[dtype] / 2)


COMPARISON_REFS = {
    "eq": np.equal,
    "ne": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
}


@pytest.mark.parametrize("dtype", HALVES, ids=lambda t: t.name)
def test_half_comparisons_and_where(cpu, rng, dtype) -> None:
    a, ea = half_input(cpu, rng.integers(-3, 3, 50), dtype)
    b, eb = half_input(cpu, rng.integers(-3, 3, 50), dtype)
    for name in ir.COMPARISONS:
        result = getattr(cpu, name)(a, b)
        assert result.dtype == torch.bool
        np.testing.assert_array_equal(cpu.to_host(result), COMPARISON_REFS[name](ea, eb))
    cond = cpu.lt(a, b)
    check_close(cpu, cpu.where(cond, a, b), np.where(ea < eb, ea, eb), dtype, 0)


@pytest.mark.parametrize("dtype", HALVES, ids=lambda t: t.name)
@pytest.mark.parametrize("keepdims", [False, True])
def test_half_reductions(cpu, rng, dtype, keepdims) -> None:
    a, e = half_input(cpu, rng.uniform(0.5, 1.5, (3, 4, 5)), dtype)
    axes = (0, 2)
    n = 15  # elements per result: a bound of n roundings
    check_close(
        cpu, cpu.sum(a, axes, keepdims), e.sum(axes, keepdims=keepdims), dtype, n * EPS[dtype]
    )
    check_close(
        cpu, cpu.prod(a, axes, keepdims), e.prod(axes, keepdims=keepdims), dtype, n * EPS[dtype]
    )
    check_close(cpu, cpu.max(a, axes, keepdims), e.max(axes, keepdims=keepdims), dtype, 0)
    check_close(cpu, cpu.min(a, axes, keepdims), e.min(axes, keepdims=keepdims), dtype, 0)
    check_close(cpu, cpu.cumsum(a, 1), e.cumsum(1), dtype, 4 * EPS[dtype])
    for name in ("argmax", "argmin"):
        result = getattr(cpu, name)(a, 1, keepdims)
        assert result.dtype == torch.int64
        expected = getattr(np, name)(e, 1)
        np.testing.assert_array_equal(
            cpu.to_host(result), np.expand_dims(expected, 1) if keepdims else expected
        )


@pytest.mark.parametrize("dtype", HALVES, ids=lambda t: t.name)
def test_half_nan_semantics(cpu, dtype) -> None:
    a, _ = half_input(cpu, [1.0, np.nan, 3.0, np.nan, -2.0], dtype)
    b, _ = half_input(cpu, [0.0, 1.0, np.nan, 5.0, -3.0], dtype)
    np.testing.assert_array_equal(cpu.to_host(cpu.sign(a)), [1, np.nan, 1, np.nan, -1])
    np.testing.assert_array_equal(cpu.to_host(cpu.maximum(a, b)), [1, np.nan, np.nan, np.nan, -2])
    assert np.isnan(cpu.to_host(cpu.max(a, (0,), False)))
    assert cpu.to_host(cpu.argmax(a, 0, False)) == 1  # the first NaN counts as the maximum
    assert cpu.to_host(cpu.argmin(a, 0, False)) == 1


@pytest.mark.parametrize("dtype", HALVES, ids=lambda t: t.name)
def test_half_matmul(cpu, rng, dtype) -> None:
    a, ea = half_input(cpu, rng.standard_normal((2, 4, 8)), dtype)
    b, eb = half_input(cpu, rng.standard_normal((8, 3)), dtype)
    result = cpu.matmul(a, cpu.expand(cpu.reshape(b, (1, 8, 3)), (2, 8, 3)))
    assert result.dtype == torch_dtype(dtype)
    # the classic bound: k roundings of products as large as |a| @ |b|
    bound = 8 * EPS[dtype] * (np.abs(ea) @ np.abs(eb))
    assert np.all(np.abs(cpu.to_host(result) - ea @ eb) <= bound)


@pytest.mark.parametrize("dtype", HALVES, ids=lambda t: t.name)
def test_half_movement_and_index(cpu, rng, dtype) -> None:
    a, e = half_input(cpu, rng.integers(-50, 50, (3, 4, 5)), dtype)  # exact in both dtypes

    def same(result, expected) -> None:
        assert result.dtype == torch_dtype(dtype)
        np.testing.assert_array_equal(cpu.to_host(result), expected)

    same(cpu.reshape(a, (12, 5)), e.reshape(12, 5))
    same(cpu.permute(a, (2, 0, 1)), e.transpose(2, 0, 1))
    same(
        cpu.expand(cpu.reshape(a, (3, 4, 5, 1)), (3, 4, 5, 2)),
        np.broadcast_to(e[..., None], (3, 4, 5, 2)),
    )
    same(
        cpu.pad(a, ((0, 1), (2, 0), (1, 3)), 1.5),
        np.pad(e, ((0, 1), (2, 0), (1, 3)), constant_values=1.5),
    )
    same(cpu.slice(a, (1, 0, 1), (3, 4, 5), (1, 2, 3)), e[1:3, 0:4:2, 1:5:3])
    same(cpu.flip(a, (0, 2)), e[::-1, :, ::-1])
    same(cpu.cat([a, a], 1), np.concatenate([e, e], 1))
    index = rng.integers(0, 4, (3, 2, 5))
    ti = cpu.from_host(index, d.int64)
    same(cpu.gather(a, 1, ti), np.take_along_axis(e, index, 1))
    same(cpu.take(a, 1, cpu.from_host(np.array([3, 0, 3]), d.int64)), e[:, [3, 0, 3]])
    src_values = rng.integers(-5, 5, (3, 2, 5))
    src, _ = half_input(cpu, src_values, dtype)
    expected = e.copy()
    np.add.at(expected, (np.arange(3)[:, None, None], index, np.arange(5)), src_values)
    same(cpu.scatter_add(a, 1, ti, src), expected)
    unique = cpu.from_host(np.broadcast_to(np.array([2, 0])[None, :, None], (3, 2, 5)), d.int64)
    expected = e.copy()
    expected[:, [2, 0], :] = src_values
    same(cpu.scatter(a, 1, unique, src), expected)
    nz = cpu.nonzero(cpu.from_host(e > 10, d.bool_))
    assert nz.dtype == torch.int64
    np.testing.assert_array_equal(cpu.to_host(nz), np.argwhere(e > 10))


@pytest.mark.parametrize("dtype", HALVES, ids=lambda t: t.name)
def test_half_data(cpu, dtype) -> None:
    assert cpu.full((2, 3), 2.5, dtype).dtype == torch_dtype(dtype)
    np.testing.assert_array_equal(cpu.to_host(cpu.full((2, 3), 2.5, dtype)), np.full((2, 3), 2.5))
    np.testing.assert_array_equal(cpu.to_host(cpu.arange(-2, 3, 0.5, dtype)), np.arange(-2, 3, 0.5))
    a, e = half_input(cpu, [-2.7, -0.5, 0.0, 0.5, 3.9], dtype)
    np.testing.assert_array_equal(cpu.to_host(cpu.cast(a, d.int32)), np.trunc(e))
    np.testing.assert_array_equal(cpu.to_host(cpu.cast(a, d.bool_)), e != 0)
    other = d.float16 if dtype is d.bfloat16 else d.bfloat16
    assert cpu.cast(a, other).dtype == torch_dtype(other)


@pytest.mark.parametrize("dtype", HALVES, ids=lambda t: t.name)
def test_half_random(cpu, dtype) -> None:
    cpu.seed(7)
    first = cpu.random_uniform((20000,), 1.0, 2.0, dtype)
    assert first.dtype == torch_dtype(dtype)
    u = cpu.to_host(first)
    assert u.min() >= 1.0 and u.max() < 2.0  # [low, high) even after rounding to dtype
    cpu.seed(7)
    np.testing.assert_array_equal(cpu.to_host(cpu.random_uniform((20000,), 1.0, 2.0, dtype)), u)
    n = cpu.to_host(cpu.random_normal((20000,), 3.0, 2.0, dtype)).astype(np.float64)
    assert abs(n.mean() - 3.0) < 0.1 and abs(n.std() - 2.0) < 0.1


# --- torch's gaps, filled -----------------------------------------------------------


def test_bool_argmax_and_cumsum(cpu) -> None:
    a = cpu.from_host(np.array([[False, True, True], [False, False, False]]), d.bool_)
    np.testing.assert_array_equal(cpu.to_host(cpu.argmax(a, 1, False)), [1, 0])
    np.testing.assert_array_equal(cpu.to_host(cpu.argmin(a, 1, True)), [[0], [0]])
    running = cpu.cumsum(a, 1)
    assert running.dtype == torch.bool
    np.testing.assert_array_equal(cpu.to_host(running), [[False, True, True], [False] * 3])


def test_pad_keeps_large_int64_exact(cpu) -> None:
    big = 2**62 + 1  # not a float64
    a = cpu.from_host(np.array([1, 2]), d.int64)
    np.testing.assert_array_equal(cpu.to_host(cpu.pad(a, ((1, 2),), big)), [big, 1, 2, big, big])


def test_matmul_without_native_kernels(cpu, rng, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a GPU does for integers: the sum of products, with batch broadcasting.
    monkeypatch.setattr(cpu, "_native_matmul", frozenset())
    a = rng.integers(-9, 9, (2, 1, 3, 4))
    b = rng.integers(-9, 9, (5, 4, 2))
    result = cpu.matmul(cpu.from_host(a, d.int32), cpu.from_host(b, d.int32))
    assert result.dtype == torch.int32
    np.testing.assert_array_equal(cpu.to_host(result), a @ b)
    ab, bb = a > 0, b > 0
    result = cpu.matmul(cpu.from_host(ab, d.bool_), cpu.from_host(bb, d.bool_))
    assert result.dtype == torch.bool
    np.testing.assert_array_equal(cpu.to_host(result), ab @ bb)


# --- CUDA ---------------------------------------------------------------------------


@needs_cuda
def test_cuda_record_detail() -> None:
    gpus = [r for r in plugin.tw_devices(probe=True) if r.kind in ("cuda", "rocm")]
    assert len(gpus) == torch.cuda.device_count()
    for r in gpus:
        assert r.status == AVAILABLE and r.detail["torch_device"] == f"cuda:{r.index}"
        assert r.detail["gpu"] == torch.cuda.get_device_name(r.index)
        assert r.detail["memory_gib"] > 0 and isinstance(r.detail["bf16"], bool)
        if r.kind == "cuda":
            major, minor = torch.cuda.get_device_capability(r.index)
            assert r.detail["compute_capability"] == f"{major}.{minor}"
            assert r.detail["bf16"] == (major >= 8)


@needs_cuda
def test_cuda_bf16_matmul(rng) -> None:
    gpu = backend_for("cuda", "rocm")
    a, ea = half_input(gpu, rng.standard_normal((3, 64, 32)), d.bfloat16)
    b, eb = half_input(gpu, rng.standard_normal((32, 16)), d.bfloat16)
    result = gpu.matmul(a, b)
    assert result.dtype == torch.bfloat16 and result.device.type == "cuda"
    bound = 32 * EPS[d.bfloat16] * (np.abs(ea) @ np.abs(eb))
    assert np.all(np.abs(gpu.to_host(result) - ea @ eb) <= bound)


@needs_cuda
def test_cuda_integer_matmul(rng) -> None:
    gpu = backend_for("cuda", "rocm")
    a, b = rng.integers(-9, 9, (4, 5)), rng.integers(-9, 9, (5, 3))
    result = gpu.matmul(gpu.from_host(a, d.int64), gpu.from_host(b, d.int64))
    np.testing.assert_array_equal(gpu.to_host(result), a @ b)


@needs_cuda
def test_cuda_fused_attention_matches_reference(rng) -> None:
    gpu = backend_for("cuda", "rocm")
    q, k, v = (rng.standard_normal((2, 4, 16, 8)) for _ in range(3))
    out, saved = fused_forward(
        gpu, "scaled_dot_product_attention", [q, k, v], (None, True, 0.3), d.float32
    )
    np.testing.assert_allclose(
        gpu.to_host(out), ref_attention(q, k, v, None, True, 0.3), rtol=1e-3, atol=1e-3
    )
    grads = gpu.fused_scaled_dot_product_attention_backward(
        saved, torch.ones_like(out), (True, True, True, False)
    )
    assert [g.device.type for g in grads[:3]] == ["cuda"] * 3 and grads[3] is None


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int8", "bool"])
def test_where_on_a_large_random_mask_is_bit_exact(cpu, dtype) -> None:
    # Past a few thousand elements the CPU backend selects bit patterns, not torch.where.
    gen = torch.Generator().manual_seed(0)
    cond = torch.rand((64, 128), generator=gen) > 0.5
    a = (torch.randn((64, 128), generator=gen) * 100).to(getattr(torch, dtype))
    b = (torch.randn((64, 128), generator=gen) * 100).to(getattr(torch, dtype))
    if a.is_floating_point():
        a[0, :4] = torch.tensor([float("nan"), float("inf"), -0.0, -float("inf")])
    word = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[a.element_size()]
    for other in (b, b.T.contiguous().T, torch.zeros((), dtype=a.dtype)):
        got = cpu.where(cond, a, other)
        want = torch.where(cond, a, other)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert torch.equal(got.view(word), want.view(word))  # bit for bit


@pytest.mark.parametrize(("given", "expected"), [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_openmp_waits_passively_unless_the_user_chose(given, expected) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    code = (
        "import os, tensorweaver as tw; tw.zeros(2, device='torch:cpu'); "
        "print(os.environ.get('OMP_WAIT_POLICY'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == expected
