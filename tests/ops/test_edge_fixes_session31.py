"""Session 31: float32 ``add``/``sub`` with alpha as torch's fused multiply-add (torch:cpu;
NumPy and cuPyNumeric round twice, by choice: strict xfails), ``view_as_real``'s node named
ViewAsRealBackward0, and ``select``/``unbind`` nodes that keep a negative dim as given; each
compared with real torch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from snippet_outcomes import FLOAT32_ALPHA_ROUNDED_TWICE, leaf, same, same_each, walk


def _float32(m: Any, rng: np.random.RandomState, n: int) -> Any:
    return m.tensor(rng.standard_normal(n).astype(np.float32))


def _with_alpha(m: Any) -> Any:
    rng = np.random.RandomState(311)
    x, y = _float32(m, rng, 300), _float32(m, rng, 300)
    z = x.clone()
    z.add_(y, alpha=0.37)
    w = x.clone()
    w.sub_(y, alpha=-1.3)
    return x.add(y, alpha=0.37), x.sub(y, alpha=2.9), z, w


@pytest.mark.parametrize(
    "device", ["torch:cpu", pytest.param("numpy", marks=FLOAT32_ALPHA_ROUNDED_TWICE)]
)
def test_float32_add_with_alpha_rounds_once(device: str) -> None:
    same(_with_alpha, device, decimals=None)


@FLOAT32_ALPHA_ROUNDED_TWICE
@pytest.mark.cunumeric
def test_float32_add_with_alpha_rounds_once_on_cunumeric() -> None:
    same(_with_alpha, "cunumeric", decimals=None)


def _with_alpha_gradients(m: Any) -> Any:
    rng = np.random.RandomState(312)
    x = _float32(m, rng, 40).requires_grad_()
    y = _float32(m, rng, 40).requires_grad_()
    out = x.sub(y, alpha=0.37)
    (out * out).sum().backward()
    return out, x.grad, y.grad, walk(out.grad_fn, 1)


@FLOAT32_ALPHA_ROUNDED_TWICE
@pytest.mark.cunumeric
def test_float32_add_with_alpha_gradients_on_cunumeric() -> None:
    same(_with_alpha_gradients, "cunumeric", decimals=None)


def _view_as_real(m: Any) -> Any:
    re, im = leaf(m, 3), leaf(m, 3)
    r = m.view_as_real(m.complex(re, im * 2))
    (r * r).sum().backward()
    window = m.hann_window(8, dtype=m.float64)
    parts = m.stft(leaf(m, 32), 8, window=window, return_complex=False)
    return r, re.grad, im.grad, walk(r.grad_fn, 2), parts.shape, walk(parts.grad_fn, 1)


def test_view_as_real_node_as_torchs(spec: str) -> None:
    # before: StackBackward0 (view_as_real's composite step), stft's too
    same(_view_as_real, spec)


def _negative_dims(m: Any) -> Any:
    x = leaf(m, 2, 3, 4)
    picked = x.select(-2, -1)
    pieces = x.unbind(-3)
    loss = (picked * picked).sum() + sum([(p * (k + 2)).sum() for k, p in enumerate(pieces)])
    (g,) = m.autograd.grad(loss, x, create_graph=True)
    (gg,) = m.autograd.grad((g * g).sum(), x)
    return (
        picked.grad_fn._saved_dim,
        picked.grad_fn._saved_index,
        pieces[1].grad_fn._saved_dim,
        x.select(2, -1).grad_fn._saved_dim,
        x.unbind(1)[0].grad_fn._saved_dim,
        g,
        gg,
    )


def test_negative_dims_saved_as_given(spec: str) -> None:
    # before: select(-2, i)'s and unbind(-3)'s nodes saved dims 1 and 0
    same_each({"negative dims": _negative_dims}, spec)
