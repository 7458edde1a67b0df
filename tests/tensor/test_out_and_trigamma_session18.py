"""``out=`` of argsort, nonzero_static, split_copy and view_as_complex_copy (a TypeError
before session 18), and polygamma(1, x) on a backend without a polygamma kernel computed
by torch's formula (inf at the poles x = -1, -2, ...; torch's is huge but finite), each
compared with torch 2.13."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

X = [[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]]


def _outcome(m: Any, call: Callable[[Any], Any]) -> Any:
    """What ``call(m)`` gives: its values (every tensor's dtype, shape and values, out's
    too) or the class of its error."""
    try:
        result = call(m)
    except Exception as error:  # noqa: BLE001 (the class is what is compared)
        return type(error).__name__
    tensors = result if isinstance(result, (list, tuple)) else [result]
    return [
        None if t is None else (str(t.dtype).split(".")[-1], tuple(t.shape), t.tolist())
        for t in tensors
    ]


def _written(call: Callable[[Any, Any], Any], make_out: Callable[[Any], Any]) -> Callable:
    """``call(m, out)`` with a fresh ``out``; gives (its result is out or None, out)."""

    def run(m: Any) -> Any:
        out = make_out(m)
        result = call(m, out)
        same = result is None or result is out
        return [m.tensor(same), *(out if isinstance(out, list) else [out])]

    return run


CASES: dict[str, Callable[[Any], Any]] = {
    "argsort_stable": _written(
        lambda m, o: m.argsort(m.tensor(X), stable=True, dim=0, descending=True, out=o),
        lambda m: m.empty(0, dtype=m.int64),
    ),
    "argsort_without_stable": lambda m: m.argsort(m.tensor(X), out=m.empty(0, dtype=m.int64)),
    "argsort_int32_out": lambda m: m.argsort(
        m.tensor(X), stable=False, out=m.empty(0, dtype=m.int32)
    ),
    "nonzero_static": _written(
        lambda m, o: m.nonzero_static(m.tensor(X), size=7, fill_value=-2, out=o),
        lambda m: m.empty(0, dtype=m.int64),
    ),
    "nonzero_static_float_out": lambda m: m.nonzero_static(m.tensor(X), size=4, out=m.empty(0)),
    "split_copy": _written(
        lambda m, o: m.split_copy(m.tensor(X), 2, dim=1, out=o),
        lambda m: [m.empty(2, 2, dtype=m.float64), m.empty(3, 2, 1, dtype=m.int64)],
    ),
    "split_copy_empty_outs": lambda m: m.split_copy(
        m.tensor(X), 2, dim=1, out=[m.empty(0), m.empty(0)]
    ),
    "split_copy_one_out": lambda m: m.split_copy(m.tensor(X), 2, dim=1, out=[m.empty(2, 2)]),
    "split_copy_tensor_out": lambda m: m.split_copy(m.tensor(X), 2, dim=1, out=m.empty(2, 2)),
    "split_copy_out_requires_grad": _written(
        lambda m, o: m.split_copy(m.tensor(X), 2, dim=1, out=o),
        lambda m: [m.zeros(2, 2, requires_grad=True), m.empty(2, 1)],
    ),
    "view_as_complex_copy": _written(
        lambda m, o: m.view_as_complex_copy(m.tensor([1.0, 2.0]), out=o),
        lambda m: m.empty(0, dtype=m.complex64),
    ),
    "view_as_complex_copy_wider_out": lambda m: m.view_as_complex_copy(
        m.tensor([1.0, 2.0]), out=m.empty(0, dtype=m.complex128)
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_out_as_torch(backend: str, case: str) -> None:
    want = _outcome(torch, CASES[case])
    assert _outcome(tw, CASES[case]) == want


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_trigamma_as_torch(backend: str, dtype: str) -> None:
    """Every pole and integer from -10 to 10, random values over (-20, 20) and large ones:
    float64 is bit for bit torch's (it was 4,070 of 4,136 off, by ~1e-10 relative: the
    Hurwitz zeta is more exact than torch's series, and inf at the poles). In float32 a
    negative x's reflection term amplifies the last bit of sin(pi x): a few (25 of 4,136)
    differ by 1-3 ulps, as sinf's rounding and NumPy's differ."""
    rng = np.random.default_rng(0)
    values = np.concatenate(
        [np.arange(-10, 11.0), rng.uniform(-20, 20, 2000), rng.uniform(0, 1e6, 50)]
    )
    values = np.concatenate([values, [np.inf, -np.inf, np.nan, 1e-30, -1e-30, 0.5]])
    want = torch.polygamma(1, torch.tensor(values, dtype=getattr(torch, dtype))).numpy()
    got = np.asarray(tw.polygamma(1, tw.tensor(values, dtype=getattr(tw, dtype))))
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    if dtype == "float64":
        assert same.all()
    else:
        assert same[values >= 0].all()
        np.testing.assert_allclose(got, want, rtol=4e-7)
