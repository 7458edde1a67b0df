"""Corners mended beside the session-24 review's recorded defects (cummax/cummin/frexp
saving their integer output, NumPy's spellings given beside an explicit default, fills
through an ``expand()`` view): each compared with torch 2.13 on the same program."""

from __future__ import annotations

from typing import Any

import pytest
from snippet_outcomes import grad_fn_name as _name
from snippet_outcomes import same_each

pytestmark = pytest.mark.filterwarnings("ignore:Use of (masked|index)_fill_ on expanded")


def _leaf(m: Any, *shape: int, dtype: str = "float64") -> Any:
    n = 1
    for s in shape:
        n *= s
    x = (m.arange(n, dtype=getattr(m, dtype)) * 0.75 - 1.0).reshape(shape)
    return x.requires_grad_()


def _running_of_no_axis(m: Any, op: str, shape: tuple) -> Any:
    """cummax/cummin of a 0-d or empty tensor: their node's name, and backward after the
    indices changed in place (PyTorch's node saves them: an error)."""
    x = _leaf(m, *shape)
    values, indices = getattr(x, op)(0)
    name = _name(values)
    indices.zero_()
    try:
        values.sum().backward()
    except RuntimeError as e:
        return name, type(e).__name__
    return name, x.grad


def _frexp(m: Any, dtype: str) -> Any:
    x = _leaf(m, 2, 3, dtype=dtype)
    mantissa, exponent = x.frexp()
    (mantissa * m.arange(6.0, dtype=mantissa.dtype).reshape(2, 3)).sum().backward()
    return _name(mantissa), mantissa, exponent, x.grad


def test_running_extremes_and_frexp_names_and_saved_indices(spec: str) -> None:
    cases = {
        f"{op}_{len(shape)}d": lambda m, op=op, shape=shape: _running_of_no_axis(m, op, shape)
        for op in ("cummax", "cummin")
        for shape in ((), (0,))
    }
    cases.update({f"frexp_{d}": lambda m, d=d: _frexp(m, d) for d in ("float64", "float32")})
    same_each(cases, spec, single=4)


#: A NumPy spelling beside its torch name given as its default value: PyTorch's TypeError.
TWICE = {
    "nanmean_axis": lambda m: _leaf(m, 2, 3).nanmean(dim=None, axis=1),
    "nansum_keepdims": lambda m: _leaf(m, 2, 3).nansum(1, keepdim=False, keepdims=True),
    "var_mean_axis": lambda m: m.var_mean(_leaf(m, 2, 3), dim=None, axis=1),
    "std_mean_keepdims": lambda m: m.std_mean(_leaf(m, 2, 3), 1, keepdim=False, keepdims=True),
    "aminmax_axis": lambda m: _leaf(m, 2, 3).aminmax(dim=None, axis=1),
    "aminmax_keepdims": lambda m: _leaf(m, 2, 3).aminmax(dim=1, keepdim=False, keepdims=True),
    # the defaults themselves, and the NumPy names alone, still work
    "defaults": lambda m: (
        _leaf(m, 2, 3).nansum(),
        _leaf(m, 2, 3).nanmean(None, True),
        m.var_mean(_leaf(m, 2, 3), True),
        m.std_mean(_leaf(m, 2, 3), axis=1, keepdims=True),
        _leaf(m, 2, 3).aminmax(axis=0),
        m.nansum(_leaf(m, 2, 3), axis=0, keepdims=True),
    ),
}


def test_numpy_spelling_beside_an_explicit_default(spec: str) -> None:
    same_each(TWICE, spec)


def _fill_through_expand(m: Any, dtype: str, fill: str) -> Any:
    """A fill of a float64 value requiring grad through an expand() view of a ``dtype`` base
    that does not: the value's gradient sums each filled copy's location's gradient."""
    t = m.zeros(3, dtype=getattr(m, dtype)).expand(2, 3)
    v = m.tensor(3.0, dtype=m.float64, requires_grad=True)
    if fill == "masked_fill_":
        t.masked_fill_(m.tensor([[True, False, False], [True, False, True]]), v)
    else:
        t.index_fill_(1, m.tensor([0, 2]), v)
    (t * (m.arange(6, dtype=t.dtype) + 1).reshape(2, 3)).sum().backward()
    return t, v.grad


def test_fill_of_another_dtype_through_expand(spec: str) -> None:
    cases = {
        f"{fill}_{d}": lambda m, d=d, fill=fill: _fill_through_expand(m, d, fill)
        for fill in ("masked_fill_", "index_fill_")
        for d in ("float32", "float64")
    }
    same_each(cases, spec, single=4)


def _grad_of_the_value_alone(m: Any) -> Any:
    """A base in the graph filled through its expand() view: the value's gradient alone is
    computed (torch's CopySlices refuses only the base's gradient)."""
    w = m.tensor([0.5, -1.0, 2.0], dtype=m.float64, requires_grad=True)
    t = (w * 1).expand(2, 3)
    v = m.tensor(3.0, dtype=m.float64, requires_grad=True)
    t.masked_fill_(m.tensor([[True, False, False], [False, False, True]]), v)
    loss = (t * (m.arange(6, dtype=m.float64) + 1).reshape(2, 3)).sum()
    return m.autograd.grad(loss, [v], retain_graph=True), _raised(lambda: loss.backward())


def _raised(fn: Any) -> Any:
    try:
        fn()
    except RuntimeError as e:
        return type(e).__name__
    return None


def test_fill_through_expand_of_a_base_in_the_graph_grad_of_value(spec: str) -> None:
    same_each({"grad_v": _grad_of_the_value_alone}, spec)
