"""The SGD update's short paths (``p.grad.zero_()`` without full_like's argument handling,
``p.data.add_(g, alpha=)`` on a large parameter written straight into its memory) give
what torch gives: values, versions, aliases, views, layouts, histories and refusals."""

from __future__ import annotations

import pytest
from snippet_outcomes import grad_fn_name, grid, leaf, refused_in_place, same_each

LARGE = (300, 256)  # at least in_place_writes.SMALLEST elements: written in place


def _zero_leaf_grad(m):
    p = leaf(m, 3, 4)
    (p * p).sum().backward()
    g = p.grad
    alias, row = g.detach(), g[1]
    before = g._version
    g.zero_()
    # (versions as changes: torch's gradient from backward starts at 1, an autograd
    # kernel's internal write, which is no part of this path)
    return g, alias, row, [t._version - before for t in (g, alias, row)]


def _zero_data_alias(m):
    x = grid(m, 2, 3)
    d = x.data
    d.zero_()
    return x, x._version, d._version


def _zero_view_and_transposed(m):
    x = grid(m, 3, 4)
    x[1].zero_()
    t = grid(m, 3, 4).t()
    t.zero_()
    return x, x._version, t, t.stride(), t.is_contiguous()


def _zero_history_under_no_grad(m):
    w = leaf(m, 3)
    y = w * 2
    with m.no_grad():
        y.zero_()
    y.sum().backward()
    return y, w.grad, grad_fn_name(y)


def _zero_history_recorded(m):
    w = leaf(m, 3)
    y, z = w * 2, w.exp()
    y.zero_()
    (y + w).sum().backward()
    z.zero_()  # (exp saved its output: backward through it is refused)
    return y, w.grad, grad_fn_name(y), refused_in_place(lambda: z.sum().backward())


def _zero_saved_tensor(m):
    w = leaf(m, 3)
    x = grid(m, 3)
    y = w * x
    with m.no_grad():
        x.zero_()
    return refused_in_place(lambda: y.sum().backward())


def _zero_leaf_refused(m):
    return leaf(m, 3).zero_()


def _zero_dtypes(m):
    out = []
    for dtype in (m.bool, m.int8, m.int64, m.float16, m.float32, m.complex64):
        x = m.ones(2, 3, dtype=dtype)
        out.append(x.zero_())
    return out


def _zero_inference_outside(m):
    with m.inference_mode():
        x = m.ones(3)
    return x.zero_()


def _data_add_large(m):
    p = m.nn.Parameter(grid(m, *LARGE) / 1000)
    p.grad = grid(m, *LARGE) / 7
    alias = p.detach()
    v_p, v_alias = p._version, alias._version
    p.data.add_(p.grad, alpha=-0.5)
    return p.sum(), alias.sum(), p._version - v_p, alias._version - v_alias


def _data_add_large_with_view(m):
    p = m.nn.Parameter(grid(m, *LARGE) / 1000)
    row = p[2]
    p.data.add_(grid(m, *LARGE), alpha=2.0)
    return row.sum(), p._version, row._version


def _no_grad_add_large_saved(m):
    p = m.nn.Parameter(grid(m, *LARGE) / 1000)
    y = (p * p).sum()
    with m.no_grad():
        p.add_(grid(m, *LARGE), alpha=-0.1)
    return p.sum(), p._version, refused_in_place(lambda: y.backward())


def _no_grad_add_large_overlap(m):
    x = grid(m, *LARGE)
    with m.no_grad():
        return x.add_(x.data, alpha=2.0).sum(), x._version


PROGRAMS = {
    f.__name__: f
    for f in (
        _zero_leaf_grad,
        _zero_data_alias,
        _zero_view_and_transposed,
        _zero_history_under_no_grad,
        _zero_history_recorded,
        _zero_saved_tensor,
        _zero_leaf_refused,
        _zero_dtypes,
        _zero_inference_outside,
        _data_add_large,
        _data_add_large_with_view,
        _no_grad_add_large_saved,
        _no_grad_add_large_overlap,
    )
}


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_sgd_update_paths_as_torch(spec: str) -> None:
    same_each(PROGRAMS, spec, single=4)
