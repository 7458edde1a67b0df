"""The short paths of ``add_``/``sub_`` with ``alpha`` (tried before the operands' overlap
test, which now passes a ``detach()``/``.data`` alias of a tensor of its own at once) and of
``Tensor._assign`` for a bare array (an update or ``zero_``'s zeros into a tensor without
view, history or inference mode) keep what torch gives: values, refusals and versions."""

from __future__ import annotations

from typing import Any

import pytest
from snippet_outcomes import grid, inference, leaf, refused_in_place, same_each

LARGE = (300, 256)  # at least in_place_writes.SMALLEST elements: written in place


def _overlap_with_the_base(m: Any) -> Any:
    x, y = grid(m, 5), grid(m, 2, 2)
    x.data.add_(x, alpha=2)  # the very same elements: allowed
    y.detach().sub_(y, alpha=0.5)
    z = grid(m, 3)
    z.data.data.add_(z, alpha=3)  # (an alias of an alias: the full test)
    return x, y, z


def _overlap_partly_transposed(m: Any) -> Any:
    x = grid(m, 3, 3)
    x.detach().add_(x.t(), alpha=1)


def _overlap_partly_shifted(m: Any) -> Any:
    x = grid(m, 6)
    x[1:4].detach().add_(x[0:3], alpha=2)


def _overlap_alias_of_a_transposed_view(m: Any) -> Any:
    x = grid(m, 2, 2)
    x.t().detach().add_(x, alpha=1)  # (self an alias of a view, the operand its base)


def _overlap_base_transposed_in_place(m: Any) -> Any:
    p = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64)
    d = p.detach()
    p.t_()  # (p's strides change, its alias's do not: they overlap partly)
    d.add_(p, alpha=1)


def _overlap_base_resized_out(m: Any) -> Any:
    p = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64)
    d = p.data
    p.resize_(2, 1)
    m.mul(p, 2, out=d)


def _overlap_alias_of_a_view(m: Any) -> Any:
    x = grid(m, 4)
    d = x[:2].detach()
    d.add_(x[2:], alpha=1)  # other elements of one memory: allowed
    return x, d


def _overlap_operand_an_alias(m: Any) -> Any:
    x = grid(m, 4)
    x.data.add_(x.detach(), alpha=-1)  # two aliases of x: the same elements
    return x


def _broadcast_into_smaller_self(m: Any) -> Any:
    x = grid(m, 3)
    x.data.add_(grid(m, 2, 3), alpha=2)


def _broadcast_into_smaller_self_no_grad(m: Any) -> Any:
    p = leaf(m, 3)
    with m.no_grad():
        p.sub_(grid(m, 2, 3), alpha=2)


def _broadcast_operand(m: Any) -> Any:
    x = grid(m, 2, 3)
    x.data.add_(grid(m, 3), alpha=2)
    return x


def _float_into_int(m: Any) -> Any:
    x = m.arange(4)
    x.add_(grid(m, 4), alpha=2)


def _float_into_int_data(m: Any) -> Any:
    x = m.arange(4)
    x.data.sub_(grid(m, 4, dtype=m.float32), alpha=1)


def _float_alpha_int_tensors(m: Any) -> Any:
    x = m.arange(4)
    x.add_(m.arange(4), alpha=0.5)


def _double_into_float(m: Any) -> Any:
    x = grid(m, 4, dtype=m.float32)
    x.data.add_(grid(m, 4), alpha=0.25)  # (float64 operand: cast into float32)
    return x


def _half_alpha_overflow(m: Any) -> Any:
    x = grid(m, 3, dtype=m.float16)
    x.add_(grid(m, 3, dtype=m.float16), alpha=1e6)


def _leaf_refused(m: Any) -> Any:
    leaf(m, 3).add_(grid(m, 3), alpha=2)


def _operand_requiring_grad(m: Any) -> Any:
    x = grid(m, 3)
    x.add_(leaf(m, 3), alpha=2)  # (recorded: the general path, a history for x)
    return x, x.requires_grad


def _leaf_under_no_grad_and_data(m: Any) -> Any:
    p, q = leaf(m, 3), leaf(m, *LARGE)
    with m.no_grad():
        p.add_(grid(m, 3), alpha=2)
        q.sub_(grid(m, *LARGE), alpha=0.5)
    p.data.sub_(grid(m, 3), alpha=1)
    q.data.add_(grid(m, *LARGE), alpha=3)
    return p, p._version, p.is_leaf, q.sum(), q._version


def _saved_tensor_sees_the_bump(m: Any) -> Any:
    w, x = leaf(m, 3), grid(m, 3)
    y = w * x
    with m.no_grad():
        x.add_(grid(m, 3), alpha=2)
    return x._version, refused_in_place(lambda: y.sum().backward())


def _saved_large_tensor_sees_the_bump(m: Any) -> Any:
    w, x = leaf(m, *LARGE), grid(m, *LARGE)
    y = w * x
    x.sub_(grid(m, *LARGE), alpha=2)  # (x requires no grad: outside autograd)
    return x._version, refused_in_place(lambda: y.sum().backward())


def _data_write_unseen_by_saved(m: Any) -> Any:
    w, x = leaf(m, 3), grid(m, 3)
    y = w * x
    x.data.add_(grid(m, 3), alpha=2)  # (.data: no version seen; backward reads new values)
    y.sum().backward()
    return x._version, w.grad


def _history_under_no_grad(m: Any) -> Any:
    w = leaf(m, 3)
    y = w * 2
    with m.no_grad():
        y.add_(grid(m, 3), alpha=2)
    y.sum().backward()
    return y, w.grad, y._version


def _views_see_data_writes(m: Any) -> Any:
    p = m.nn.Parameter(grid(m, 2, 3))
    p.grad = grid(m, 2, 3) * 0.5
    row, col, e = p[1], p.t()[0], p.detach()
    d = p.data
    piece = d[0]
    for _ in range(2):
        p.data.add_(p.grad, alpha=-0.1)
    d.sub_(p.grad, alpha=1)
    return p, row, col, e, piece, p._version, row._version, d._version, e._version


def _views_see_large_data_writes(m: Any) -> Any:
    p = m.nn.Parameter(grid(m, *LARGE))
    p.grad = grid(m, *LARGE) * 0.5
    row, e = p[7], p.detach()
    p.data.add_(p.grad, alpha=-0.1)
    return row, e.sum(), p._version, row._version


def _zero_into_data_and_views(m: Any) -> Any:
    p = m.nn.Parameter(grid(m, 2, 3))
    row = p[0]
    p.data.zero_()
    g = grid(m, 4)
    piece = g[1:3]
    g.zero_()
    return p, row, p._version, g, piece, g._version, piece._version


def _inference_tensor_outside_the_mode(m: Any) -> Any:
    x = inference(m)
    x.add_(grid(m, 3), alpha=2)


def _inference_tensors_inside_the_mode(m: Any) -> Any:
    with m.inference_mode():
        x = m.arange(1.0, 4.0, dtype=m.float64)
        x.data.add_(grid(m, 3), alpha=2)
        x.sub_(grid(m, 3), alpha=1)
    return x


PROGRAMS = {
    "overlap_with_the_base": _overlap_with_the_base,
    "overlap_partly_transposed": _overlap_partly_transposed,
    "overlap_partly_shifted": _overlap_partly_shifted,
    "overlap_alias_of_a_transposed_view": _overlap_alias_of_a_transposed_view,
    "overlap_base_transposed_in_place": _overlap_base_transposed_in_place,
    "overlap_base_resized_out": _overlap_base_resized_out,
    "overlap_alias_of_a_view": _overlap_alias_of_a_view,
    "overlap_operand_an_alias": _overlap_operand_an_alias,
    "broadcast_into_smaller_self": _broadcast_into_smaller_self,
    "broadcast_into_smaller_self_no_grad": _broadcast_into_smaller_self_no_grad,
    "broadcast_operand": _broadcast_operand,
    "float_into_int": _float_into_int,
    "float_into_int_data": _float_into_int_data,
    "float_alpha_int_tensors": _float_alpha_int_tensors,
    "double_into_float": _double_into_float,
    "half_alpha_overflow": _half_alpha_overflow,
    "leaf_refused": _leaf_refused,
    "operand_requiring_grad": _operand_requiring_grad,
    "leaf_under_no_grad_and_data": _leaf_under_no_grad_and_data,
    "saved_tensor_sees_the_bump": _saved_tensor_sees_the_bump,
    "saved_large_tensor_sees_the_bump": _saved_large_tensor_sees_the_bump,
    "data_write_unseen_by_saved": _data_write_unseen_by_saved,
    "history_under_no_grad": _history_under_no_grad,
    "views_see_data_writes": _views_see_data_writes,
    "views_see_large_data_writes": _views_see_large_data_writes,
    "zero_into_data_and_views": _zero_into_data_and_views,
    "inference_tensor_outside_the_mode": _inference_tensor_outside_the_mode,
    "inference_tensors_inside_the_mode": _inference_tensors_inside_the_mode,
}


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_inplace_fast_paths_as_torch(spec: str) -> None:
    same_each(PROGRAMS, spec, single=4)
