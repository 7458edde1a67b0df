"""Second reading (reader H, session 27) of this hour's changes, tested from outside as a
PyTorch user writes programs: the layouts of dtype conversions, powers, elementwise results
over size-1 axes and ``where``; reductions given a dim (their grad_fn names); indices of
sort/max/topk... under ``saved_tensors_hooks``; ``zero_``; Adam and its variants (options,
state dicts); merged code (masked var/std, vjp/jvp/vhp, fractional pooling, conv). Each
program runs on torch 2.13 and on tensorweaver with only the module changed
(:mod:`snippet_outcomes`).

The corners that match torch come first, grouped per area; the defects found follow at the
end, each a strict xfail naming the file and function at fault and the fix proposed.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from snippet_outcomes import grad_fn_name as _name
from snippet_outcomes import grid as _grid
from snippet_outcomes import leaf as _leaf
from snippet_outcomes import same_each, walk
from snippet_outcomes import with_layout as _layout

Program = Callable[[Any], Any]


# -- layouts of dtype conversions ----------------------------------------------------------------


def _cl(m: Any, *shape: int) -> Any:
    return _grid(m, *shape).contiguous(memory_format=m.channels_last)


OPERANDS = {
    "t": lambda m: _grid(m, 3, 4).t(),
    "cl": lambda m: _cl(m, 2, 3, 2, 2),
    "cl_c1": lambda m: _cl(m, 2, 1, 2, 2),
    "cl_hw1": lambda m: _cl(m, 2, 3, 1, 1),
    "slice_col": lambda m: _grid(m, 3, 4)[:, 1:2],
    "slice_row": lambda m: _grid(m, 3, 4)[1:2],
    "unsq": lambda m: _grid(m, 3, 4).unsqueeze(1),
    "unsq_t": lambda m: _grid(m, 3, 4).t().unsqueeze(0),
    "expand": lambda m: _grid(m, 3, 1).expand(3, 4),
    "expand_row": lambda m: _grid(m, 1, 4).expand(3, 4),
    "perm3": lambda m: _grid(m, 2, 3, 4).permute(2, 0, 1),
    "step": lambda m: _grid(m, 4, 6)[:, ::2],
    "step_t": lambda m: _grid(m, 4, 6)[::2].t(),
    "flip": lambda m: _grid(m, 3, 4).flip(1),
    "diag_view": lambda m: _grid(m, 3, 3).diagonal().unsqueeze(1),
    "zero_d": lambda m: _grid(m, 1).sum(),
    "c": lambda m: _grid(m, 2, 3),
    "narrow_last": lambda m: _grid(m, 2, 3, 4)[..., :1],
}


def _casts(m: Any, make: Program, to: Callable[[Any, Any], Any]) -> tuple:
    x = make(m)
    return _layout(to(m, x))


CASTS = {
    f"{name}_{kind}": (lambda m, make=make, to=to: _casts(m, make, to))
    for name, make in OPERANDS.items()
    for kind, to in {
        "long": lambda m, x: x.long(),
        "float": lambda m, x: x.float(),
        "bool": lambda m, x: x.bool(),
        "to_int8": lambda m, x: x.to(m.int8),
        "half": lambda m, x: x.half(),
        "same": lambda m, x: x.double(),
    }.items()
}


def test_cast_layouts(spec: str) -> None:
    same_each(CASTS, spec)


def _cast_grad(m: Any, make: Program) -> tuple:
    x = make(m).requires_grad_()
    y = x.float()
    y.retain_grad()
    (y * y).sum().backward()
    return _layout(y), _layout(x.grad), _name(y)


def test_cast_gradients(spec: str) -> None:
    same_each(
        {
            "t": lambda m: _cast_grad(m, lambda m: _grid(m, 3, 4).t()),
            "cl": lambda m: _cast_grad(m, lambda m: _cl(m, 2, 3, 2, 2)),
            "slice_col": lambda m: _cast_grad(m, lambda m: _grid(m, 3, 4)[:, 1:2].clone()),
        },
        spec,
    )


# -- powers ------------------------------------------------------------------------------------


def _pow(m: Any, make: Program, op: Callable[[Any, Any], Any]) -> tuple:
    return _layout(op(m, make(m)))


POWS = {
    f"{name}_{kind}": (lambda m, make=make, op=op: _pow(m, make, op))
    for name, make in OPERANDS.items()
    for kind, op in {
        "sq": lambda m, x: x**2,
        "half": lambda m, x: x**0.5,
        "r2": lambda m, x: 2**x,
        "r_float": lambda m, x: 1.5**x,
        "pow_t0d": lambda m, x: x.pow(m.tensor(2.0)),
        "pow_tt": lambda m, x: (x / 8).pow(x / 8),
        "torch_pow_scalar": lambda m, x: m.pow(2, x),
        "long_sq": lambda m, x: x.long() ** 2,
        "long_r": lambda m, x: 3 ** x.long(),
        "long_rf": lambda m, x: 0.5 ** x.long(),
    }.items()
}


def test_pow_layouts(spec: str) -> None:
    same_each(POWS, spec)


def _pow_grads(m: Any, op: Callable[[Any, Any], Any]) -> tuple:
    x = _leaf(m, 2, 3)
    y = op(m, x.t())
    y.sum().backward()
    return _layout(y), x.grad, _name(y)


POW_VALUES = {
    "rpow_grad": lambda m: _pow_grads(m, lambda m, x: 2**x),
    "rpow_float_grad": lambda m: _pow_grads(m, lambda m, x: 0.5**x),
    "rpow_0d_tensor": lambda m: _pow_grads(m, lambda m, x: m.tensor(2.0) ** x),
    "pow_sq_grad": lambda m: _pow_grads(m, lambda m, x: x**2),
    "pow_neg_grad": lambda m: _pow_grads(m, lambda m, x: x**-1.5),
    "pow_tt_grad": lambda m: _pow_grads(m, lambda m, x: (x / 4) ** (x / 4)),
    "rpow_int_neg": lambda m: 2 ** m.tensor([-1, 0, 3]),
    "rpow_bool": lambda m: 2 ** m.tensor([True, False]),
    "rpow_bool_base": lambda m: True ** m.tensor([1.0, 2.0]),
    "rpow_0d": lambda m: 3 ** m.tensor(2),
    "rpow_0d_float": lambda m: 2.5 ** m.tensor(2),
    "rpow_int8": lambda m: 2 ** m.tensor([1, 7, 8], dtype=m.int8),
    "rpow_uint8": lambda m: 2 ** m.tensor([1, 7, 8], dtype=m.uint8),
    "rpow_f32": lambda m: 2 ** m.tensor([0.5, 1.5], dtype=m.float32),
    "rpow_complex": lambda m: 2j ** m.tensor([1.0, 2.0]),
    "int_neg_exp": lambda m: m.tensor([2, 3]) ** -1,
    "int_pow_int_tensor_neg": lambda m: m.tensor([2, 3]) ** m.tensor([-1, 2]),
    "zero_pow_zero": lambda m: m.tensor([0.0, 0.0]) ** m.tensor([0.0, -1.0]),
    "neg_frac": lambda m: m.tensor([-8.0]) ** (1 / 3),
    "out_pow": lambda m: m.pow(2, m.tensor([1.0, 2.0]), out=m.empty(2)),
    "pow_inplace_t": lambda m: _layout(_grid(m, 3, 4).t().clone().pow_(2)),
    "pow_inplace_view": lambda m: _layout(_grid(m, 3, 4).t().pow_(2)),
    "double_backward": lambda m: _rpow_double(m),
}


def _rpow_double(m: Any) -> tuple:
    x = _leaf(m, 3)
    (g,) = m.autograd.grad((3**x).sum(), x, create_graph=True)
    (gg,) = m.autograd.grad(g.sum(), x)
    return g, gg, _name(g)


def test_pow_values(spec: str) -> None:
    same_each(POW_VALUES, spec)


# -- elementwise results over size-1 axes; where over three operands -----------------------------


def _binary(m: Any, a: Program, b: Program, op: Callable[[Any, Any], Any]) -> tuple:
    return _layout(op(a(m), b(m)))


PAIRS = {
    "col_c": (lambda m: _grid(m, 3, 4)[:, 1:2], lambda m: _grid(m, 3, 1)),
    "c_col": (lambda m: _grid(m, 3, 1), lambda m: _grid(m, 3, 4)[:, 1:2]),
    "unsq_t_c": (lambda m: _grid(m, 3, 4).t().unsqueeze(0), lambda m: _grid(m, 1, 4, 3)),
    "c_unsq_t": (lambda m: _grid(m, 1, 4, 3), lambda m: _grid(m, 3, 4).t().unsqueeze(0)),
    "unsq_t_row": (lambda m: _grid(m, 3, 4).t().unsqueeze(0), lambda m: _grid(m, 3)),
    "cl_c1_c": (lambda m: _cl(m, 2, 1, 2, 2), lambda m: _grid(m, 2, 1, 2, 2)),
    "c_cl_c1": (lambda m: _grid(m, 2, 1, 2, 2), lambda m: _cl(m, 2, 1, 2, 2)),
    "cl_hw1_c": (lambda m: _cl(m, 2, 3, 1, 1), lambda m: _grid(m, 2, 3, 1, 1)),
    "c_cl_hw1": (lambda m: _grid(m, 2, 3, 1, 1), lambda m: _cl(m, 2, 3, 1, 1)),
    "unsq_unsq": (lambda m: _grid(m, 3, 4).unsqueeze(1), lambda m: _grid(m, 4, 3).t().unsqueeze(1)),
    "c1_t": (lambda m: _grid(m, 1, 4, 3), lambda m: _grid(m, 3, 4).t().unsqueeze(0)),
    "c_0d": (lambda m: _grid(m, 3, 4).t().unsqueeze(0), lambda m: m.tensor(2.0)),
    "0d_c": (lambda m: m.tensor(2.0), lambda m: _grid(m, 3, 4).t().unsqueeze(0)),
    "expand_c": (lambda m: _grid(m, 3, 1).expand(3, 4), lambda m: _grid(m, 4, 3).t()),
    "c_expand": (lambda m: _grid(m, 4, 3).t(), lambda m: _grid(m, 3, 1).expand(3, 4)),
    "cl_bcast": (lambda m: _cl(m, 2, 3, 2, 2), lambda m: _grid(m, 3, 1, 1)),
    "slice_row_t": (lambda m: _grid(m, 3, 4)[1:2], lambda m: _grid(m, 4, 1).t()),
}

BINARY = {
    f"{name}_{kind}": (lambda m, a=a, b=b, op=op: _binary(m, a, b, op))
    for name, (a, b) in PAIRS.items()
    for kind, op in {
        "add": lambda x, y: x + y,
        "mul_int": lambda x, y: x * y.long(),
        "max": lambda x, y: x.maximum(y) if isinstance(x, type(y)) else x * y,
        "lt": lambda x, y: x < y,
        "pow": lambda x, y: (x / 16) ** (y / 16),
        "where": lambda x, y: (x > 2).where(x, y),
    }.items()
}


def test_binary_layouts_size_1(spec: str) -> None:
    same_each(BINARY, spec)


def _where3(m: Any, c: Program, a: Program, b: Program) -> tuple:
    return _layout(m.where(c(m) > 3, a(m), b(m)))


T = lambda m: _grid(m, 4, 3).t()  # noqa: E731
C = lambda m: _grid(m, 3, 4)  # noqa: E731
CL = lambda m: _cl(m, 2, 3, 2, 2)  # noqa: E731
C4 = lambda m: _grid(m, 2, 3, 2, 2)  # noqa: E731
U = lambda m: _grid(m, 3, 4).t().unsqueeze(1)  # noqa: E731
UC = lambda m: _grid(m, 4, 1, 3)  # noqa: E731

WHERES = {
    "ttt": lambda m: _where3(m, T, T, T),
    "tcc": lambda m: _where3(m, T, C, C),
    "ctc": lambda m: _where3(m, C, T, C),
    "cct": lambda m: _where3(m, C, C, T),
    "ttc": lambda m: _where3(m, T, T, C),
    "cl3": lambda m: _where3(m, CL, CL, CL),
    "cl_c_c": lambda m: _where3(m, CL, C4, C4),
    "c_c_cl": lambda m: _where3(m, C4, C4, CL),
    "c_cl_cl": lambda m: _where3(m, C4, CL, CL),
    "uuu": lambda m: _where3(m, U, U, U),
    "ucu": lambda m: _where3(m, U, UC, U),
    "ucc": lambda m: _where3(m, U, UC, UC),
    "scalar_b": lambda m: _layout(m.where(T(m) > 3, T(m), 0.0)),
    "scalar_a": lambda m: _layout(m.where(T(m) > 3, 1.0, T(m))),
    "scalars": lambda m: _layout(m.where(T(m) > 3, 1.0, 0.0)),
    "bcast_cond": lambda m: _layout(m.where(_grid(m, 3, 1) > 1, T(m), C(m))),
    "bcast_b": lambda m: _layout(m.where(T(m) > 3, T(m), _grid(m, 4))),
    "0d_b": lambda m: _layout(m.where(T(m) > 3, T(m), m.tensor(0.0))),
    "int_float": lambda m: _layout(m.where(T(m) > 3, T(m).long(), C(m).float())),
    "cl_scalar": lambda m: _layout(m.where(CL(m) > 3, CL(m), 0.0)),
    "masked_fill": lambda m: _layout(T(m).masked_fill(T(m) > 3, 0.0)),
    "sign": lambda m: _layout(T(m).sign()),
    "nan_to_num": lambda m: _layout(T(m).nan_to_num()),
    "grad": lambda m: _where_grad(m),
}


def _where_grad(m: Any) -> tuple:
    a = _leaf(m, 4, 3)
    b = _leaf(m, 3, 4)
    y = m.where(a.t() > 5, a.t(), b * 2)
    y.retain_grad()
    (y * y).sum().backward()
    return _layout(y), a.grad, b.grad, y.grad, _name(y)  # (y.grad's layout: a defect below)


def test_where_layouts(spec: str) -> None:
    same_each(WHERES, spec)


# -- reductions given a dim: values, gradients, grad_fn names ---------------------------------


def _reduced(m: Any, op: Callable[[Any], Any], shape: tuple = (2, 3)) -> tuple:
    x = _leaf(m, *shape)
    y = op(x)
    y.sum().backward() if y.requires_grad else None
    return y, x.grad, _name(y), walk(y.grad_fn, 2)


REDUCTIONS = {
    f"{op}_{name}": (lambda m, op=op, call=call: _reduced(m, lambda x: call(getattr(x, op))))
    for op in ("sum", "prod", "mean", "nansum")
    for name, call in {
        "none": lambda f: f(),
        "dim0": lambda f: f(0),
        "dim_neg": lambda f: f(-1),
        "dim_kw": lambda f: f(dim=1, keepdim=True),
        "all_tuple": lambda f: f((0, 1)),
        "all_tuple_keep": lambda f: f((0, 1), keepdim=True),
        "dim_list": lambda f: f([1, 0]),
        "dtype": lambda f: f(0, dtype=None),
    }.items()
    if not (op == "prod" and name in ("all_tuple", "all_tuple_keep", "dim_list"))
}
REDUCTIONS.update(
    {
        "sum_dim_none": lambda m: _reduced(m, lambda x: x.sum(dim=None)),
        "sum_dim_empty": lambda m: _reduced(m, lambda x: x.sum(dim=())),
        "sum_dim_empty_list": lambda m: _reduced(m, lambda x: x.sum([])),
        "mean_dim_none": lambda m: _reduced(m, lambda x: x.mean(dim=None)),
        "mean_dim_none_keep": lambda m: _reduced(m, lambda x: x.mean(None, True)),
        "mean_dim_empty": lambda m: _reduced(m, lambda x: x.mean(dim=())),
        "prod_1d_dim": lambda m: _reduced(m, lambda x: x.prod(0), (3,)),
        "sum_1d_dim": lambda m: _reduced(m, lambda x: x.sum(0), (3,)),
        "mean_1d_dim": lambda m: _reduced(m, lambda x: x.mean(0), (3,)),
        "sum_0d_dim": lambda m: _reduced(m, lambda x: x.sum(0), ()),
        "sum_0d_dim_neg": lambda m: _reduced(m, lambda x: x.sum(-1), ()),
        "mean_0d_dim": lambda m: _reduced(m, lambda x: x.mean(0), ()),
        "prod_0d_dim": lambda m: _reduced(m, lambda x: x.prod(0), ()),
        "sum_0d_empty": lambda m: _reduced(m, lambda x: x.sum(()), ()),
        "sum_bad_dim": lambda m: _reduced(m, lambda x: x.sum(2)),
        "mean_bad_dim": lambda m: _reduced(m, lambda x: x.mean(2)),
        "mean_dup_dim": lambda m: _reduced(m, lambda x: x.mean((0, 0))),
        "sum_dup_dim": lambda m: _reduced(m, lambda x: x.sum((1, -1))),
        "mean_int": lambda m: _grid(m, 2, 3, dtype=m.int64).mean(0),
        "mean_int_dtype": lambda m: _grid(m, 2, 3, dtype=m.int64).mean(0, dtype=m.float64),
        "mean_half": lambda m: m.full((4, 3), 60000.0, dtype=m.float16).mean(0),
        "mean_half_dimnone": lambda m: m.full((4, 3), 60000.0, dtype=m.float16).mean(None),
        "mean_f32_f64": lambda m: _reduced(m, lambda x: x.float().mean(1, dtype=m.float64)),
        "mean_empty": lambda m: m.zeros(0, 3).mean(0),
        "mean_empty_all": lambda m: m.zeros(0, 3).mean((0, 1)),
        "sum_empty": lambda m: _reduced(m, lambda x: x.sum(1), (0, 3)),
        "mean_empty_grad": lambda m: _reduced(m, lambda x: x.mean(1), (0, 3)),
        "sum_int_dim": lambda m: _grid(m, 2, 3, dtype=m.int32).sum(0),
        "sum_bool_dim": lambda m: (_grid(m, 2, 3) > 2).sum(1),
        "prod_int_dim": lambda m: _grid(m, 2, 3, dtype=m.int8).prod(0),
        "sum_dtype_dim": lambda m: _grid(m, 2, 3).sum(0, dtype=m.float32),
        "sum_t": lambda m: _layout(_grid(m, 3, 4).t().sum(0)),
        "sum_cl_keep": lambda m: _layout(_cl(m, 2, 3, 2, 2).sum(1, keepdim=True)),
        "mean_cl_keep": lambda m: _layout(_cl(m, 2, 3, 2, 2).mean((2, 3), keepdim=True)),
        "torch_sum_dim": lambda m: _reduced(m, lambda x: m.sum(x, 1)),
        "torch_mean_dim": lambda m: _reduced(m, lambda x: m.mean(x, dim=(0, 1))),
        "torch_prod_dim": lambda m: _reduced(m, lambda x: m.prod(x, 1, keepdim=True)),
        "sum_out": lambda m: m.sum(_grid(m, 2, 3), 0, out=m.empty(3)),
        "mean_out": lambda m: m.mean(_grid(m, 2, 3), (0, 1), out=m.empty(())),
        "mean_axis_kw": lambda m: _grid(m, 2, 3).mean(axis=0),
        "sum_axis_kw": lambda m: _grid(m, 2, 3).sum(axis=(0, 1), keepdims=True),
    }
)


def _reduce_double(m: Any, op: Callable[[Any], Any]) -> tuple:
    x = _leaf(m, 2, 3)
    (g,) = m.autograd.grad((op(x) ** 2).sum(), x, create_graph=True)
    (gg,) = m.autograd.grad(g.sum(), x)
    return g, gg  # (the graphs of these gradients are built otherwise than torch's)


REDUCTIONS.update(
    {
        "dd_sum_dim": lambda m: _reduce_double(m, lambda x: x.sum(1)),
        "dd_sum_all": lambda m: _reduce_double(m, lambda x: x.sum((0, 1))),
        "dd_mean_dim": lambda m: _reduce_double(m, lambda x: x.mean(0)),
        "dd_mean_none": lambda m: _reduce_double(m, lambda x: x.mean(None)),
        "dd_prod_dim": lambda m: _reduce_double(m, lambda x: x.prod(1)),
    }
)


def test_reductions_with_dim(spec: str) -> None:
    same_each(REDUCTIONS, spec)


# -- indices saved under saved_tensors_hooks ---------------------------------------------------

UNPACKS = {
    "identity": (lambda t: t, lambda t: t),
    "clone": (lambda t: t.clone(), lambda t: t.clone()),
    "offload": (lambda t: (t.dtype, t.detach().tolist()), None),
}


def _unpack_offload(m: Any) -> Callable[[Any], Any]:
    return lambda p: m.tensor(p[1], dtype=p[0])


INDEXED = {
    "max_dim": lambda x: x.max(1)[0],
    "max_dim_keep": lambda x: x.max(1, keepdim=True)[0],
    "min_dim": lambda x: x.min(0)[0],
    "sort": lambda x: x.sort(1)[0],
    "sort_desc": lambda x: x.sort(0, descending=True)[0],
    "topk": lambda x: x.topk(2, 1)[0],
    "kthvalue": lambda x: x.kthvalue(2, 1)[0],
    "median_dim": lambda x: x.median(1)[0],
    "mode": lambda x: x.mode(1)[0],
    "max_0d": lambda x: x[0, 0].max(0)[0],
    "max_all": lambda x: x.max(),
    "median_all": lambda x: x.median(),
    "amax": lambda x: x.amax(1),
}


def _hooked(m: Any, unpack: str, op: Callable[[Any], Any]) -> tuple:
    x = m.tensor([[3.0, 1.0, 2.0, 1.0], [0.5, 4.0, 4.0, -1.0], [2.0, 2.5, 7.0, 0.0]])
    x.requires_grad_()
    pack, unp = UNPACKS[unpack]
    unp = unp or _unpack_offload(m)
    seen = []

    def packing(t: Any) -> Any:
        seen.append((str(t.dtype).split(".")[-1], tuple(t.shape)))
        return pack(t)

    with m.autograd.graph.saved_tensors_hooks(packing, unp):
        y = op(x)
    (y * m.arange(1.0, y.numel() + 1.0).reshape(y.shape)).sum().backward()
    return x.grad, sorted(seen), _name(y)


HOOKED = {
    f"{op}_{unpack}": (lambda m, op=fn, unpack=unpack: _hooked(m, unpack, op))
    for op, fn in INDEXED.items()
    for unpack in UNPACKS
}


def _indices_changed_in_hooks(m: Any, op: Callable[[Any], Any], change: bool = True) -> tuple:
    x = _leaf(m, 3, 4)
    with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        values, indices = op(x)
    if change:
        indices.zero_()
    values.sum().backward()
    return x.grad


def _indices_changed_no_hooks(m: Any, op: Callable[[Any], Any]) -> Any:
    x = _leaf(m, 3, 4)
    values, indices = op(x)
    indices.zero_()
    try:
        values.sum().backward()
    except RuntimeError as e:
        return "inplace" in str(e).replace("in-place", "inplace")
    return x.grad


def _hook_unpack_differs(m: Any) -> Any:
    x = _leaf(m, 3, 4)
    # (an unpack that gives other indices: backward reads them, as torch's)
    with m.autograd.graph.saved_tensors_hooks(
        lambda t: t, lambda t: m.zeros_like(t) if not t.is_floating_point() else t
    ):
        values, _ = x.max(1)
    values.sum().backward()
    return x.grad


HOOKED.update(
    {
        "changed_max": lambda m: _indices_changed_in_hooks(m, lambda x: x.max(1)),
        "changed_sort": lambda m: _indices_changed_in_hooks(m, lambda x: x.sort(1)),
        "changed_topk": lambda m: _indices_changed_in_hooks(m, lambda x: x.topk(2, 0)),
        "changed_kth": lambda m: _indices_changed_in_hooks(m, lambda x: x.kthvalue(1, 1)),
        "changed_median": lambda m: _indices_changed_in_hooks(m, lambda x: x.median(0)),
        "changed_mode": lambda m: _indices_changed_in_hooks(m, lambda x: x.mode(1)),
        "changed_cummax": lambda m: _indices_changed_in_hooks(m, lambda x: x.cummax(1)),
        "no_hooks_max": lambda m: _indices_changed_no_hooks(m, lambda x: x.max(1)),
        "no_hooks_sort": lambda m: _indices_changed_no_hooks(m, lambda x: x.sort(1)),
        "no_hooks_topk": lambda m: _indices_changed_no_hooks(m, lambda x: x.topk(2, 1)),
        "no_hooks_median": lambda m: _indices_changed_no_hooks(m, lambda x: x.median(1)),
        "unpack_differs": _hook_unpack_differs,
    }
)


def test_indices_under_saved_tensors_hooks(spec: str) -> None:
    same_each(HOOKED, spec)


# -- custom Functions and nll_loss under saved_tensors_hooks; zero_ --------------------------


def _function_class(m: Any) -> Any:
    class Cube(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, w: Any) -> Any:
            y = x**3 * w
            ctx.save_for_backward(x, w, y)
            return y

        @staticmethod
        def backward(ctx: Any, g: Any) -> tuple:
            x, w, y = ctx.saved_tensors
            return g * 3 * x**2 * w, g * y / w

    return Cube


def _function_hooked(m: Any, unpack: str, change: str) -> tuple:
    x = _leaf(m, 3)
    w = _leaf(m, 3)
    pack, unp = UNPACKS[unpack]
    unp = unp or _unpack_offload(m)
    seen = []

    def packing(t: Any) -> Any:
        seen.append(t.tolist())
        return pack(t)

    with m.autograd.graph.saved_tensors_hooks(packing, unp):
        y = _function_class(m).apply(x * 1, w)
    if change == "output":
        with m.no_grad():
            y.mul_(2)
    elif change == "input":
        with m.no_grad():
            w.add_(1)
    try:
        y.sum().backward()
    except RuntimeError as e:
        return "refused" if "inplace" in str(e).replace("in-place", "inplace") else str(e)
    return x.grad, w.grad, seen


def _function_no_hooks_changed(m: Any) -> Any:
    x = _leaf(m, 3)
    w = _leaf(m, 3)
    y = _function_class(m).apply(x * 1, w)
    with m.no_grad():
        w.add_(1)
    try:
        y.sum().backward()
    except RuntimeError as e:
        return "inplace" in str(e).replace("in-place", "inplace")
    return x.grad


def _nll_hooked(m: Any, unpack: str, weight: bool, reduction: str, change: bool) -> tuple:
    x = _leaf(m, 3, 4)
    target = m.tensor([1, 0, 3])
    wt = m.tensor([1.0, 2.0, 0.5, 3.0]) if weight else None
    pack, unp = UNPACKS[unpack]
    unp = unp or _unpack_offload(m)
    seen = []

    def packing(t: Any) -> Any:
        seen.append((str(t.dtype).split(".")[-1], tuple(t.shape)))
        return pack(t)

    lp = x.log_softmax(1)  # (outside: a fused log_softmax packs nothing, a known defect)
    with m.autograd.graph.saved_tensors_hooks(packing, unp):
        loss = m.nn.functional.nll_loss(lp, target, wt, reduction=reduction)
    if change:
        target.zero_()
    loss.sum().backward()
    return loss, x.grad, sorted(seen), _name(loss)


SAVED = {
    f"fn_{unpack}_{change}": (
        lambda m, unpack=unpack, change=change: _function_hooked(m, unpack, change)
    )
    for unpack in UNPACKS
    for change in ("none", "output", "input")
}
SAVED.update(
    {
        f"nll_{unpack}_{weight}_{reduction}": (
            lambda m, u=unpack, w=weight, r=reduction: _nll_hooked(m, u, w, r, False)
        )
        for unpack in UNPACKS
        for weight in (False, True)
        for reduction in ("mean", "sum", "none")
    }
)
SAVED.update(
    {
        "fn_no_hooks_changed": _function_no_hooks_changed,
        "nll_target_changed_hooks": lambda m: _nll_hooked(m, "identity", True, "mean", True),
        "nll_target_changed_clone": lambda m: _nll_hooked(m, "clone", False, "sum", True),
    }
)


def _nll_target_changed(m: Any) -> Any:
    x = _leaf(m, 3, 4)
    target = m.tensor([1, 0, 3])
    loss = m.nn.functional.nll_loss(x, target)
    target.zero_()
    try:
        loss.backward()
    except RuntimeError as e:
        return "inplace" in str(e).replace("in-place", "inplace")
    return x.grad


SAVED["nll_target_changed_no_hooks"] = _nll_target_changed


def test_saved_through_hooks(spec: str) -> None:
    same_each(SAVED, spec)


def _zero(m: Any, make: Program, grad: bool = False) -> tuple:
    base = make(m)
    before = base._version
    if grad:
        base.requires_grad_()
        base = base * 1
    out = base.zero_()
    return _layout(out), out is base, base._version - before if not grad else _name(base)


def _zero_view(m: Any, view: Callable[[Any], Any]) -> tuple:
    base = _grid(m, 3, 4)
    v = view(base)
    v.zero_()
    return base, _layout(v), base._version, v._version


def _zero_grad_loop(m: Any, set_to_none: bool) -> tuple:
    lin = m.nn.Linear(3, 2).double()
    with m.no_grad():
        lin.weight.copy_(_grid(m, 2, 3))
        lin.bias.copy_(_grid(m, 2))
    opt = m.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
    out = []
    for _ in range(3):
        opt.zero_grad(set_to_none=set_to_none)
        lin(_grid(m, 4, 3)).pow(2).mean().backward()
        opt.step()
        out.append(lin.weight.grad.clone())
    return out, lin.weight, lin.bias


def _zero_in_graph(m: Any) -> tuple:
    x = _leaf(m, 2, 3)
    y = x * 2
    y.zero_()
    (y + x).sum().backward()
    return x.grad, _name(y), walk(y.grad_fn, 2)


def _zero_leaf_requires_grad(m: Any) -> Any:
    x = _leaf(m, 2, 3)
    x.zero_()
    return x


def _zero_leaf_no_grad(m: Any) -> Any:
    x = _leaf(m, 2, 3)
    with m.no_grad():
        x.zero_()
    (x * 2).sum().backward()
    return x, x.grad, x._version


def _zero_inference(m: Any) -> Any:
    with m.inference_mode():
        x = m.ones(3)
    x.zero_()
    return x


def _zero_saved(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    z = y * y
    with m.no_grad():
        y.zero_()
    try:
        z.sum().backward()
    except RuntimeError as e:
        return "inplace" in str(e).replace("in-place", "inplace")
    return x.grad


def _grad_zero_keeps_object(m: Any) -> tuple:
    x = _leaf(m, 3)
    (x * x).sum().backward()
    g = x.grad
    x.grad.zero_()
    (x * 3).sum().backward()
    return g is x.grad, g, x.grad


ZEROS = {
    "c": lambda m: _zero(m, lambda m: _grid(m, 2, 3)),
    "t": lambda m: _zero(m, lambda m: _grid(m, 2, 3).t()),
    "cl": lambda m: _zero(m, lambda m: _cl(m, 2, 3, 2, 2)),
    "int": lambda m: _zero(m, lambda m: _grid(m, 2, 3, dtype=m.int64)),
    "bool": lambda m: _zero(m, lambda m: _grid(m, 2, 3) > 2),
    "0d": lambda m: _zero(m, lambda m: m.tensor(3.0)),
    "empty": lambda m: _zero(m, lambda m: m.ones(0, 3)),
    "nonleaf": lambda m: _zero(m, lambda m: _grid(m, 2, 3), True),
    "view_row": lambda m: _zero_view(m, lambda b: b[1]),
    "view_col": lambda m: _zero_view(m, lambda b: b[:, 1]),
    "view_rows": lambda m: _zero_view(m, lambda b: b[1:]),
    "view_reshape": lambda m: _zero_view(m, lambda b: b.view(2, 6)[0]),
    "view_expand": lambda m: _zero_view(m, lambda b: b[0:1].expand(3, 4)),
    "view_t_row": lambda m: _zero_view(m, lambda b: b.t()[2]),
    "view_diag": lambda m: _zero_view(m, lambda b: b.diagonal()),
    "loop": lambda m: _zero_grad_loop(m, False),
    "loop_none": lambda m: _zero_grad_loop(m, True),
    "in_graph": _zero_in_graph,
    "leaf_requires_grad": _zero_leaf_requires_grad,
    "leaf_no_grad": _zero_leaf_no_grad,
    "inference": _zero_inference,
    "saved": _zero_saved,
    "grad_object": _grad_zero_keeps_object,
}


def test_zero(spec: str) -> None:
    same_each(ZEROS, spec)


# -- Adam and its variants: options, state, state dicts ----------------------------------------


def _model(m: Any) -> Any:
    lin = m.nn.Linear(3, 2).double()
    with m.no_grad():
        lin.weight.copy_(_grid(m, 2, 3) / 10 - 0.3)
        lin.bias.copy_(_grid(m, 2) / 5)
    return lin


def _loss(m: Any, lin: Any, k: int) -> Any:
    x = (_grid(m, 4, 3) / 7).sin() + k
    return (lin(x) - 0.5).pow(2).mean()


def _train(m: Any, name: str, steps: int = 3, groups: bool = False, **options: Any) -> tuple:
    lin = _model(m)
    if groups:
        params: Any = [{"params": [lin.weight]}, {"params": [lin.bias], "lr": 0.05}]
    else:
        params = lin.parameters()
    opt = getattr(m.optim, name)(params, **options)
    for k in range(steps):
        opt.zero_grad()
        _loss(m, lin, k).backward()
        opt.step()
    sd = opt.state_dict()
    state = {i: {k: v for k, v in s.items()} for i, s in sd["state"].items()}
    return (
        lin.weight,
        lin.bias,
        state,
        [list(g) for g in sd["param_groups"]],
        list(opt.defaults),
        repr(opt),
    )


OPTIONS = {
    "plain": {},
    "wd": {"weight_decay": 0.1},
    "maximize": {"maximize": True, "weight_decay": 0.05},
    "foreach": {"foreach": True, "weight_decay": 0.1},
    "no_foreach": {"foreach": False},
    "capturable": {"capturable": True},
    "betas_tensor_lr": {"lr": 0.02, "betas": (0.8, 0.9)},
    "eps": {"eps": 1e-3},
}
EXTRA = {
    "Adam": {
        "amsgrad": {"amsgrad": True},
        "amsgrad_max": {"amsgrad": True, "maximize": True, "foreach": True},
        "decoupled": {"decoupled_weight_decay": True, "weight_decay": 0.1},
        "amsgrad_capt": {"amsgrad": True, "capturable": True, "weight_decay": 0.1},
    },
    "AdamW": {
        "amsgrad": {"amsgrad": True, "weight_decay": 0.2},
        "amsgrad_foreach": {"amsgrad": True, "foreach": True},
    },
    "Adamax": {},
    "NAdam": {
        "decoupled": {"decoupled_weight_decay": True, "weight_decay": 0.1},
        "momentum_decay": {"momentum_decay": 0.01},
    },
    "RAdam": {
        "decoupled": {"decoupled_weight_decay": True, "weight_decay": 0.1},
        "long": {"_steps": 7},
    },
}


def _train_case(m: Any, name: str, options: dict) -> tuple:
    options = dict(options)
    steps = options.pop("_steps", 3)
    return _train(m, name, steps, **options)


OPTIMIZERS = {
    f"{name}_{case}": (lambda m, name=name, options=options: _train_case(m, name, options))
    for name in EXTRA
    for case, options in {**OPTIONS, **EXTRA[name]}.items()
}
OPTIMIZERS.update(
    {
        f"{name}_groups": (lambda m, name=name: _train(m, name, 2, groups=True, lr=0.01))
        for name in EXTRA
    }
)


def test_moment_estimate_optimizers(spec: str) -> None:
    same_each(OPTIMIZERS, spec)


def _round_trip(m: Any, name: str, **options: Any) -> tuple:
    lin = _model(m)
    opt = getattr(m.optim, name)(lin.parameters(), **options)
    for k in range(2):
        opt.zero_grad()
        _loss(m, lin, k).backward()
        opt.step()
    sd = opt.state_dict()
    lin2 = _model(m)
    with m.no_grad():
        for p, q in zip(lin2.parameters(), lin.parameters()):
            p.copy_(q)
    opt2 = getattr(m.optim, name)(lin2.parameters(), **options)
    opt2.load_state_dict(sd)
    del opt  # (a restored checkpoint: torch's loaded state shares the saved tensors)
    opt2.zero_grad()
    _loss(m, lin2, 5).backward()
    opt2.step()
    return lin2.weight, opt2.state_dict()["state"]


def _torch_ordered_state(m: Any, name: str, entries: dict, **options: Any) -> tuple:
    """A state dict written by hand in torch's order (as one saved by torch and read back),
    loaded, then a step."""
    lin = _model(m)
    opt = getattr(m.optim, name)(lin.parameters(), **options)
    group = dict(opt.state_dict()["param_groups"][0])
    ps = list(lin.parameters())
    state = {
        i: {k: (v(m, p) if callable(v) else m.tensor(v)) for k, v in entries.items()}
        for i, p in enumerate(ps)
    }
    opt.load_state_dict({"state": state, "param_groups": [group]})
    opt.zero_grad()
    _loss(m, lin, 1).backward()
    opt.step()
    sd = opt.state_dict()["state"]
    return lin.weight, lin.bias, {i: list(s) for i, s in sd.items()}, sd[0]


def _ones(m: Any, p: Any) -> Any:
    return m.ones_like(p) * 0.01


def _small(m: Any, p: Any) -> Any:
    return m.full_like(p, 0.2)


STATE_DICTS = {
    f"round_{name}_{case}": (lambda m, name=name, o=o: _round_trip(m, name, **o))
    for name in EXTRA
    for case, o in {"plain": {}, "wd": {"weight_decay": 0.1}, "foreach": {"foreach": True}}.items()
}
STATE_DICTS.update(
    {
        "round_Adam_amsgrad": lambda m: _round_trip(m, "Adam", amsgrad=True),
        "round_NAdam_decoupled": lambda m: _round_trip(
            m, "NAdam", decoupled_weight_decay=True, weight_decay=0.1
        ),
        "round_Adam_capturable": lambda m: _round_trip(m, "Adam", capturable=True),
        "load_adam": lambda m: _torch_ordered_state(
            m, "Adam", {"step": 4.0, "exp_avg": _small, "exp_avg_sq": _ones}
        ),
        "load_adam_amsgrad": lambda m: _torch_ordered_state(
            m,
            "Adam",
            {"step": 4.0, "exp_avg": _small, "exp_avg_sq": _ones, "max_exp_avg_sq": _ones},
            amsgrad=True,
        ),
        "load_adam_amsgrad_missing": lambda m: _torch_ordered_state(
            m, "Adam", {"step": 4.0, "exp_avg": _small, "exp_avg_sq": _ones}, amsgrad=True
        ),
        "load_adam_reordered": lambda m: _torch_ordered_state(
            m, "Adam", {"exp_avg_sq": _ones, "exp_avg": _small, "step": 4.0}
        ),
        "load_adamw": lambda m: _torch_ordered_state(
            m, "AdamW", {"step": 2.0, "exp_avg": _small, "exp_avg_sq": _ones}
        ),
        "load_adamax": lambda m: _torch_ordered_state(
            m, "Adamax", {"step": 2.0, "exp_avg": _small, "exp_inf": _ones}
        ),
        "load_nadam": lambda m: _torch_ordered_state(
            m,
            "NAdam",
            {"step": 2.0, "mu_product": 0.9, "exp_avg": _small, "exp_avg_sq": _ones},
        ),
        "load_nadam_no_mu": lambda m: _torch_ordered_state(
            m, "NAdam", {"step": 2.0, "exp_avg": _small, "exp_avg_sq": _ones}
        ),
        "load_radam": lambda m: _torch_ordered_state(
            m, "RAdam", {"step": 6.0, "exp_avg": _small, "exp_avg_sq": _ones}
        ),
        "load_radam_capturable": lambda m: _torch_ordered_state(
            m, "RAdam", {"step": 6.0, "exp_avg": _small, "exp_avg_sq": _ones}, capturable=True
        ),
    }
)


def _bad(m: Any, name: str, **options: Any) -> Any:
    return getattr(m.optim, name)(_model(m).parameters(), **options).defaults


def _lr_tensor(m: Any, name: str, **options: Any) -> tuple:
    return _train(m, name, 2, lr=m.tensor(0.01), **options)[:3]


def _add_group(m: Any, name: str) -> tuple:
    lin = _model(m)
    opt = getattr(m.optim, name)([lin.weight], lr=0.01)
    opt.add_param_group({"params": [lin.bias], "betas": (0.5, 0.6)})
    _loss(m, lin, 0).backward()
    opt.step()
    return (
        lin.weight,
        lin.bias,
        [
            sorted(g.items(), key=lambda kv: kv[0])
            for g in [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]
        ],
    )


def _differentiable(m: Any, name: str) -> tuple:
    w = _leaf(m, 3) / 10
    w.retain_grad()
    p = w.detach().clone().requires_grad_()
    opt = getattr(m.optim, name)([p], lr=0.1, differentiable=True)
    p.grad = (w * 2).detach().clone().requires_grad_()
    opt.step()
    return p, _name(p)


STATE_DICTS.update(
    {
        f"bad_{name}_{case}": (lambda m, name=name, o=o: _bad(m, name, **o))
        for name in EXTRA
        for case, o in {
            "lr": {"lr": -1.0},
            "beta0": {"betas": (1.0, 0.9)},
            "beta1": {"betas": (0.9, -0.1)},
            "eps": {"eps": -1e-8},
            "wd": {"weight_decay": -0.1},
            "fused_foreach": {"fused": True, "foreach": True},
            "differentiable_capturable": {"differentiable": True, "capturable": True},
        }.items()
        if not (name == "Adamax" and case.startswith("fused"))
    }
)
STATE_DICTS.update(
    {f"lr_tensor_{name}": (lambda m, name=name: _lr_tensor(m, name)) for name in EXTRA}
)
STATE_DICTS.update(
    {f"add_group_{name}": (lambda m, name=name: _add_group(m, name)) for name in EXTRA}
)
STATE_DICTS.update(
    {f"differentiable_{name}": (lambda m, name=name: _differentiable(m, name)) for name in EXTRA}
)


def test_optimizer_state_dicts_and_options(spec: str) -> None:
    same_each(STATE_DICTS, spec)


# -- merged code: masked var/std, vjp/jvp/vhp/hvp, fractional pooling, conv -------------------


def _masked(m: Any, op: str, **kw: Any) -> tuple:
    x = (_grid(m, 3, 4) / 3).sin().requires_grad_()
    mask = m.tensor([[1, 1, 0, 1], [0, 0, 0, 0], [1, 0, 0, 0]]).bool()
    y = getattr(m.masked, op)(x, mask=mask, **kw)
    m.nan_to_num(y, 0.0).sum().backward()
    return y, x.grad


MASKED = {
    f"{op}_{case}": (lambda m, op=op, kw=kw: _masked(m, op, **kw))
    for op in ("var", "std")
    for case, kw in {
        "dim1": {"dim": 1},
        "dim0_keep": {"dim": 0, "keepdim": True},
        "unbiased_false": {"dim": 1, "unbiased": False},
        "correction_2": {"dim": 1, "correction": 2},
        "correction_float": {"dim": 1, "correction": 0.5},
        "all": {},
        "dims": {"dim": (0, 1)},
        "dtype": {"dim": 1, "dtype": None},
    }.items()
}
MASKED.update(
    {
        "var_both": lambda m: _masked(m, "var", dim=1, unbiased=True, correction=1),
        "std_int": lambda m: m.masked.std(
            _grid(m, 2, 3, dtype=m.int64), 1, mask=m.ones(2, 3, dtype=m.bool)
        ),
        "var_no_mask": lambda m: m.masked.var(_grid(m, 2, 3), 1),
        "names": lambda m: (m.masked.var.__name__, m.masked.std.__name__),
    }
)


def _f(x: Any, y: Any) -> Any:
    return (x**2 * y).sum(0), (x * y.sin()).prod()


def _g(x: Any) -> Any:
    return (x**3).sum() + x.prod()


def _fn_call(m: Any, kind: str, **kw: Any) -> Any:
    x = _grid(m, 3) / 4
    y = _grid(m, 3) / 5
    F = m.autograd.functional
    if kind == "vjp":
        return F.vjp(_f, (x, y), (m.ones(()), m.tensor(2.0)), **kw)
    if kind == "jvp":
        return F.jvp(_f, (x, y), (m.ones(3), m.ones(3) * 0.5), **kw)
    if kind == "vhp":
        return F.vhp(_g, x, m.ones(3), **kw)
    if kind == "hvp":
        return F.hvp(_g, x, m.ones(3), **kw)
    if kind == "vjp_single":
        return F.vjp(lambda a: a.exp().sum(), x, **kw)
    if kind == "jvp_single":
        return F.jvp(lambda a: a.exp(), x, m.ones(3), **kw)
    if kind == "vjp_unused_strict":
        return F.vjp(lambda a, b: a.exp().sum(), (x, y), strict=True)
    if kind == "vjp_unused":
        return F.vjp(lambda a, b: a.exp().sum(), (x, y))
    if kind == "jvp_const":
        return F.jvp(lambda a: m.ones(3), x, m.ones(3), **kw)
    if kind == "vhp_linear":
        return F.vhp(lambda a: a.sum(), x, m.ones(3), **kw)
    raise AssertionError(kind)


def _fn_create_graph(m: Any, kind: str) -> tuple:
    out = _fn_call(m, kind, create_graph=True)
    flat = [t for part in out for t in (part if isinstance(part, tuple) else (part,))]
    return out, [t.requires_grad for t in flat]


FUNCTIONAL = {
    f"{kind}_{mode}": (lambda m, kind=kind, kw=kw: _fn_call(m, kind, **kw))
    for kind in (
        "vjp",
        "jvp",
        "vhp",
        "hvp",
        "vjp_single",
        "jvp_single",
        "jvp_const",
        "vhp_linear",
    )
    for mode, kw in {"plain": {}, "strict": {"strict": True}}.items()
}
FUNCTIONAL.update(
    {
        "vjp_unused_strict": lambda m: _fn_call(m, "vjp_unused_strict"),
        "vjp_unused": lambda m: _fn_call(m, "vjp_unused"),
        **{
            f"{k}_create": (lambda m, k=k: _fn_create_graph(m, k))
            for k in ("vjp", "jvp", "vhp", "hvp", "vjp_single")
        },
        "vjp_no_grad": lambda m: _fn_no_grad(m),
    }
)


def _fn_no_grad(m: Any) -> Any:
    with m.no_grad():
        return _fn_call(m, "vjp")


def _fractional(m: Any, nd: int, **kw: Any) -> tuple:
    x = (_grid(m, 1, 2, *([5] * nd)) / 7).sin().requires_grad_()
    samples = m.tensor([[[0.3] * nd, [0.7] * nd]], dtype=m.float64)
    F = m.nn.functional
    fn = getattr(F, f"fractional_max_pool{nd}d")
    out = fn(x, 2, _random_samples=samples, **kw)
    values = out[0] if isinstance(out, tuple) else out
    values.sum().backward()
    return out, x.grad  # (the name of its node: a defect below)


POOLS = {
    "2d_size": lambda m: _fractional(m, 2, output_size=3),
    "2d_ratio": lambda m: _fractional(m, 2, output_ratio=(0.5, 0.5)),
    "2d_indices": lambda m: _fractional(m, 2, output_size=(3, 2), return_indices=True),
    "3d_size": lambda m: _fractional(m, 3, output_size=2),
    "3d_indices": lambda m: _fractional(m, 3, output_size=3, return_indices=True),
    "2d_none": lambda m: _fractional(m, 2),
    "2d_both": lambda m: _fractional(m, 2, output_size=2, output_ratio=0.5),
    "2d_module": lambda m: (
        m.nn.FractionalMaxPool2d(2, output_size=3, return_indices=True)(_grid(m, 1, 1, 5, 5))[
            0
        ].shape
    ),
    "names": lambda m: (
        m.nn.functional.fractional_max_pool2d_with_indices.__name__,
        m.nn.functional.fractional_max_pool3d_with_indices.__name__,
    ),
}


def _conv(m: Any, nd: int, layout: str, **kw: Any) -> tuple:
    shape = (2, 3) + (5,) * nd
    x = (_grid(m, *shape) / 17).sin()
    if layout == "cl":
        fmt = m.channels_last if nd == 2 else m.channels_last_3d
        x = x.contiguous(memory_format=fmt)
    x.requires_grad_()
    groups = kw.pop("groups", 1)
    w = (_grid(m, 4, 3 // groups, *([2] * nd)) / 11).cos().requires_grad_()
    b = m.tensor([0.1, -0.2, 0.3, 0.0], dtype=m.float64).requires_grad_()
    conv = getattr(m.nn.functional, f"conv{nd}d")
    y = conv(x, w, b if kw.pop("bias", True) else None, groups=groups, **kw)
    (y * y).sum().backward()
    return y, x.grad, w.grad, b.grad, _name(y), y.stride(), x.grad.stride()


CONVS = {
    f"{nd}d_{layout}_{case}": (lambda m, nd=nd, layout=layout, kw=kw: _conv(m, nd, layout, **kw))
    for nd in (2, 3)
    for layout in ("c", "cl")
    for case, kw in {
        "plain": {},
        "stride_pad": {"stride": 2, "padding": 1},
        "dilation": {"dilation": 2},
        "no_bias": {"bias": False},
        "groups": {"groups": 3, "padding": "same"},
    }.items()
}


def _conv_input_only(m: Any) -> tuple:
    x = _grid(m, 1, 2, 4, 4).requires_grad_()
    w = _grid(m, 2, 2, 3, 3)
    y = m.nn.functional.conv2d(x, w)
    y.sum().backward()
    return x.grad, w.grad


def _conv_double(m: Any) -> tuple:
    x = (_grid(m, 1, 2, 4, 4) / 9).requires_grad_()
    w = (_grid(m, 2, 2, 3, 3) / 13).requires_grad_()
    y = m.nn.functional.conv2d(x, w)
    (gx,) = m.autograd.grad(y.pow(2).sum(), x, create_graph=True)
    (gw,) = m.autograd.grad(gx.sum(), w)
    return gx, gw


def _complex_conv(m: Any, nd: int, bias: bool) -> tuple:
    x = (_grid(m, 1, 2, *([4] * nd)) / 5).to(m.complex128) * (1 + 0.5j)
    w = (_grid(m, 3, 2, *([2] * nd)) / 9).to(m.complex128) * (0.3 - 1j)
    x.requires_grad_()
    w.requires_grad_()
    b = m.tensor([0.1j, 0.2, -0.3], dtype=m.complex128, requires_grad=True) if bias else None
    y = getattr(m.nn.functional, f"conv{nd}d")(x, w, b, padding=1, stride=2)
    y.abs().sum().backward()
    return y, x.grad, w.grad, None if b is None else b.grad


CONVS.update({"input_only": _conv_input_only, "double": _conv_double})
CONVS.update(
    {
        f"complex_{nd}d_{bias}": (lambda m, nd=nd, bias=bias: _complex_conv(m, nd, bias))
        for nd in (2, 3)
        for bias in (True, False)
    }
)


def test_masked_dispersion(spec: str) -> None:
    same_each(MASKED, spec)


def test_functional_products(spec: str) -> None:
    same_each(FUNCTIONAL, spec)


def test_fractional_pooling(spec: str) -> None:
    same_each(POOLS, spec)


def test_convolutions(spec: str) -> None:
    same_each(CONVS, spec)


# -- more zero_: shared memory, .data, views under no_grad ----------------------------------


def _zero_from_numpy(m: Any) -> tuple:
    a = np.arange(1.0, 4.0)
    t = m.from_numpy(a)
    t.zero_()
    return a.tolist(), t


def _zero_numpy_view(m: Any) -> Any:
    t = m.arange(1.0, 4.0)
    a = t.numpy()
    t.zero_()
    return a.tolist()


def _zero_detached(m: Any) -> tuple:
    x = _leaf(m, 3)
    x.detach().zero_()
    return x, x._version


def _zero_data(m: Any, row: bool) -> tuple:
    x = _leaf(m, 2, 3)
    (x.data[0] if row else x.data).zero_()
    (x * 2).sum().backward()
    return x, x.grad


def _zero_leaf_view_no_grad(m: Any) -> tuple:
    x = _leaf(m, 2, 3)
    with m.no_grad():
        x[0].zero_()
    (x * x).sum().backward()
    return x, x.grad, x._version


def _zero_nonleaf_view_no_grad(m: Any) -> tuple:
    x = _leaf(m, 2, 3)
    y = x * 1
    v = y[1]
    with m.no_grad():
        v.zero_()
    (y * 3).sum().backward()
    return y, x.grad, v._version, y._version, _name(y)


def _zero_grad_row(m: Any) -> Any:
    x = _leaf(m, 2, 3)
    (x * x).sum().backward()
    x.grad[0].zero_()
    return x.grad


def _zero_saved_output(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x.exp()
    y.zero_()
    try:
        y.sum().backward()
    except RuntimeError as e:
        return "inplace" in str(e).replace("in-place", "inplace")
    return x.grad


ZEROS_SHARED = {
    "from_numpy": _zero_from_numpy,
    "numpy_view": _zero_numpy_view,
    "detached": _zero_detached,
    "data": lambda m: _zero_data(m, False),
    "data_row": lambda m: _zero_data(m, True),
    "leaf_view_no_grad": _zero_leaf_view_no_grad,
    "nonleaf_view_no_grad": _zero_nonleaf_view_no_grad,
    "grad_row": _zero_grad_row,
    "saved_output": _zero_saved_output,
    "base_then_view": lambda m: (lambda x, v: (x.zero_(), v)[1])(
        *(lambda x: (x, x[1]))(_grid(m, 2, 3))
    ),
    "half": lambda m: _grid(m, 2, 3).half().zero_(),
    "complex": lambda m: _grid(m, 2, 3).to(m.complex128).zero_(),
    "exp_in_graph": lambda m: (lambda x: (x.exp().zero_().sum().backward(), x.grad)[1])(
        _leaf(m, 2, 3)
    ),
}


def test_zero_shared_memory(spec: str) -> None:
    same_each(ZEROS_SHARED, spec)


# -- nested saved_tensors_hooks: only the innermost packs --------------------------------------


def _nested_hooks(m: Any, op: Callable[[Any, Any], Any]) -> tuple:
    x = _leaf(m, 3, 4)
    seen = []

    def hooks(name: str) -> Any:
        def pack(t: Any) -> Any:
            seen.append((name, str(t.dtype).split(".")[-1], tuple(t.shape)))
            return t * 1 if t.is_floating_point() else t + 0  # (computes: nothing more packs)

        return m.autograd.graph.saved_tensors_hooks(pack, lambda t: t)

    with hooks("outer"):
        with hooks("inner"):
            y = op(m, x)
    y.sum().backward()
    return x.grad, sorted(seen)


def _square_function(m: Any, x: Any) -> Any:
    class Square(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (a,) = ctx.saved_tensors
            return 2 * a * g

    return Square.apply(x * 1)


NESTED = {
    "median": lambda m: _nested_hooks(m, lambda m, x: x.median(1)[0]),
    "kthvalue": lambda m: _nested_hooks(m, lambda m, x: x.kthvalue(2, 1)[0]),
    "mode": lambda m: _nested_hooks(m, lambda m, x: x.mode(1)[0]),
    "topk": lambda m: _nested_hooks(m, lambda m, x: x.topk(2, 1)[0]),
    "sort": lambda m: _nested_hooks(m, lambda m, x: x.sort(1)[0]),
    "function": lambda m: _nested_hooks(m, _square_function),
    "nll": lambda m: _nested_hooks(
        m, lambda m, x: m.nn.functional.nll_loss(x, m.tensor([0, 1, 3]))
    ),
    "exp": lambda m: _nested_hooks(m, lambda m, x: x.exp()),
}


def test_nested_saved_tensors_hooks(spec: str) -> None:
    same_each(NESTED, spec)


# -- defects found (strict xfails: cause and proposed fix) ---------------------------------------


def _retained_layout(m: Any, make: Callable[[Any], Any]) -> tuple:
    y = make(m) * 1
    y.retain_grad()
    (y * y).sum().backward()
    return y.grad.stride(), y.grad.is_contiguous()


def _retained_transposed(m: Any) -> tuple:
    return _retained_layout(m, lambda m: _leaf(m, 4, 3).t())


def _retained_channels_last(m: Any) -> tuple:
    return _retained_layout(m, lambda m: _cl(m, 2, 3, 2, 2).requires_grad_())


def test_retained_grad_is_contiguous(spec: str) -> None:
    same_each({"t": _retained_transposed, "cl": _retained_channels_last}, spec)


def _size_1_tie_broken_by_broadcast(m: Any) -> tuple:
    a = _grid(m, 2, 1, 3)
    b = _grid(m, 6, 2).t()[:, :1].unsqueeze(-1)  # (2, 1, 1) strides (1, 2, 1)
    return _layout(a * b), _layout(a + b)


@pytest.mark.xfail(
    strict=True,
    reason="SILENT (numpy backend only): grid(2, 1, 3) * grid(6, 2).t()[:, :1].unsqueeze(-1) "
    "has strides (3, 3, 1) where torch gives (3, 6, 1): torch breaks the tie of a's size-1 "
    "axis with the next operand's strides on that pair of axes even when that operand is "
    "broadcast along another axis (TensorIterator skips an operand only for a pair where "
    "one of its two strides is 0). Cause: plugins/numpy-backend/tensorweaver_numpy/"
    "layouts.py _odd (an operand of a's shape with a stride 0 is passed over, and then a "
    "new or C-strided a returns False). Fix: in _odd, for a b of a's shape that is not "
    "C-ordered (broadcast or not), return True where some pair of a's axes tied by a "
    "size-1 axis has both of b's strides non-zero and out of C order, so _in_torch_order "
    "(which already gives (3, 6, 1)) lays it out; b's stride on the size-1 axis must also "
    "survive the core's broadcast (see the NumpyBackend.expand defect below: with that fix "
    "alone this case still differs). [smallfixes, session 27: _odd (_breaks_ties) and expand "
    "fixed (the as_strided case below passes); what is left: b's native, made by numpy's "
    "reshape for unsqueeze, has strides (8, 8, 8) bytes, the size-1 axis's 16 lost. Fix: "
    "tensorweaver_numpy/backend.py NumpyBackend.reshape keeps the strides when it only "
    "inserts size-1 axes (torch's unsqueeze stride), e.g. through as_strided.]",
)
def test_size_1_tie_broken_by_a_broadcast_operand() -> None:
    same_each({"mul_add": _size_1_tie_broken_by_broadcast}, "numpy")


def _size_1_tie_broken_by_strided(m: Any) -> tuple:
    a = _grid(m, 2, 1, 3)
    b = m.arange(12.0, dtype=m.float64).as_strided((2, 1, 1), (1, 2, 1))
    return _layout(a * b), _layout(a + b), _layout(a * b.expand(2, 1, 3))


def test_size_1_tie_broken_by_a_strided_broadcast_operand(spec: str) -> None:
    same_each({"mul_add": _size_1_tie_broken_by_strided}, spec)


def _fractional_name(m: Any, nd: int) -> str:
    x = _leaf(m, 1, 1, *([5] * nd))
    samples = m.full((1, 1, nd), 0.5, dtype=m.float64)
    fn = getattr(m.nn.functional, f"fractional_max_pool{nd}d")
    return _name(fn(x, 2, output_size=2, _random_samples=samples))


def test_fractional_max_pool_grad_fn_names(spec: str) -> None:
    same_each(
        {"2d": lambda m: _fractional_name(m, 2), "3d": lambda m: _fractional_name(m, 3)}, spec
    )


def _loaded_state_shared(m: Any) -> tuple:
    w = m.nn.Parameter(m.ones(3, dtype=m.float64))
    opt = m.optim.Adam([w], lr=0.1)
    w.grad = m.ones(3, dtype=m.float64)
    opt.step()
    w2 = m.nn.Parameter(m.ones(3, dtype=m.float64))
    opt2 = m.optim.Adam([w2], lr=0.1)
    opt2.load_state_dict(opt.state_dict())
    a, b = opt.state[w], opt2.state[w2]
    return a["exp_avg"] is b["exp_avg"], a["step"] is b["step"]


def test_loaded_optimizer_state_is_shared(spec: str) -> None:
    same_each({"adam": _loaded_state_shared}, spec)


def _cummax_packed(m: Any) -> list:
    x = _leaf(m, 2, 3)
    seen = []
    with m.autograd.graph.saved_tensors_hooks(
        lambda t: seen.append(str(t.dtype).split(".")[-1]) or t, lambda t: t
    ):
        x.cummax(1)
    return sorted(seen)


@pytest.mark.xfail(
    strict=True,
    reason="SILENT (low priority): under saved_tensors_hooks, x.cummax(1) packs only its "
    "indices, where torch's CummaxBackward0 packs self and the indices (two pack calls: "
    "float64, int64). Cause: core/tensorweaver/ops/numeric.py _running_extreme (the gather "
    "node packs its index via autograd/node.py saves_integer_output; self is never "
    "offered to the hook). Fix: after saves_integer_output, pass input through the pack "
    "hook as the node's saved self (autograd/graph.py pack_saved on the labelled node), "
    "as torch's node keeps it.",
)
def test_cummax_packs_self_and_indices(spec: str) -> None:
    same_each({"cummax": _cummax_packed}, spec)


def _cast_empty_layout(m: Any) -> tuple:
    x = _grid(m, 3, 4)[:, :0].t()  # (0, 3), strides (1, 4)
    return x.long().stride(), x.float().stride()


def test_empty_cast_keeps_strides() -> None:
    same_each({"empty": _cast_empty_layout}, "numpy")


def test_numpy_only_defects_on_torch_cpu() -> None:
    same_each(
        {"mul_add": _size_1_tie_broken_by_broadcast, "empty": _cast_empty_layout}, "torch:cpu"
    )


NESTED_EXTREMES = {
    "max_dim": lambda m: _nested_hooks(m, lambda m, x: x.max(1)[0]),
    "min_dim0": lambda m: _nested_hooks(m, lambda m, x: x.min(0)[0]),
    "max_0d": lambda m: _nested_hooks(m, lambda m, x: x[0, 0].max(0)[0]),
}


def test_nested_hooks_over_max_with_dim(spec: str) -> None:
    same_each(NESTED_EXTREMES, spec)


def _disabled_while_hooks_on(m: Any) -> Any:
    with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        try:
            with m.autograd.graph.disable_saved_tensors_hooks("not here"):
                return "entered"
        except RuntimeError as e:
            return str(e)


def test_disable_saved_tensors_hooks_while_on(spec: str) -> None:
    same_each({"disabled": _disabled_while_hooks_on}, spec)


def _betas_list(m: Any, name: str) -> tuple:
    opt = getattr(m.optim, name)([m.nn.Parameter(m.ones(2))], betas=[0.8, 0.9])
    return type(opt.defaults["betas"]).__name__, repr(opt)


def test_betas_list_kept_by_adam() -> None:
    same_each({n: (lambda m, n=n: _betas_list(m, n)) for n in ("Adam", "AdamW")}, "numpy")


def test_betas_list_kept_by_adamax_nadam_radam() -> None:
    same_each(
        {n: (lambda m, n=n: _betas_list(m, n)) for n in ("Adamax", "NAdam", "RAdam")}, "numpy"
    )


def _where_broadcast_condition(m: Any) -> tuple:
    a = m.arange(8.0, dtype=m.float64).as_strided((2, 2, 1, 2), (1, 2, 8, 4))
    b = m.arange(8.0, dtype=m.float64).as_strided((2, 2, 1, 2), (4, 1, 4, 2))
    cond = m.arange(4.0).as_strided((2, 2, 1, 1), (1, 2, 1, 2)) > 1
    return _layout(m.where(cond, a, b))


def _add_broadcast_first(m: Any) -> tuple:
    c = m.arange(4.0, dtype=m.float64).as_strided((2, 2, 1, 1), (1, 2, 1, 2))
    a = m.arange(8.0, dtype=m.float64).as_strided((2, 2, 1, 2), (1, 2, 8, 4))
    return _layout(c + a)


BROADCAST_SIZE_1 = {"where": _where_broadcast_condition, "add": _add_broadcast_first}


def test_broadcast_size_1_strides_on_torch_cpu() -> None:
    same_each(BROADCAST_SIZE_1, "torch:cpu")


def test_broadcast_size_1_strides_on_numpy() -> None:
    same_each(BROADCAST_SIZE_1, "numpy")
