"""The NumPy backend at dtype edges, against torch 2.13 (session 20).

A hunt over user-level snippets (``import tensorweaver as torch``) where NumPy's semantics
differ from PyTorch's: integer division by zero, floor/remainder signs, float-to-int casts of
NaN/inf, integer wrap-around and accumulation dtypes, shifts past the bit width, integer
``pow``, ``gcd``/``lcm``, rounding, signed zeros and NaN in comparisons and reductions,
float16 rounding, huge allocations, linear algebra of NaN, and NumPy's RuntimeWarnings.
About 1000 snippets were compared; what differed is here.

Fixed in the backend: an array too large for the host raised NumPy's ``MemoryError`` or
``ValueError`` where torch raises ``RuntimeError``, and ``arange(0, 2**63 - 1)`` silently
returned an empty tensor (NumPy's length overflows); the creation primitives now raise
``OutOfMemoryError`` (both a RuntimeError and a MemoryError). The sizes are past any
machine's address space (2**55 float32 is 128 PiB), so no allocation succeeds lazily under
memory overcommit. ``det`` and ``slogdet`` of a matrix holding NaN, or whose determinant
overflows, emitted NumPy's RuntimeWarnings.

The strict xfails need a change outside the backend (the core, or the contract), each with
its cause and the proposed fix.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.contract import dtypes as d
from tw_backends import entered

HUGE = 2**55  # elements: 128 PiB of float32, past every address space
OVERFLOWING = 2**62  # elements whose byte count overflows a 64-bit size

ALLOCATIONS = {
    "empty_size_overflows": lambda m: m.empty(OVERFLOWING),
    "zeros": lambda m: m.zeros(HUGE),
    "ones_2d_size_overflows": lambda m: m.ones(2**40, 2**30),
    "full": lambda m: m.full((HUGE,), 2.0),
    "empty_then_zero_": lambda m: m.empty(HUGE).zero_(),
    "arange_int": lambda m: m.arange(0, HUGE),
    "arange_float": lambda m: m.arange(0.0, float(HUGE)),
    "arange_float16": lambda m: m.arange(0.0, float(HUGE), dtype=m.float16),
    # NumPy returned an empty array (no error) where the length overflows int64
    "arange_length_2_to_the_63_was_empty": lambda m: m.arange(0, 2**63 - 1),
    "arange_length_past_int64": lambda m: m.arange(0.0, 1e300),
    "arange_tiny_step": lambda m: m.arange(0, 1, 1e-300),
    "arange_whole_int64_range": lambda m: m.arange(-(2**63), 2**63 - 1),
    "rand": lambda m: m.rand(HUGE),
    "randn_size_overflows": lambda m: m.randn(OVERFLOWING),
    "randn_float16": lambda m: m.randn(HUGE, dtype=m.float16),
    "randint": lambda m: m.randint(0, 5, (HUGE,)),
}


@pytest.mark.parametrize("make", ALLOCATIONS.values(), ids=ALLOCATIONS.keys())
def test_huge_allocations_raise_runtime_error_like_torch(make: Callable[[Any], Any]) -> None:
    # Before: MemoryError (or ValueError "array is too big" / "Maximum allowed size
    # exceeded"), which `except RuntimeError` (torch's class) missed; or an empty tensor.
    with pytest.raises(RuntimeError):
        make(torch)
    with tw.device("numpy"), pytest.raises(RuntimeError, match="cannot allocate") as raised:
        make(tw)
    assert isinstance(raised.value, MemoryError)  # `except MemoryError` still catches it


def test_creation_still_works_after_the_allocation_guard() -> None:
    with tw.device("numpy"):
        tw.manual_seed(0)
        ours = [tw.arange(5), tw.arange(0.0, 1.0, 0.25, dtype=tw.float16), tw.full((2,), 3)]
        shapes = [tuple(tw.rand(2, 3).shape), tuple(tw.randint(0, 5, (4,)).shape)]
    theirs = [
        torch.arange(5),
        torch.arange(0.0, 1.0, 0.25, dtype=torch.float16),
        torch.full((2,), 3),
    ]
    for a, b in zip(ours, theirs):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert a.tolist() == b.tolist()
    assert shapes == [(2, 3), (4,)]


def test_edge_arithmetic_emits_no_numpy_warnings() -> None:
    """NaN/inf-producing float ops, integer wrap-around and casts of NaN warn in NumPy; torch
    warns for none of them, and neither must tw."""
    with tw.device("numpy"), warnings.catch_warnings():
        warnings.simplefilter("error")
        x = tw.tensor([0.0, -1.0, 1e30, float("inf"), float("nan")])
        (x / 0, x.log(), x.sqrt(), x * x, x - x, x.exp(), x.long(), x.to(tw.uint8))
        i8 = tw.tensor(127, dtype=tw.int8)
        (i8 + 1, i8 * i8, -tw.tensor(-128, dtype=tw.int8), tw.tensor(-(2**63)).abs())


def _determinants(m: Any) -> list:
    nan = m.tensor([[float("nan"), 0.0], [0.0, 1.0]])
    huge = m.tensor([[1e200, 0.0], [0.0, 1e200]], dtype=m.float64)
    dets = [m.linalg.det(nan), m.linalg.det(huge)]
    return [det.item() for det in dets] + [
        m.linalg.slogdet(a).logabsdet.item() for a in (nan, huge)
    ]


def test_determinants_of_nan_and_overflow_warn_nothing_like_torch() -> None:
    # Before: NumPy's "invalid value encountered in det" / "overflow encountered in det"
    # and "... in slogdet" RuntimeWarnings; torch gives NaN and inf silently.
    theirs = _determinants(torch)
    with tw.device("numpy"), warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = _determinants(tw)
    assert str(ours) == str(theirs)


class _NoDeterminantKernel:
    """A backend without ``linalg_det``: the core computes it on the host (as on
    cuPyNumeric, whose ``tw.linalg.det`` of a NaN matrix warned so)."""

    device = SimpleNamespace(name="no-det:cpu:0")
    to_host = staticmethod(np.asarray)

    @staticmethod
    def from_host(array: np.ndarray, dtype: Any) -> np.ndarray:
        return array


@pytest.mark.xfail(
    strict=True,
    raises=RuntimeWarning,
    reason="core/tensorweaver/ops/host_fallback.py run_optional calls the host NumPy code "
    "with the caller's error state, so np.linalg.det of a NaN matrix warns 'invalid value "
    "encountered in det' (tw.linalg.det/slogdet on cuPyNumeric); torch warns nothing. Fix: "
    "run `host(...)` inside `with np.errstate(all='ignore'):`.",
)
def test_host_fallback_determinant_of_nan_warns_nothing() -> None:
    from tensorweaver.linalg import host
    from tensorweaver.ops.host_fallback import run_optional

    nan = np.array([[np.nan, 0.0], [0.0, 1.0]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        det = run_optional(_NoDeterminantKernel(), "linalg_det", host.det, d.float32, nan)
    assert str(float(det)) == str(torch.linalg.det(torch.from_numpy(nan)).item())


@pytest.mark.xfail(
    strict=True,
    raises=ValueError,
    reason="plugins/numpy-backend/tensorweaver_numpy/linalg.py linalg_svd (and linalg_eig) let "
    "numpy.linalg.LinAlgError (a ValueError: 'SVD did not converge') out for a matrix holding "
    "NaN; torch raises torch.linalg.LinAlgError (a RuntimeError) from svd, svdvals, pinv and "
    "matrix_rank. A plugin may import only tensorweaver.contract, which has no LinAlgError. "
    "Fix: move LinAlgError to contract/errors.py (core/tensorweaver/linalg/errors.py "
    "re-exports it) and re-raise NumPy's error as it in the backend.",
)
def test_svd_of_nan_raises_linalg_error_like_torch() -> None:
    def svdvals(m: Any) -> Any:
        return m.linalg.svdvals(m.tensor([[float("nan")]]))

    with pytest.raises(torch.linalg.LinAlgError):
        svdvals(torch)
    with tw.device("numpy"), pytest.raises(tw.linalg.LinAlgError):
        svdvals(tw)


def _nan_to_num_half(m: Any) -> list:
    return m.tensor([float("nan")], dtype=m.float16).nan_to_num(nan=1e6).tolist()


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="core/tensorweaver/ops/elementwise.py nan_to_num: the posinf step runs on the "
    "result of the NaN step, so a NaN replacement that overflows the dtype (1e6 is inf in "
    "float16) is replaced again by the dtype's max (65504); torch gives inf. Fix: take all "
    "three masks from `input` (isnan(input), input == inf, input == -inf), not from `out`.",
)
def test_nan_to_num_replacement_that_overflows_stays_inf() -> None:
    with tw.device("numpy"):
        assert _nan_to_num_half(tw) == _nan_to_num_half(torch)


def _unique_zero(m: Any) -> list:
    return [str(v) for v in m.tensor([0.0, -0.0, 1.0]).unique().tolist()]


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="core/tensorweaver/ops/order_stats.py _unique keeps the last element of each run "
    "of equal sorted values (masked_select(values, ends)); torch keeps the first in input "
    "order, so unique([0.0, -0.0, 1.0]) is [0.0, 1.0] in torch and [-0.0, 1.0] here (all "
    "backends, cuPyNumeric too). Fix: select each run's first element (its start mask).",
)
def test_unique_keeps_the_first_of_equal_signed_zeros() -> None:
    with tw.device("numpy"):
        assert _unique_zero(tw) == _unique_zero(torch)


def _searchsorted_nan(m: Any) -> list:
    return m.searchsorted(m.tensor([1.0, 2.0, float("nan")]), m.tensor([float("nan")])).tolist()


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="core/tensorweaver/ops/order_stats.py searchsorted: a NaN key is put before the "
    "sequence's NaNs (stable sort of keys then sequence, NaNs equal), index 2 in "
    "[1, 2, nan]; torch's binary search compares `mid >= key`, false for NaN, so a NaN key "
    "always lands at the end (3). Fix: where(isnan(key), n, index) for both sides.",
)
def test_searchsorted_nan_key_lands_after_the_sequence() -> None:
    with tw.device("numpy"):
        assert _searchsorted_nan(tw) == _searchsorted_nan(torch)


INT64_FILLS = {
    "full": lambda m: m.full((1,), 2**63),
    "clamp_max": lambda m: m.tensor([1]).clamp(max=2**63),
    "fill_": lambda m: m.tensor([1]).fill_(2**63),
    "masked_fill": lambda m: m.tensor([1]).masked_fill(m.tensor([True]), 2**63),
    "add_alpha": lambda m: m.tensor([1]).add(1, alpha=2**63),
}


@pytest.mark.xfail(
    strict=True,
    raises=OverflowError,
    reason="core/tensorweaver/ops/overflow.py fill_value raises OverflowError for an int in "
    "[2**63, 2**64) given to an integer dtype; torch raises RuntimeError ('value cannot be "
    "converted to type int64_t without overflow'; OverflowError only from 2**64 and below "
    "-2**63). Fix: raise RuntimeError there when the value is below 2**64.",
)
@pytest.mark.parametrize("fill", INT64_FILLS.values(), ids=INT64_FILLS.keys())
def test_int64_fill_of_two_to_the_63_raises_runtime_error(fill: Callable[[Any], Any]) -> None:
    with pytest.raises(RuntimeError):
        fill(torch)
    with tw.device("numpy"), pytest.raises(RuntimeError):
        fill(tw)


def _complex_pow(m: Any, number: bool) -> str:
    base = m.tensor([0j, complex(float("nan"), 0), 0j, 1 + 1j])
    if number:
        return str([(base**2).tolist(), (base ** (2 + 0j)).tolist()])
    return str((base ** m.tensor([0j, 0j, -1 + 0j, 2 + 0j])).tolist())


_POW_CAUSE = (
    "core/tensorweaver/ops/elementwise.py pow hands a complex number exponent and a complex "
    "exponent tensor to the same backend.pow, but torch 2.13 computes them differently: a "
    "tensor exponent as C's cpow, exp(b * log(a)) (0 ** 0 and nan ** 0 are NaN, 0 ** -1 is "
    "inf + NaN j, (1+1j) ** (2+0j) is -8.7e-08+2j in complex64), a number exponent exactly "
    "((1+1j) ** 2 is 2j). NumPy's power is the second, torch's tensor pow the first, so each "
    "backend is wrong for one of them. Fix: in pow, for a complex dtype with a tensor "
    "exponent, compute exp(exponent * log(input)) rather than backend.pow (NumPy), and for "
    "a number exponent keep backend.pow on NumPy but x * x etc. for 2, 3, -1, -2 on torch."
)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=_POW_CAUSE)
def test_complex_pow_with_an_exponent_tensor_is_cpow_like_torch() -> None:
    with tw.device("numpy"):
        assert _complex_pow(tw, number=False) == _complex_pow(torch, number=False)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=_POW_CAUSE)
def test_complex_pow_with_a_number_is_exact_on_torch_cpu_like_torch() -> None:
    with entered("torch:cpu"):
        assert _complex_pow(tw, number=True) == _complex_pow(torch, number=True)


def test_complex_pow_with_a_number_is_exact_on_numpy_like_torch() -> None:
    with tw.device("numpy"):
        assert _complex_pow(tw, number=True) == _complex_pow(torch, number=True)
