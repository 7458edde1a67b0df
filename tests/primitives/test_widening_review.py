"""Review of the kit's widening, cuPyNumeric's exact integer matmul and torch:cpu's float
remainder repair: each defect found as a named test, and seeded checks against torch."""

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
from tensorweaver_cunumeric import legate_config

needs_cunumeric = pytest.mark.skipif(
    legate_config.library_name() is None,
    reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
)


def _evaluate(case_id: str, backend) -> str:
    case = next(c for c in widening.cases() if c.id == case_id)
    return evaluate(case, Context(backend)).verdict


def _numpy_with(name: str, method) -> object:
    """The numpy backend with one method replaced (a throwaway subclass)."""
    honest = registry.backend_object("numpy", partial=True)
    broken = type("Broken", (type(honest),), {name: method})
    backend = broken.__new__(broken)
    backend.__dict__.update(honest.__dict__)
    return backend


@pytest.mark.parametrize("dtype", ["int64"])
def test_widening_matmul_catches_a_wrong_batch_broadcast(dtype: str) -> None:
    # the widening's matmul only multiplied operands of one batch shape: a backend whose
    # matmul is wrong where batch axes broadcast ((2, 3) with (2, 1) or (3,)) passed it
    def matmul(self, a, b):
        if a.shape[:-2] != b.shape[:-2]:
            return np.zeros_like(np.matmul(a, b))
        return np.matmul(a, b)

    honest = registry.backend_object("numpy", partial=True)
    assert _evaluate(f"widening/matmul/{dtype}", honest) == OK
    assert _evaluate(f"widening/matmul/{dtype}", _numpy_with("matmul", matmul)) == FAIL


def _cunumeric_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    backend = registry.backend_object("cunumeric")
    dtype = getattr(d, a.dtype.name)
    x, y = backend.from_host(a, dtype), backend.from_host(b, dtype)
    return backend.to_host(backend.matmul(x, y))


def _torch_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return torch.matmul(torch.from_numpy(a), torch.from_numpy(b)).numpy()


@needs_cunumeric
def test_cunumeric_small_integer_matmul_is_one_float64_product(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # exact 16-bit pieces made a (64, 64) int64 product ~10x slower (11 ms against 1.2 ms)
    # even for small values, whose float64 sums are exact: those take one matmul again
    from tensorweaver_cunumeric import intmatmul

    def pieces(*args):
        raise AssertionError("small operands were cut into pieces")

    monkeypatch.setattr(intmatmul, "_exact", pieces)
    rng = np.random.default_rng(0)
    for dtype, high in (("int64", 2**20), ("int32", 2**15)):
        a = rng.integers(-high, high, (2, 16, 8)).astype(dtype)
        b = rng.integers(-high, high, (8, 4)).astype(dtype)
        assert np.array_equal(_cunumeric_matmul(a, b), _torch_matmul(a, b))


@needs_cunumeric
def test_cunumeric_integer_matmul_matches_torch() -> None:
    # every integer dtype over its whole range (ends included), batch axes broadcast,
    # empty and k == 0, and int64 products just either side of the one-matmul bound
    rng = np.random.default_rng(1)
    shapes = [((2, 1, 3, 7), (1, 4, 7, 2)), ((2, 0, 3), (2, 3, 4)), ((2, 1, 3, 0), (4, 0, 2))]
    for dtype in ("int8", "int16", "int32", "int64", "uint8"):
        info = np.iinfo(dtype)
        for left, right in shapes:
            a = rng.integers(info.min, info.max, left, dtype, endpoint=True)
            b = rng.integers(info.min, info.max, right, dtype, endpoint=True)
            a.reshape(-1)[::5], b.reshape(-1)[1::3] = info.min, info.max
            got, want = _cunumeric_matmul(a, b), _torch_matmul(a, b)
            assert got.dtype == want.dtype and np.array_equal(got, want), (dtype, left, right)
    for top in (2**26 - 1, 2**26, 2**26 + 1):
        a = np.array([[top, -top], [top, top]], np.int64)
        b = np.array([[top + 1, 3], [-top, top]], np.int64)
        assert np.array_equal(_cunumeric_matmul(a, b), _torch_matmul(a, b)), top


def _scalar_remainder(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """torch's remainder one element a call (its scalar loop, exact)."""
    a, b = torch.broadcast_tensors(a, b)
    pairs = zip(a.reshape(-1), b.reshape(-1))
    return torch.cat([torch.remainder(x.reshape(1), y.reshape(1)) for x, y in pairs]).view(a.shape)


def _same(got: torch.Tensor, want: torch.Tensor) -> bool:
    equal = (got == want) & (got.signbit() == want.signbit())
    return bool((equal | (got.isnan() & want.isnan())).all())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_torch_remainder_matches_torch_scalar_loop(dtype: torch.dtype) -> None:
    # operands of every magnitude (overflowing quotients), NaN, inf, zeros of both signs,
    # in contiguous, transposed, broadcast and 0-d layouts
    backend = registry.backend_object("torch:cpu")
    g = torch.Generator().manual_seed(2)
    top = int(np.log2(torch.finfo(dtype).max)) + 1
    size = (24, 24)
    mantissa = torch.rand(2, *size, generator=g, dtype=torch.float64) * 2 - 1
    exponent = torch.randint(-top - 10, top, (2, *size), generator=g).double()
    a, b = (mantissa * torch.pow(2.0, exponent)).to(dtype)
    specials = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan")], dtype=dtype)
    a[0, :5], b[1, :5], b[2, :5] = specials, specials, 0.0
    for x, y in [(a, b), (a.t(), b), (a, b[:1]), (a[:, :1], b[1]), (a[3, 4], b)]:
        assert _same(backend.remainder(x, y), _scalar_remainder(x, y)), (x.shape, y.shape)


def test_torch_remainder_repair_stays_out_of_torch_compile() -> None:
    # the repair reads a value back, which would break Dynamo's graph (fullgraph raises)
    backend = registry.backend_object("torch:cpu")
    # torch.compile's first use turns torch.distributions' argument checks off for the whole
    # process: put them back, or the tests after this one in the worker see torch unchecked
    validating = torch.distributions.Distribution._validate_args
    try:
        compiled = torch.compile(backend.remainder, fullgraph=True, backend="eager")
        a, b = torch.full((16,), 1.5), torch.full((16,), 0.75)
        assert torch.equal(compiled(a, b), torch.remainder(a, b))
    finally:
        torch.distributions.Distribution.set_default_validate_args(validating)


def test_numpy_remainder_zero_takes_torch_sign() -> None:
    backend = registry.backend_object("numpy")
    a, b = np.array([2.0, -2.0, 3.0]), np.array([-1.0, 1.0, -1.5])
    got = torch.from_numpy(np.asarray(backend.remainder(a, b)))
    assert _same(got, torch.remainder(torch.from_numpy(a), torch.from_numpy(b)))
