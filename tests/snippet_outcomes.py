"""What a small program gives under torch and under tensorweaver, in a form the two can be
compared in: the review and corner-case tests run one program ``fn(m)`` with ``m`` = torch
and ``m`` = tensorweaver and compare what each gives (:func:`same`, :func:`same_each`).

Values are rounded before they are compared (``decimals``; ``single`` for float32/complex64
and lower precisions where a test allows their summation order to differ from torch's in the
last digits; ``None`` compares exact values)."""

from __future__ import annotations

import warnings
from typing import Any, Callable, Optional

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

#: A float32 ``add``/``sub`` with alpha on NumPy or cuPyNumeric, compared with torch's exactly.
FLOAT32_ALPHA_ROUNDED_TWICE = pytest.mark.xfail(
    strict=True,
    reason="NumPy and cuPyNumeric compute a float32 a + alpha * b as hand-written NumPy does "
    "(alpha * b rounded, then the sum: an ulp off torch's fused multiply-add in ~1 element of "
    "10), by choice: rounding once through float64 cost 2.5-9x per add (session 31: 46 -> "
    "412 us at 60,000 elements; a 128-parameter Adam step with weight decay 28 -> 37-40 ms). "
    "Fix: an exact float32 fused add as cheap as NumPy's two ufuncs (a compiled kernel)",
)

Program = Callable[[Any], Any]


def outcome(fn: Program, m: Any, decimals: Optional[int] = 5, single: Optional[int] = None) -> Any:
    """What ``fn(m)`` gives, as :func:`plain` shows it; an exception as its class name.
    Warnings are silenced: what a program warns is not what these comparisons are about."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return plain(fn(m), m, decimals, single)
    except Exception as e:  # noqa: BLE001  (the class is the answer)
        return type(e).__name__


def plain(r: Any, m: Any, decimals: Optional[int] = 5, single: Optional[int] = None) -> Any:
    """``r`` comparable across torch and tw: a tensor (a sparse one as its dense values) as its
    dtype, shape and values (rounded to ``decimals``, or ``single`` in single precision when
    given; NaN as a string, zeros unsigned), a dtype as its name, containers item by item,
    plain Python values as themselves, any other object as its class name."""
    if isinstance(r, (tuple, list)):  # (torch.Size and tw.Size too)
        return tuple(plain(x, m, decimals, single) for x in r)
    if isinstance(r, dict):
        return {k: plain(v, m, decimals, single) for k, v in r.items()}
    if isinstance(r, m.dtype):
        return str(r).split(".")[-1]
    if r is None or isinstance(r, (bool, int, float, complex, str)):
        return r
    if not isinstance(r, m.Tensor):
        return type(r).__name__
    t = r.detach()
    if t.is_sparse:
        t = t.to_dense()
    values = np.asarray(t.resolve_conj().resolve_neg().tolist(), dtype=complex).ravel()
    if single is not None and r.dtype not in (m.float64, m.complex128):
        decimals = single
    if decimals is not None:
        values = np.round(values, decimals)
    # (+ 0 makes -0.0 and 0.0 one value: the sign of a zero is no finding here)
    shown = ["nan" if v != v else repr(complex(v) + 0) for v in values]
    return str(r.dtype).split(".")[-1], tuple(r.shape), shown


def same(fn: Program, spec: str, decimals: Optional[int] = 5, single: Optional[int] = None) -> None:
    """Assert that ``fn`` gives on the tw device ``spec`` what it gives under torch."""
    same_each({"program": fn}, spec, decimals, single)


#: torch's outcome per program and rounding (kept with the program: a freed one's id may be
#: another's), computed once however many backends compare with it.
_TORCH: dict[tuple, tuple[Program, Any]] = {}


def _torch_outcome(fn: Program, decimals: Optional[int], single: Optional[int]) -> Any:
    key = (id(fn), decimals, single)
    kept = _TORCH.get(key)
    if kept is None or kept[0] is not fn:
        kept = _TORCH[key] = (fn, outcome(fn, torch, decimals, single))
    return kept[1]


def same_each(
    programs: dict[str, Program],
    spec: str,
    decimals: Optional[int] = 5,
    single: Optional[int] = None,
) -> None:
    """Each program gives on tw (on ``spec``) what it gives under torch; compared as one
    dict of the programs that differ, so that a difference names its program."""
    want = {name: _torch_outcome(fn, decimals, single) for name, fn in programs.items()}
    with entered(spec):
        got = {name: outcome(fn, tw, decimals, single) for name, fn in programs.items()}
    assert {k: v for k, v in got.items() if v != want[k]} == {
        k: v for k, v in want.items() if v != got[k]
    }


def inference(m: Any, n: int = 3) -> Any:
    """``arange(1.0, n + 1.0)`` made in inference mode."""
    with m.inference_mode():
        return m.arange(1.0, n + 1.0)


def walk(fn: Any, depth: int = 3) -> Any:
    """A grad_fn's class name and its ``next_functions`` with their input positions, ``depth``
    levels down (a graph's shape as torch's and ours can be compared)."""
    if fn is None:
        return None
    if depth == 0:
        return type(fn).__name__
    return type(fn).__name__, tuple((walk(f, depth - 1), i) for f, i in fn.next_functions)


def grad_fn_name(t: Any) -> Optional[str]:
    """The class name of ``t``'s grad_fn; None for a tensor without one."""
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def with_layout(t: Any) -> tuple:
    """``t`` with its strides and whether it is contiguous (a result's layout as torch's and
    ours can be compared, besides its values)."""
    return t, t.stride(), t.is_contiguous()


def grid(m: Any, *shape: int, dtype: Any = None) -> Any:
    """1, 2, 3, ... of ``shape`` (float64 unless ``dtype``)."""
    n = float(np.prod(shape))
    return m.arange(1.0, n + 1.0, dtype=dtype or m.float64).reshape(shape)


def leaf(m: Any, *shape: int) -> Any:
    """:func:`grid` as a leaf that requires grad."""
    return grid(m, *shape).requires_grad_()


def exp_saving_its_output(m: Any) -> Any:
    """An ``m.autograd.Function`` computing exp that saves its output for backward (a
    result its node keeps, as PyTorch's ExpBackward0 does)."""

    class Exp(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            out = x.exp()
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (out,) = ctx.saved_tensors
            return g * out

    return Exp


def result_doubled_through_data(op: Callable) -> Program:
    """A program: ``op(m, a)`` of a 2x2 float64 leaf ``a``, its result doubled through
    ``.data`` before backward; returns ``a.grad`` (torch's node reads its saved result)."""

    def program(m: Any) -> Any:
        a = m.tensor([[2.0, 0.5], [0.3, 1.5]], dtype=m.float64, requires_grad=True)
        y = op(m, a)
        y.data.mul_(2)
        (y * y).sum().backward()
        return a.grad

    return program


def refused_in_place(backward: Callable[[], Any]) -> Optional[str]:
    """``"modified in place"`` where ``backward()`` raises torch's error for a saved tensor
    changed in place (tw words it "in-place"), else None; other errors propagate."""
    try:
        backward()
    except RuntimeError as e:
        if "inplace" in str(e).replace("in-place", "inplace"):
            return "modified in place"
        raise
    return None
