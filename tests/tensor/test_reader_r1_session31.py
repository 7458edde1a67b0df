"""Reader r1's findings on the thirty-first session's select nodes and in-memory writes (all
older defects the session's changes expose; strict xfails, each names its cause and fix)."""

from __future__ import annotations

import pytest
from snippet_outcomes import same, walk

DEVICES = ["numpy", "torch:cpu"]


def _view_of_detached_base_written(m):
    w = m.ones(4, 3, dtype=m.float64, requires_grad=True)
    x = w * 1
    v = x[1]
    x.detach_()
    x.add_(1)
    v.sum().backward()
    return w.grad, v.requires_grad


@pytest.mark.parametrize("spec", DEVICES)
def test_view_of_detached_base_written_gets_no_gradient(spec: str) -> None:
    same(_view_of_detached_base_written, spec)


def _views_of_detached_base_written_without_grad(m):
    w = m.ones(4, 3, dtype=m.float64, requires_grad=True)
    x = w * 1
    v, t = x[1], x[1:3].t()
    x.detach_()
    with m.no_grad():
        x.add_(1)
    graphs = walk(v.grad_fn, 2), walk(t.grad_fn, 2)
    (v.sum() + t.sum()).backward()
    return graphs, w.grad, v.requires_grad, t.requires_grad, v.is_leaf


@pytest.mark.parametrize("spec", DEVICES)
def test_views_of_detached_base_written_without_grad(spec: str) -> None:
    same(_views_of_detached_base_written_without_grad, spec)


def _hook_on_view_then_view_written(m):
    w = m.ones(4, 3, dtype=m.float64, requires_grad=True)
    x = w * 1
    r = x[1]
    r.register_hook(lambda g: g * 10)
    r.mul_(2)
    x.sum().backward()
    return w.grad


def _hook_on_slice_view_then_written(m):
    w = m.ones(4, 3, dtype=m.float64, requires_grad=True)
    x = w * 1
    r = x[1:3]
    r.register_hook(lambda g: g * 10)
    r.mul_(2)
    r.sum().backward()
    return w.grad


@pytest.mark.parametrize("spec", DEVICES)
def test_hook_on_view_is_not_run_after_the_view_is_written(spec: str) -> None:
    same(_hook_on_view_then_view_written, spec)
    same(_hook_on_slice_view_then_written, spec)


def _hook_on_view_used_then_written(m):
    w = m.ones(4, 3, dtype=m.float64, requires_grad=True)
    x = w * 1
    r = x[1]
    calls = []
    r.register_hook(lambda g: calls.append(1) or g * 10)
    y = r * 3
    r.mul_(2)
    (y.sum() + x.sum()).backward()
    return w.grad, len(calls)


@pytest.mark.parametrize("spec", DEVICES)
def test_hook_on_view_still_runs_for_its_earlier_uses(spec: str) -> None:
    same(_hook_on_view_used_then_written, spec)


def _pick_of_expanded_written(m):
    x = m.arange(6.0, dtype=m.float64).reshape(3, 2)
    e = x.expand(2, 3, 2)
    q = e[0]
    q.add_(1)
    r = e[1:]
    r.fill_(5)
    return (x._version, e._version, q._version, r._version), x


@pytest.mark.parametrize("spec", DEVICES)
def test_piece_of_expanded_view_written_counts_once(spec: str) -> None:
    same(_pick_of_expanded_written, spec)


def _views_of_piece_of_expanded_written(m):
    x = m.arange(6.0, dtype=m.float64).reshape(3, 2)
    e = x.expand(2, 3, 2)
    q = e[0]
    q2, q3 = q[1], q[0]
    q2.add_(1)
    return [t._version for t in (x, e, q, q2, q3)], x, q3


@pytest.mark.parametrize("spec", DEVICES)
def test_views_of_piece_of_expanded_view_count_once(spec: str) -> None:
    same(_views_of_piece_of_expanded_written, spec)


def _pieces_of_integer_view_after_base_write(m):
    w = m.ones(4, 3, dtype=m.float64, requires_grad=True)
    x = w * 1
    v = x.view(m.int64)
    u = v.unbind(0)[1]
    x.add_(1)
    return v.requires_grad, u.requires_grad, u.is_leaf, u.grad_fn


@pytest.mark.parametrize("spec", DEVICES)
def test_integer_piece_of_view_dtype_has_no_refusal(spec: str) -> None:
    same(_pieces_of_integer_view_after_base_write, spec)


def _slice_node_saved_arguments(m):
    x = m.arange(12.0, dtype=m.float64).reshape(6, 2).requires_grad_()
    g = x[1:5:2].grad_fn
    return type(g).__name__, g._saved_dim, g._saved_start, g._saved_end, g._saved_step


@pytest.mark.parametrize("spec", DEVICES)
def test_slice_node_saved_arguments(spec: str) -> None:
    same(_slice_node_saved_arguments, spec)


_SLICES = (
    lambda x: x[1:],
    lambda x: x[-3:-1],
    lambda x: x[:, 1:],
    lambda x: x[1:100],
    lambda x: x[::2],
    lambda x: x[:],
    lambda x: x[0:4],
    lambda x: x[None, 1:3],
    lambda x: x[1, 1:],
    lambda x: x[1:3, 0, ::2],
    lambda x: x[..., 1, 1:],
    lambda x: x[0:4, 1:],
    lambda x: x.narrow(0, 1, 2),
)


def _slice_nodes_saved_arguments(m):
    x = m.arange(16.0, dtype=m.float64).reshape(4, 2, 2).requires_grad_()
    found = []
    for pick in _SLICES:
        g = pick(x).grad_fn
        found.append((type(g).__name__, g._saved_dim, g._saved_start, g._saved_end))
        found.append(g._saved_step)
    return found


@pytest.mark.parametrize("spec", DEVICES)
def test_slice_nodes_saved_arguments_as_given(spec: str) -> None:
    same(_slice_nodes_saved_arguments, spec)


def _two_int_index_graph(m):
    x = m.arange(24.0, dtype=m.float64).reshape(4, 3, 2).requires_grad_()
    return walk(x[1, 2].grad_fn, 3), walk(x[:, 1, 0].grad_fn, 3)


@pytest.mark.parametrize("spec", DEVICES)
def test_two_int_index_is_two_select_nodes(spec: str) -> None:
    same(_two_int_index_graph, spec)


def _square(m):
    eye = m.eye(3, dtype=m.float64) * 3
    return (eye + m.arange(9.0, dtype=m.float64).reshape(3, 3) / 27).requires_grad_()


def _solve_then_right_side_written(m):
    a = _square(m)
    b = m.arange(6.0, dtype=m.float64).reshape(3, 2) / 6
    y = m.linalg.solve(a, b)
    b.add_(1)
    y.pow(2).sum().backward()
    return a.grad


def _solve_triangular_then_right_side_written(m):
    a = _square(m)
    b = m.arange(6.0, dtype=m.float64).reshape(3, 2) / 6
    y = m.linalg.solve_triangular(a.triu(), b, upper=True)
    b.add_(1)
    y.pow(2).sum().backward()
    return a.grad


@pytest.mark.parametrize("spec", DEVICES)
def test_solve_right_side_written_after_the_call(spec: str) -> None:
    same(_solve_then_right_side_written, spec)
    same(_solve_triangular_then_right_side_written, spec)
