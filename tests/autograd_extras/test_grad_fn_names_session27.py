"""PyTorch's nodes as ``grad_fn`` shows them (session 27): views of a base that an in-place
write missed are regenerated (``AsStridedBackward0`` over the base's new node, retain_grad
moving with them, hooks left on the old node), the ``<view op>_copy`` functions' one node
(``NarrowCopyBackward0``, ``PermuteBackward0_copy``...), ``as_strided``'s and ``unfold``'s
one node over their input's, and composites whose last node is an autograd.Function or an
index read (index_reduce amax, ``x[2-d mask]``), shown with the op's inputs only. Each
program runs on torch 2.13 and on tensorweaver with only the module changed
(:mod:`snippet_outcomes`).
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import grid, leaf, same_each, walk
from tw_backends import FAST

Program = Callable[[Any], Any]


@pytest.fixture(params=FAST)
def spec(request: pytest.FixtureRequest) -> str:
    return request.param


def _missed(m: Any, make: Callable[[Any], Any], write: Callable[[Any], Any]) -> Any:
    """``make(b)``'s views of ``b = x * 1`` after ``write(b)`` changed ``b`` elsewhere."""
    b = leaf(m, 4, 3) * 1
    views = make(b)
    write(b)
    return [walk(v.grad_fn) for v in views]


def _missed_then_backward(m: Any, x: Any) -> tuple:
    """``a = (x * 1)[:2]`` with retain_grad and a hook, after a write of row 3; backward
    through ``a`` and the base: the regenerated node fills ``a.grad``, the hook (on the old
    node) is not called, as torch's."""
    b = x * 1
    a = b[:2]
    a.retain_grad()
    seen = []
    a.register_hook(lambda g: seen.append(g.clone()))
    b[3].add_(10)
    ((a * a).sum() + (b * b).sum()).backward()
    return a.grad, x.grad, seen, walk(a.grad_fn)


def _written_under_no_grad(m: Any) -> tuple:
    b = leaf(m, 4, 3) * 1
    a = b[:2]
    with m.no_grad():
        b[3].add_(10)
    (a * 2).sum().backward()
    return walk(a.grad_fn), walk(b.grad_fn)


def _base_gains_history(m: Any) -> tuple:
    """A view of a tensor without grad, whose other row is then written from a leaf."""
    b = m.zeros(4, 3, dtype=m.float64)
    a = b[:2]
    src = leaf(m, 3)
    b[3].copy_(src)
    return walk(a.grad_fn), a.requires_grad


MISSED: dict[str, Program] = {
    "tensor_split_and_slices": lambda m: _missed(
        m, lambda b: (*b.tensor_split(3), b[:2], b[2:3]), lambda b: b[3].add_(10)
    ),
    "view_of_view": lambda m: _missed(m, lambda b: (b[:2], b[:2][0]), lambda b: b[3].add_(10)),
    "split_pieces": lambda m: _missed(m, lambda b: b.split(2), lambda b: b[0].mul_(3)),
    "transposed_column": lambda m: _missed(m, lambda b: (b.t()[:1],), lambda b: b[2].mul_(3)),
    "setitem": lambda m: _missed(
        m, lambda b: (b[1:], b[:, 0]), lambda b: b.__setitem__((0, 1), 5.0)
    ),
    "retain_grad_and_hook": lambda m: _missed_then_backward(m, leaf(m, 4, 3)),
    "leaf_of_a_view": lambda m: _missed_then_backward(
        m, m.arange(12.0, dtype=m.float64).reshape(4, 3).requires_grad_()
    ),
    "written_under_no_grad": _written_under_no_grad,
    "base_gains_history": _base_gains_history,
}


def test_views_a_write_missed_are_regenerated(spec: str) -> None:
    same_each(MISSED, spec)


#: ``<view op>_copy`` calls of ``y`` (a non-leaf (4, 3)), by name.
COPIES: dict[str, Callable[[Any, Any], Any]] = {
    "alias_copy": lambda m, y: m.alias_copy(y),
    "as_strided_copy": lambda m, y: m.as_strided_copy(y, (2, 2), (1, 3)),
    "diagonal_copy": lambda m, y: m.diagonal_copy(y),
    "expand_copy": lambda m, y: m.expand_copy(y[:1], (2, 3)),
    "narrow_copy": lambda m, y: m.narrow_copy(y, 0, 1, 2),
    "narrow_copy_method": lambda m, y: y.narrow_copy(1, 1, 2),
    "permute_copy": lambda m, y: m.permute_copy(y, (1, 0)),
    "select_copy": lambda m, y: m.select_copy(y, 0, 1),
    "slice_copy": lambda m, y: m.slice_copy(y, 0, 1, 3),
    "split_copy": lambda m, y: m.split_copy(y, 2)[1],
    "split_with_sizes_copy": lambda m, y: m.split_with_sizes_copy(y, [1, 3])[1],
    "squeeze_copy_all": lambda m, y: m.squeeze_copy(y[:, :1]),
    "squeeze_copy_dim": lambda m, y: m.squeeze_copy(y[:, :1], 1),
    "squeeze_copy_dims": lambda m, y: m.squeeze_copy(y[:, :1], (1,)),
    "t_copy": lambda m, y: m.t_copy(y),
    "transpose_copy": lambda m, y: m.transpose_copy(y, 0, 1),
    "unbind_copy": lambda m, y: m.unbind_copy(y)[1],
    "unfold_copy": lambda m, y: m.unfold_copy(y, 0, 2, 1),
    "unsqueeze_copy": lambda m, y: m.unsqueeze_copy(y, 0),
    "view_copy": lambda m, y: m.view_copy(y, (12,)),
}


def _copied(m: Any, make: Callable[[Any, Any], Any]) -> tuple:
    """``make``'s copy of ``x * 1``, its node two levels down, and ``x``'s gradient."""
    x = leaf(m, 4, 3)
    out = make(m, x * 1)
    (out * grid(m, *out.shape)).sum().backward()
    return walk(out.grad_fn, 2), out, x.grad


def test_view_copies_nodes(spec: str) -> None:
    same_each({k: (lambda m, f=f: _copied(m, f)) for k, f in COPIES.items()}, spec)


def _hooked(m: Any, make: Callable[[Any], Any], shape: tuple) -> tuple:
    """``make(x * 1)``'s node with a hook and a pre-hook; backward of a weighted sum."""
    x = leaf(m, *shape)
    out = make(x * 1)
    seen = []
    out.grad_fn.register_hook(lambda gi, go: seen.append(gi))
    out.grad_fn.register_prehook(lambda go: seen.append(go))
    (out * grid(m, *out.shape)).sum().backward()
    return walk(out.grad_fn), seen, x.grad


def _index_reduce_hooked(m: Any, reduce: str) -> tuple:
    x, src = leaf(m, 3, 4), leaf(m, 2, 4)
    out = x.index_reduce(0, m.tensor([0, 2]), src, reduce)
    seen = []
    out.grad_fn.register_hook(lambda gi, go: seen.append(gi))
    (out * grid(m, 3, 4)).sum().backward()
    return walk(out.grad_fn), seen, x.grad, src.grad


STRIDED: dict[str, Program] = {
    "as_strided": lambda m: _hooked(m, lambda y: y.as_strided((3, 2), (1, 3)), (2, 3)),
    "as_strided_same_layout": lambda m: _hooked(m, lambda y: y.as_strided((2, 3), (3, 1)), (2, 3)),
    "as_strided_offset": lambda m: _hooked(m, lambda y: y.as_strided((2,), (2,), 1), (2, 3)),
    "as_strided_of_leaf_view": lambda m: walk(leaf(m, 2, 3).as_strided((3, 2), (1, 3)).grad_fn),
    "as_strided_of_transpose": lambda m: walk(
        (leaf(m, 2, 3) * 1).t().as_strided((2,), (3,)).grad_fn
    ),
    "as_strided_in_place": lambda m: walk((leaf(m, 2, 3) * 1).as_strided_((3, 2), (1, 3)).grad_fn),
    "unfold": lambda m: _hooked(m, lambda y: y.unfold(1, 3, 2), (2, 6)),
    "unfold_of_leaf_view": lambda m: walk(leaf(m, 6).unfold(0, 2, 1).grad_fn),
    "unfold_0d": lambda m: walk((leaf(m, 1) * 1)[0].unfold(0, 1, 1).grad_fn),
    "index_reduce_amax": lambda m: _index_reduce_hooked(m, "amax"),
    "index_reduce_amin": lambda m: _index_reduce_hooked(m, "amin"),
    "mask_2d": lambda m: _hooked(m, lambda y: y[grid(m, 3, 4) > 5], (3, 4)),
}


def test_as_strided_unfold_and_index_composites(spec: str) -> None:
    same_each(STRIDED, spec)


def test_mixed_index_node_chains(spec: str) -> None:
    i = lambda m: m.tensor([0, 2])  # noqa: E731
    same_each(
        {
            "none_none_i": lambda m: walk((leaf(m, 3, 4) * 1)[None, None, i(m)].grad_fn),
            "none_0_i": lambda m: walk((leaf(m, 3, 4) * 1)[None, 0, i(m)].grad_fn),
            "0_i": lambda m: walk((leaf(m, 3, 4) * 1)[0, i(m)].grad_fn),
        },
        spec,
    )
