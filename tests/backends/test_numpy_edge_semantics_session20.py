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


def test_host_fallback_determinant_of_nan_warns_nothing() -> None:
    from tensorweaver.linalg import host
    from tensorweaver.ops.host_fallback import run_optional

    nan = np.array([[np.nan, 0.0], [0.0, 1.0]], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        det = run_optional(_NoDeterminantKernel(), "linalg_det", host.det, d.float32, nan)
    assert str(float(det)) == str(torch.linalg.det(torch.from_numpy(nan)).item())


def test_svd_of_nan_raises_linalg_error_like_torch() -> None:
    def svdvals(m: Any) -> Any:
        return m.linalg.svdvals(m.tensor([[float("nan")]]))

    with pytest.raises(torch.linalg.LinAlgError):
        svdvals(torch)
    with tw.device("numpy"), pytest.raises(tw.linalg.LinAlgError):
        svdvals(tw)


def _nan_to_num_half(m: Any) -> list:
    return m.tensor([float("nan")], dtype=m.float16).nan_to_num(nan=1e6).tolist()


def test_nan_to_num_replacement_that_overflows_stays_inf() -> None:
    with tw.device("numpy"):
        assert _nan_to_num_half(tw) == _nan_to_num_half(torch)


def _unique_zero(m: Any) -> list:
    return [str(v) for v in m.tensor([0.0, -0.0, 1.0]).unique().tolist()]


def test_unique_keeps_the_first_of_equal_signed_zeros() -> None:
    with tw.device("numpy"):
        assert _unique_zero(tw) == _unique_zero(torch)


def _searchsorted_nan(m: Any) -> list:
    return m.searchsorted(m.tensor([1.0, 2.0, float("nan")]), m.tensor([float("nan")])).tolist()


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


def test_complex_pow_with_an_exponent_tensor_is_cpow_like_torch() -> None:
    with tw.device("numpy"):
        assert _complex_pow(tw, number=False) == _complex_pow(torch, number=False)


def test_complex_pow_with_a_number_is_exact_on_torch_cpu_like_torch() -> None:
    with entered("torch:cpu"):
        assert _complex_pow(tw, number=True) == _complex_pow(torch, number=True)


def test_complex_pow_with_a_number_is_exact_on_numpy_like_torch() -> None:
    with tw.device("numpy"):
        assert _complex_pow(tw, number=True) == _complex_pow(torch, number=True)
