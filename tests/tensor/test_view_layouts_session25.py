"""Layouts of views as PyTorch reports them, and what its saved-tensor hooks see: every kind
of empty view keeps its storage offset (a ``resize_`` or resized ``out=`` of it writes there),
``view(dtype)`` never follows its base's ``requires_grad``, an ``as_strided`` view's own array
is laid out by its strides (so results computed from it are), and the pack hooks of
``saved_tensors_hooks`` see each tensor PyTorch's amax/amin/max/min nodes save (and backward
uses what unpack gives). Each program is compared with torch 2.13."""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Callable

import pytest
from snippet_outcomes import same_each

Program = Callable[[Any], Any]


def _grid(m: Any, *shape: int) -> Any:
    return m.arange(float(math.prod(shape)), dtype=m.float64).reshape(shape)


# -- empty views: their storage offset --------------------------------------------------------

#: Empty views of an arange(8) (or of an empty tensor), by how they are made.
EMPTY_VIEWS: dict[str, Callable[[Any], Any]] = {
    "slice": lambda m: _grid(m, 8)[3:3],
    "slice_at_end": lambda m: _grid(m, 8)[8:],
    "slice_past_end": lambda m: _grid(m, 8)[10:],
    "end_of_a_slice": lambda m: _grid(m, 8)[:5][5:],
    "slice_of_a_slice": lambda m: _grid(m, 8)[2:][3:3],
    "slice_of_an_empty_slice": lambda m: _grid(m, 8)[2:][3:3][0:0],
    "rows": lambda m: _grid(m, 2, 4)[1:1],
    "columns": lambda m: _grid(m, 2, 4)[:, 2:2],
    "row_then_columns": lambda m: _grid(m, 2, 4)[1, 2:2],
    "rows_then_column": lambda m: _grid(m, 2, 4)[1:1, 3],
    "new_axis": lambda m: _grid(m, 8)[None, 3:3],
    "ellipsis": lambda m: _grid(m, 2, 4)[..., 3:3],
    "stepped": lambda m: _grid(m, 8)[4:4:2],
    "narrow": lambda m: _grid(m, 8).narrow(0, 5, 0),
    "narrow_at_end": lambda m: _grid(m, 8).narrow(0, 8, 0),
    "narrow_columns": lambda m: _grid(m, 2, 4).narrow(1, 3, 0),
    "split_piece": lambda m: _grid(m, 8).split([3, 0, 5])[1],
    "split_last_piece": lambda m: _grid(m, 8).split([8, 0])[1],
    "unbind_of_empty": lambda m: m.zeros(3, 0, dtype=m.float64).unbind(0)[2],
    "row_of_empty": lambda m: m.zeros(3, 0, dtype=m.float64)[2],
    "select_of_empty": lambda m: m.zeros(2, 0, 3, dtype=m.float64)[1, :, 2],
    "reshape": lambda m: _grid(m, 8)[3:3].reshape(0, 2),
    "view": lambda m: _grid(m, 8)[3:3].view(2, 0),
    "t": lambda m: _grid(m, 2, 4)[:, 2:2].t(),
    "unsqueeze": lambda m: _grid(m, 8)[3:3].unsqueeze(0),
    "expand": lambda m: _grid(m, 8)[3:3].expand(2, 0),
    "flatten": lambda m: _grid(m, 2, 4)[:, 2:2].flatten(),
    "squeeze": lambda m: _grid(m, 2, 4)[1:1].squeeze(),
    "of_unfold": lambda m: _grid(m, 8).unfold(0, 3, 1)[2:2],
    "as_strided": lambda m: _grid(m, 8).as_strided((0,), (1,), 5),
    "real": lambda m: m.zeros(4, dtype=m.complex128)[2:2].real,
    "view_dtype": lambda m: _grid(m, 8)[3:3].view(m.float32),
    "tensor_split_piece": lambda m: _grid(m, 8).tensor_split([3, 3, 9])[1],
    "tensor_split_last": lambda m: _grid(m, 8).tensor_split([3, 3, 9])[3],
    "hsplit_piece": lambda m: _grid(m, 2, 4).hsplit([2, 2])[1],
    "select": lambda m: m.zeros(3, 0, dtype=m.float64).select(0, 2),
    "unflatten": lambda m: _grid(m, 8)[5:5].unflatten(0, (0, 3)),
    "movedim": lambda m: _grid(m, 2, 4)[:, 3:3].movedim(0, 1),
    "detach": lambda m: _grid(m, 8)[3:3].detach(),
    "imag": lambda m: m.zeros(4, dtype=m.complex128)[3:3].imag,
    "conj": lambda m: m.zeros(4, dtype=m.complex128)[3:3].conj(),
}


def _laid(view: Callable[[Any], Any], m: Any) -> tuple:
    v = view(m)
    return v.storage_offset(), v.stride()


def test_empty_views_keep_their_offset(backend: str) -> None:
    same_each({name: partial(_laid, view) for name, view in EMPTY_VIEWS.items()}, backend)


def test_empty_diagonal_strides(backend: str) -> None:
    same_each(
        {
            "past_the_matrix": lambda m: _grid(m, 3, 3).diagonal(5).stride(),
            "below_it": lambda m: _grid(m, 3, 3).diagonal(-4).stride(),
            "of_empty_columns": lambda m: _grid(m, 3, 3)[:, 2:2].diagonal().stride(),
        },
        backend,
    )


def test_empty_views_share_their_base_address(backend: str) -> None:
    def program(m: Any) -> tuple:
        x = _grid(m, 8)
        views = (x[3:3], x[2:][3:3], x.view(2, 4)[1:1, 3], x[None, 5:5], x.narrow(0, 6, 0))
        # (PyTorch reports 0 for an empty tensor's data_ptr: the offsets tell the address)
        return tuple(v.storage_offset() * v.element_size() for v in views)

    same_each({"addresses": program}, backend)


def _written(view: Callable[[Any], Any], how: str, m: Any) -> Any:
    x = m.zeros(8, dtype=m.float64)
    out = view(x)
    if how == "resize_":
        out.resize_(2).fill_(5.0)
    elif how == "sum":
        m.sum(m.ones(2, 4, dtype=m.float64), 1, out=out)
    else:
        m.add(m.ones(2, dtype=m.float64), 1, out=out)
    return x, out, out.storage_offset()


#: Empty views that a resize_ (or a resized out=) writes into, of a zeros(8).
RESIZED: dict[str, Callable[[Any], Any]] = {
    "narrow": lambda x: x.narrow(0, 4, 0),
    "split_piece": lambda x: x.split([5, 0, 3])[1],
    "slice_of_a_slice": lambda x: x[1:][3:3],
    "end_of_a_slice": lambda x: x[:5][5:],
    "of_rows": lambda x: x.view(4, 2)[2:2, 1],
}


@pytest.mark.parametrize("how", ["resize_", "sum", "add"])
def test_writes_into_a_resized_empty_view_land_where_torch_writes(backend: str, how: str) -> None:
    same_each({name: partial(_written, view, how) for name, view in RESIZED.items()}, backend)


# -- view(dtype): no view for autograd ----------------------------------------------------------


def _view_dtype_flags(name: str, m: Any) -> tuple:
    x = m.arange(6.0, dtype=m.float64, requires_grad=True)
    v = x.view(getattr(m, name))
    with m.no_grad():
        w = x.view(getattr(m, name))
    return v.requires_grad, v.grad_fn is None, v.is_leaf, w.requires_grad, w.is_leaf


@pytest.mark.cunumeric
def test_view_dtype_never_requires_grad(backend: str) -> None:
    names = ("float64", "int64", "float32", "complex128")
    same_each({name: partial(_view_dtype_flags, name) for name in names}, backend)


def _written_leaf(name: str, m: Any) -> tuple:
    x = m.arange(4.0, dtype=m.float64, requires_grad=True)
    v = x.view(getattr(m, name))
    v.mul_(2) if name.startswith("float") else v.add_(1)
    return x.detach(), x.requires_grad, x.grad_fn is None, v.requires_grad, x._version


def _written_result(m: Any) -> tuple:
    x = m.arange(4.0, dtype=m.float64, requires_grad=True)
    y = x * 1
    y.view(m.float64).mul_(3)  # (the values change, not y's history)
    y.sum().backward()
    return y.detach(), x.grad, y.grad_fn.name()


def _written_after_no_grad(m: Any) -> tuple:
    x = m.arange(4.0, dtype=m.float64, requires_grad=True)
    with m.no_grad():
        v = x.view(m.float64)
    v.mul_(2)
    x.detach().add_(1)
    return x.detach(), v, x._version, v._version


def test_writes_through_view_dtype_change_values_not_history(backend: str) -> None:
    same_each(
        {
            **{name: partial(_written_leaf, name) for name in ("float64", "int64", "float32")},
            "result": _written_result,
            "after_no_grad": _written_after_no_grad,
        },
        backend,
    )


# -- as_strided: its array laid out by its strides ---------------------------------------------


def _layout(t: Any) -> tuple:
    return tuple(t.shape), t.stride(), t.storage_offset(), t.is_contiguous()


def _transposed_window(m: Any) -> Any:
    return _grid(m, 4, 4).as_strided((3, 3), (1, 4))


def _refreshed(m: Any) -> tuple:
    x = _grid(m, 4, 4)
    v = x.as_strided((3, 3), (1, 4))
    x.add_(1)
    return _layout(v + 1), v


def _with_grad(m: Any) -> tuple:
    x = _grid(m, 4, 4).requires_grad_()
    v = x[1:].as_strided((3, 3), (1, 4), 2)
    y = v.exp()
    y.sum().backward()
    return _layout(y), _layout(v), x.grad


def _written_through(m: Any) -> tuple:
    x = _grid(m, 4, 4)
    v = x.as_strided((3, 3), (1, 4))
    v[1].mul_(-1)
    v.t()[0].add_(100)
    return _layout(v * 1), v, x


AS_STRIDED: dict[str, Program] = {
    "added": lambda m: _layout(_transposed_window(m) + _grid(m, 3, 3)),
    "added_to": lambda m: _layout(_grid(m, 3, 3) + _transposed_window(m)),
    "values": lambda m: _transposed_window(m) + _grid(m, 3, 3),
    "exp": lambda m: _layout(_transposed_window(m).exp()),
    "neg": lambda m: _layout(-_transposed_window(m)),
    "clone": lambda m: _layout(_transposed_window(m).clone()),
    "empty_like": lambda m: _layout(m.empty_like(_transposed_window(m))),
    "contiguous": lambda m: _layout(_transposed_window(m).contiguous()),
    "view_itself": lambda m: _layout(_transposed_window(m)),
    "row": lambda m: _layout(_transposed_window(m)[1]),
    "column": lambda m: _layout(_transposed_window(m)[:, 1]),
    "t": lambda m: _layout(_transposed_window(m).t()),
    "t_viewed_flat": lambda m: _layout(_transposed_window(m).t().view(9)),
    "reshaped": lambda m: _layout(_transposed_window(m).reshape(9)),
    "three_d_doubled": lambda m: _layout(_grid(m, 24).as_strided((2, 3, 4), (1, 8, 2)) * 2),
    "three_d_summed": lambda m: _layout(_grid(m, 24).as_strided((2, 3, 4), (1, 8, 2)).sum(0)),
    "of_as_strided": lambda m: _layout(
        _grid(m, 16).as_strided((4, 4), (1, 4)).as_strided((2, 2), (1, 4), 1) + 1
    ),
    "overlapping": lambda m: _layout(_grid(m, 16).as_strided((3, 3), (1, 1)) + 1),
    "refreshed": _refreshed,
    "with_grad": _with_grad,
    "written_through": _written_through,
}


@pytest.mark.cunumeric
def test_as_strided_results_follow_its_strides(backend: str) -> None:
    same_each(AS_STRIDED, backend)


# -- saved_tensors_hooks: what amax/amin/max/min save ------------------------------------------


def _saved(f: Callable[[Any, Any], Any], m: Any) -> tuple:
    x = m.tensor([[0.5, 1.5, 1.5], [2.0, 0.0, 2.0]], dtype=m.float64, requires_grad=True)
    seen = []

    def pack(t: Any) -> Any:
        seen.append((tuple(t.shape), str(t.dtype).rpartition(".")[2]))
        return t

    with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = f(m, x)
    y.sum().backward()
    return seen, x.grad


def _changed(t: Any) -> Any:
    """A saved tensor unpacked as another: the indices reversed, a result replaced."""
    return t.flip(0) if str(t.dtype).endswith("int64") else t * 0 + 1.5


def _unpacked(f: Callable[[Any, Any], Any], how: str, m: Any) -> Any:
    x = m.tensor([[0.5, 1.5, 1.5], [2.0, 0.0, 2.0]], dtype=m.float64, requires_grad=True)
    if how == "changed":
        hooks = (lambda t: t, _changed)
    else:  # (kept apart from the graph, as an offloading hook keeps it)
        hooks = (lambda t: (t.detach().clone(),), lambda kept: kept[0])
    with m.autograd.graph.saved_tensors_hooks(*hooks):
        y = f(m, x)
    return m.autograd.grad(y.sum(), x)


REDUCTIONS: dict[str, Callable[[Any, Any], Any]] = {
    "amax": lambda m, x: x.amax(),
    "amax_dim": lambda m, x: x.amax(1),
    "amax_keepdim": lambda m, x: x.amax(1, keepdim=True),
    "amin_dim": lambda m, x: m.amin(x, dim=1),
    "amin_dims": lambda m, x: x.amin((0, 1)),
    "max": lambda m, x: x.max(),
    "min": lambda m, x: m.min(x),
    "max_dim": lambda m, x: x.max(1).values,
    "max_keepdim": lambda m, x: x.max(1, keepdim=True).values,
    "min_dim": lambda m, x: x.min(0)[0],
    "min_dim_function": lambda m, x: m.min(x, dim=1).values,
    "maximum": lambda m, x: m.max(x, x * 2),
    "amax_0d": lambda m, x: x[0, 1].amax(),
    "amin_0d_dim": lambda m, x: x[1, 1].amin(0),
}


@pytest.mark.cunumeric
def test_pack_hooks_see_what_reductions_save(backend: str) -> None:
    same_each({name: partial(_saved, f) for name, f in REDUCTIONS.items()}, backend)


@pytest.mark.parametrize("how", ["changed", "offloaded"])
def test_backward_of_reductions_uses_what_unpack_gives(backend: str, how: str) -> None:
    names = ("amax_dim", "amin_dims", "max", "max_dim", "max_keepdim", "min_dim")
    same_each({name: partial(_unpacked, REDUCTIONS[name], how) for name in names}, backend)


#: Reductions of a 0-d tensor (nothing to reduce: still a new tensor in PyTorch).
ZERO_DIM_REDUCTIONS: dict[str, Callable[[Any], Any]] = {
    "sum": lambda x: x.sum(),
    "sum_dim": lambda x: x.sum(0),
    "sum_no_dims": lambda x: x.sum(()),
    "sum_dtype": lambda x: x.sum(dtype=x.dtype),
    "prod": lambda x: x.prod(),
    "prod_dim": lambda x: x.prod(0),
    "amax": lambda x: x.amax(),
    "amin_dim": lambda x: x.amin(0),
    "max": lambda x: x.max(),
    "min": lambda x: x.min(),
    "mean": lambda x: x.mean(),
}


def _zero_dim_written(f: Callable[[Any], Any], m: Any) -> tuple:
    x = m.tensor(2.0, dtype=m.float64)
    y = f(x)
    same = y is x
    y.add_(1)
    return same, x, y


def _zero_dim_names(f: Callable[[Any], Any], m: Any) -> tuple:
    x = m.tensor(2.0, dtype=m.float64, requires_grad=True)
    y = f(x)
    (y * 3).backward()
    return y.grad_fn.name(), x.grad


def test_reductions_of_a_zero_dim_tensor_are_new_tensors(backend: str) -> None:
    same_each(
        {
            **{name: partial(_zero_dim_written, f) for name, f in ZERO_DIM_REDUCTIONS.items()},
            **{f"{n}_node": partial(_zero_dim_names, f) for n, f in ZERO_DIM_REDUCTIONS.items()},
        },
        backend,
    )


def test_reduction_of_a_zero_dim_tensor_shared_with_numpy(backend: str) -> None:
    def program(m: Any) -> tuple:
        import numpy as np

        a = np.array(3.0)
        x = m.from_numpy(a)
        total, largest = x.sum(), x.amax()
        a[()] = 7.0  # (the reductions hold memory of their own)
        total.numpy()[()] = 11.0
        return total, largest, x, float(a)

    same_each({"shared": program}, backend)


def test_pack_hooks_of_zero_dim_max_dim_and_aminmax(backend: str) -> None:
    cases = {
        "max_dim_0d": lambda m, x: x[0, 1].max(0).values,
        "aminmax": lambda m, x: x.aminmax(dim=1).max,
    }
    same_each({name: partial(_saved, f) for name, f in cases.items()}, backend)
