"""``tw.inference_mode`` and the decorator forms of ``no_grad``/``enable_grad``, against
PyTorch's grad-mode and inference-mode flags."""

from __future__ import annotations

from typing import Any

import tensorweaver as tw
import torch


def _flags(m: Any) -> tuple:
    return m.is_grad_enabled(), m.is_inference_mode_enabled()


def _nesting(m: Any) -> list:
    seen = [_flags(m)]
    with m.inference_mode():
        seen.append(_flags(m))
        with m.inference_mode(False):  # leaves inference mode, gradients back on
            seen.append(_flags(m))
        with m.inference_mode(mode=True):
            seen.append(_flags(m))
        seen.append(_flags(m))
    with m.no_grad(), m.inference_mode(mode=False):
        seen.append(_flags(m))
    seen.append(_flags(m))
    return seen


def test_nesting_like_torch() -> None:
    assert _nesting(tw) == _nesting(torch)


def _decorated(m: Any) -> list:
    def probe() -> tuple:
        return _flags(m)

    forms = [
        m.inference_mode()(probe),
        m.inference_mode(probe),
        m.inference_mode(False)(probe),
        m.no_grad()(probe),
        m.no_grad(probe),
        m.enable_grad(probe),
    ]
    seen = [f() for f in forms]
    with m.no_grad():
        seen += [f() for f in forms]
    return seen + [_flags(m)]


def test_decorators_like_torch() -> None:
    assert _decorated(tw) == _decorated(torch)


def _results(m: Any) -> list:
    w = m.ones(3, dtype=m.float64, requires_grad=True)
    with m.inference_mode():
        y = (w * 2).sum()
        z = m.zeros(2)
    return [y.requires_grad, z.requires_grad, y.item(), w.requires_grad]


def test_tensors_made_inside_need_no_grad(backend: str) -> None:
    assert _results(tw) == _results(torch)


def test_inference_mode_survives_an_exception() -> None:
    try:
        with tw.inference_mode():
            raise KeyError("boom")
    except KeyError:
        pass
    assert _flags(tw) == (True, False)
