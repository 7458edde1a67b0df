"""The optional ``aminmax`` primitive (API 2.9) and the core's range checks that read it:
values against NumPy in every dtype and the backend's own layouts, NaN, and the same errors
as PyTorch for out-of-range indices and class targets with and without the primitive."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch
from primitive_checks import ALL, FLOATS, NO_FP_WARNINGS, check, host, nan, put
from tensorweaver.contract import dtypes as d
from tensorweaver.ops import bounds

pytestmark = NO_FP_WARNINGS


def _sample(dtype: d.DType) -> np.ndarray:
    rng = np.random.default_rng(21)
    if dtype is d.bool_:
        return rng.integers(0, 2, (2, 3, 4)).astype(bool)
    if dtype in FLOATS:
        return host(rng.uniform(-3, 3, (2, 3, 4)), dtype)
    return host(rng.integers(0 if dtype is d.uint8 else -9, 9, (2, 3, 4)), dtype)


def _extremes(a: np.ndarray) -> np.ndarray:
    return np.array((a.min(), a.max()))


@pytest.mark.parametrize("dtype", ALL, ids=lambda t: t.name)
def test_aminmax_matches_numpy_in_every_layout(backend, dtype):
    a = _sample(dtype)
    x = put(backend, a, dtype)
    check(backend, backend.aminmax(x), _extremes(a), dtype, what="standard")
    moved = backend.permute(x, (2, 0, 1))
    check(backend, backend.aminmax(moved), _extremes(a), dtype, what="permuted")
    stepped = backend.slice(x, (0, 1, 1), (2, 3, 4), (1, 1, 2))
    check(backend, backend.aminmax(stepped), _extremes(a[:, 1:, 1::2]), dtype, what="stepped")
    row = backend.slice(x, (1, 2, 0), (2, 3, 4), (1, 1, 1))
    wide = backend.expand(row, (5, 3, 4))
    check(backend, backend.aminmax(wide), _extremes(a[1, 2]), dtype, what="expanded")
    scalar = put(backend, a[1, 2, 3], dtype)
    check(backend, backend.aminmax(scalar), _extremes(a[1, 2, 3]), dtype, what="0-d")


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda t: t.name)
def test_aminmax_propagates_nan(backend, dtype):
    a = host([[1.0, -2.0, nan], [float("inf"), 0.5, -1.0]], dtype)
    check(backend, backend.aminmax(put(backend, a, dtype)), [nan, nan], dtype)
    b = host([-float("inf"), 2.0, float("inf")], dtype)
    check(backend, backend.aminmax(put(backend, b, dtype)), [-np.inf, np.inf], dtype)


class _Counting:
    """A backend object whose primitive calls are counted by name."""

    def __init__(self, real: object) -> None:
        self.real = real
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> object:
        attr = getattr(self.real, name)
        if not callable(attr):
            return attr

        def call(*args: object, **kwargs: object) -> object:
            self.calls.append(name)
            return attr(*args, **kwargs)

        return call


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_range_check_is_one_reduction_and_one_read(device):
    # Before API 2.9 the check reduced with min, then max, then concatenated (and reshaped
    # indices of more than one axis): four backend calls before the read.
    t = tw.tensor([[4, 0, 7], [2, 9, 1]], device=device)
    counting = _Counting(t.backend)
    t.backend = counting
    assert bounds.extrema(t) == (0, 9)
    # (API 2.10: a backend with host_aminmax reads both numbers in that one call)
    one_call = getattr(t.backend.real, "host_aminmax", None) is not None
    assert counting.calls == (["host_aminmax"] if one_call else ["aminmax", "to_host"])


@pytest.mark.parametrize("device", ["numpy", "torch:cpu", "cunumeric"])
@pytest.mark.parametrize("native", [True, False], ids=["aminmax", "fallback"])
def test_range_errors_like_torch(device, native, monkeypatch):
    if device == "cunumeric":
        pytest.importorskip("tensorweaver_cunumeric")
    backend = tw.tensor([0], device=device).backend
    if not native:
        monkeypatch.setattr(backend, "aminmax", None, raising=False)
    weight = np.random.default_rng(0).standard_normal((5, 3))
    logits = np.random.default_rng(1).standard_normal((4, 5))
    cases = [
        (lambda m, w, i: F.embedding(i, w) if m is tw else torch.nn.functional.embedding(i, w)),
        (lambda m, x, t: (F if m is tw else torch.nn.functional).nll_loss(x, t)),
        (lambda m, x, t: (F if m is tw else torch.nn.functional).cross_entropy(x, t)),
    ]
    for fn, arg, bad, word in [
        (cases[0], weight, [[0, 5]], "5"),
        (cases[0], weight, [[-1, 2]], "-1"),
        (cases[1], logits, [0, 1, 5, 2], "5"),
        (cases[1], logits, [0, -3, 1, 2], "-3"),
        (cases[2], logits, [0, 1, 7, 2], "7"),
    ]:
        with pytest.raises(Exception) as theirs:
            fn(torch, torch.tensor(arg), torch.tensor(bad))
        with pytest.raises(type(theirs.value), match=word):
            fn(tw, tw.tensor(arg, device=device), tw.tensor(bad, device=device))
    # in range, and -100 (ignored) beside in-range targets: same losses as torch
    target = [0, -100, 4, 2]
    want = torch.nn.functional.nll_loss(torch.tensor(logits), torch.tensor(target))
    got = F.nll_loss(tw.tensor(logits, device=device), tw.tensor(target, device=device))
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
