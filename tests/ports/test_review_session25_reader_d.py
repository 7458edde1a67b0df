"""Second reading (reader D, session 25) of the session's staged fixes: ``retain_grad`` that
follows a tensor through in-place changes, ``out=`` into the real or imaginary part, ``out=``
that is an input needing a larger broadcast shape, ``resize_`` that grows shared memory, the
layouts of 1-d and adaptive pools, saved-tensor hooks of the two-output reductions, and the
keywords of ``tensor_split`` and its kin. Each program runs on torch 2.13 and on tensorweaver
with only the module changed (:mod:`snippet_outcomes`).

The corners that match torch come first, grouped per area; the defects found follow at the
end, each a strict xfail naming the file and function at fault and the fix proposed.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
from snippet_outcomes import grid as _grid
from snippet_outcomes import leaf as _leaf
from snippet_outcomes import same_each

Program = Callable[[Any], Any]


# -- retain_grad followed through in-place changes ---------------------------------------------


def _retained(m: Any, change: Callable[[Any, Any], Any], loss: Callable[[Any], Any]) -> Any:
    x = _leaf(m, 2, 3)
    y = x * 2
    y.retain_grad()
    change(m, y)
    loss(y).backward()
    return y.grad, x.grad, y.retains_grad


def _hooked(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    seen = []
    y.register_hook(lambda g: seen.append(g.clone()))
    y.retain_grad()
    y.mul_(3)
    (y**2).sum().backward()
    return y.grad, x.grad, seen


def _double(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x**2
    y.retain_grad()
    y.add_(x)
    (g,) = m.autograd.grad((y**2).sum(), x, create_graph=True)
    g.sum().backward()
    return x.grad, y.grad


def _twice(m: Any) -> Any:
    x = _leaf(m, 4)
    y = x + 0
    y.retain_grad()
    y.mul_(2)
    y.add_(1)
    y.sum().backward(retain_graph=True)
    first = y.grad.clone()
    y.sum().backward()
    return first, y.grad, x.grad


def _view_retained(m: Any) -> Any:
    x = _leaf(m, 2, 3)
    y = x * 1
    v = y[0]
    v.retain_grad()
    v.mul_(5)
    (y * y).sum().backward()
    return v.grad, x.grad


def _view_used(m: Any) -> Any:
    x = _leaf(m, 2, 3)
    y = x * 1
    v = y[0]
    v.retain_grad()
    v.mul_(5)
    (v * v).sum().backward()
    return v.grad, x.grad


def _base_retained_view_written(m: Any) -> Any:
    x = _leaf(m, 2, 3)
    y = x * 1
    y.retain_grad()
    y[1].mul_(4)
    (y * y).sum().backward()
    return y.grad, x.grad


def _retained_after(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.mul_(2)
    y.retain_grad()
    y.add_(1)
    (y * y).sum().backward()
    return y.grad, x.grad


def _retained_then_detached(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.retain_grad()
    with m.no_grad():
        y.mul_(2)
    (y * y).sum().backward()
    return y.grad, x.grad


def _retained_out(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.retain_grad()
    m.mul(y, 2, out=y)
    y.sum().backward()
    return y.grad, y.grad_fn is not None


def _retained_setitem(m: Any) -> Any:
    x = _leaf(m, 4)
    y = x * 1
    y.retain_grad()
    y[1:3] = x[:2] * 7
    (y**2).sum().backward()
    return y.grad, x.grad


def _retained_float32(m: Any) -> Any:
    x = _grid(m, 3, dtype=m.float32).requires_grad_()
    y = x.exp()
    y.retain_grad()
    y.sqrt_()
    y.sum().backward()
    return y.grad, x.grad


def _retained_0d(m: Any) -> Any:
    x = m.tensor(2.0, dtype=m.float64, requires_grad=True)
    y = x * 3
    y.retain_grad()
    y.pow_(2)
    y.backward()
    return y.grad, x.grad


def _retained_two_holders(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    z = y  # (the same tensor under another name)
    y.retain_grad()
    z.add_(1)
    (y * 2).sum().backward()
    return z.grad, y.grad


def _retained_then_retain_again(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.retain_grad()
    y.mul_(2)
    y.retain_grad()
    y.mul_(3)
    y.sum().backward()
    return y.grad, x.grad


def _retained_grad_of_older_node(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.retain_grad()
    w = y * 10  # (uses the old version)
    y.add_(1)
    (w.sum() + y.sum()).backward()
    return y.grad, x.grad


RETAIN = {
    "mul_": lambda m: _retained(m, lambda m, y: y.mul_(3), lambda y: (y**2).sum()),
    "add_ then sum": lambda m: _retained(m, lambda m, y: y.add_(1), lambda y: y.sum()),
    "zero_": lambda m: _retained(m, lambda m, y: y.zero_(), lambda y: y.sum()),
    "clamp_": lambda m: _retained(m, lambda m, y: y.clamp_(3, 8), lambda y: (y * y).sum()),
    "copy_ of new values": lambda m: _retained(
        m, lambda m, y: y.copy_(m.ones(2, 3, dtype=m.float64)), lambda y: y.sum()
    ),
    "masked_fill_": lambda m: _retained(
        m, lambda m, y: y.masked_fill_(y > 5, 0.0), lambda y: (y * y).sum()
    ),
    "hook and retain": _hooked,
    "double backward": _double,
    "backward twice": _twice,
    "view retained, view used": lambda m: _view_used(m),
    "base retained, view written": _base_retained_view_written,
    "retained after a change": _retained_after,
    "change under no_grad": _retained_then_detached,
    "out= into a retained tensor": _retained_out,
    "setitem": _retained_setitem,
    "float32 sqrt_": _retained_float32,
    "0-d pow_": _retained_0d,
    "two names": _retained_two_holders,
    "retained twice": _retained_then_retain_again,
    "older version used": _retained_grad_of_older_node,
}


def test_retain_grad_through_in_place_changes(spec: str) -> None:
    same_each(RETAIN, spec)


# -- out= into the real or imaginary part ------------------------------------------------------


def _complex(m: Any, *shape: int) -> Any:
    re = _grid(m, *shape)
    return m.complex(re, -re / 2)


def _into_part(m: Any, part: str, call: Callable[[Any, Any], Any], shape: tuple = (2, 3)) -> Any:
    z = _complex(m, *shape)
    call(m, getattr(z, part))
    return z, getattr(z, part).stride()


OUT_PARTS = {
    "add into real": lambda m: _into_part(m, "real", lambda m, r: m.add(_grid(m, 2, 3), 1, out=r)),
    "mul into imag": lambda m: _into_part(m, "imag", lambda m, r: m.mul(_grid(m, 2, 3), 3, out=r)),
    "exp into real": lambda m: _into_part(
        m, "real", lambda m, r: m.exp(_grid(m, 2, 3) / 10, out=r)
    ),
    "sum with dim into real": lambda m: _into_part(
        m, "real", lambda m, r: m.sum(_grid(m, 2, 3, 4), 2, out=r)
    ),
    "matmul into imag": lambda m: _into_part(
        m, "imag", lambda m, r: m.matmul(_grid(m, 2, 4), _grid(m, 4, 3), out=r)
    ),
    "broadcast into real": lambda m: _into_part(
        m, "real", lambda m, r: m.add(_grid(m, 3), _grid(m, 2, 1), out=r)
    ),
    "transposed part": lambda m: _into_part(
        m, "real", lambda m, r: m.add(_grid(m, 3, 2), 1, out=r.t())
    ),
    "float32 into real": lambda m: (lambda z: (m.neg(m.ones(2, 2), out=z.real), z)[1])(
        m.zeros(2, 2, dtype=m.complex64)
    ),
    "float32 result into complex128 real": lambda m: (
        lambda z: (m.neg(m.ones(2, 2), out=z.real), z)[1]
    )(m.zeros(2, 2, dtype=m.complex128)),
    "int into real": lambda m: (lambda z: (m.add(m.ones(3, dtype=m.int64), 1, out=z.real), z)[1])(
        m.zeros(3, dtype=m.complex128)
    ),
    "0-d real": lambda m: (lambda z: (m.add(m.tensor(2.0, dtype=m.float64), 1, out=z.real), z)[1])(
        m.tensor(1 + 2j, dtype=m.complex128)
    ),
    "empty real": lambda m: (lambda z: (m.add(m.ones(0, 3, dtype=m.float64), 1, out=z.real), z))(
        m.zeros(0, 3, dtype=m.complex128)
    ),
    "real of transposed complex": lambda m: (
        lambda z: (m.mul(_grid(m, 3, 2), 2, out=z.real), z, z.real.stride())[1:]
    )(_complex(m, 2, 3).t()),
    "real then resized": lambda m: (lambda z: (m.add(_grid(m, 2, 3), 1, out=z.real), z)[1])(
        _complex(m, 6)
    ),
    "real layout of result": lambda m: (lambda z: (z.real + 1).stride())(_complex(m, 2, 3)),
    "imag copy_": lambda m: (lambda z: (z.imag.copy_(_grid(m, 3).flip(0)), z)[1])(_complex(m, 3)),
    "real clone layout": lambda m: (lambda r: (r.clone().stride(), r.contiguous().stride()))(
        _complex(m, 2, 3).real
    ),
    "real of a step view": lambda m: (lambda z: (m.add(_grid(m, 3), 5, out=z[::2].real), z)[1])(
        _complex(m, 6)
    ),
}


def test_out_into_the_parts_of_a_complex_tensor(spec: str) -> None:
    same_each(OUT_PARTS, spec)


# -- out= that is an input --------------------------------------------------------------------


def _self_out(m: Any, call: Callable[[Any, Any], Any], x: Any) -> Any:
    r = call(m, x)
    return x, r is x


OUT_INPUT = {
    "add self needs more": lambda m: _self_out(
        m, lambda m, x: m.add(x, _grid(m, 2, 3), out=x), _grid(m, 3)
    ),
    "add other needs more": lambda m: _self_out(
        m, lambda m, x: m.add(_grid(m, 2, 3), x, out=x), _grid(m, 3)
    ),
    "same shape self": lambda m: _self_out(
        m, lambda m, x: m.add(x, _grid(m, 2, 3), out=x), _grid(m, 2, 3)
    ),
    "broadcast from smaller other": lambda m: _self_out(
        m, lambda m, x: m.mul(x, _grid(m, 3), out=x), _grid(m, 2, 3)
    ),
    "0-d self to (3,)": lambda m: _self_out(
        m, lambda m, x: m.add(x, _grid(m, 3), out=x), m.tensor(1.0, dtype=m.float64)
    ),
    "(1,) self to (3,)": lambda m: _self_out(
        m, lambda m, x: m.sub(x, _grid(m, 3), out=x), _grid(m, 1)
    ),
    "(3,1) self to (3,3)": lambda m: _self_out(
        m, lambda m, x: m.maximum(x, _grid(m, 3), out=x), _grid(m, 3, 1)
    ),
    "where self to more": lambda m: _self_out(
        m, lambda m, x: m.where(_grid(m, 2, 3) > 2, x, 0.0, out=x), _grid(m, 3)
    ),
    "pow self to more": lambda m: _self_out(
        m, lambda m, x: m.pow(x, _grid(m, 2, 3), out=x), _grid(m, 3)
    ),
    "int self to more": lambda m: _self_out(
        m,
        lambda m, x: m.add(x, m.ones(2, 3, dtype=m.int64), out=x),
        m.arange(3),
    ),
    "view of self to more": lambda m: (
        lambda x: (m.add(x[0], _grid(m, 2, 3), out=x.view(-1)), x)[1]
    )(_grid(m, 2, 3)),
    "alias of self": lambda m: _self_out(
        m, lambda m, x: m.add(x, _grid(m, 2, 3), out=x.detach()), _grid(m, 3)
    ),
    "empty self to more": lambda m: _self_out(
        m, lambda m, x: m.add(x, _grid(m, 2, 0), out=x), _grid(m, 0)
    ),
    "clamp with tensor bounds": lambda m: _self_out(
        m, lambda m, x: m.clamp(x, min=_grid(m, 2, 3), out=x), _grid(m, 3)
    ),
    "addcmul self to more": lambda m: _self_out(
        m, lambda m, x: m.addcmul(x, _grid(m, 2, 3), _grid(m, 3), out=x), _grid(m, 3)
    ),
    "lerp self to more": lambda m: _self_out(
        m, lambda m, x: m.lerp(x, _grid(m, 2, 3), 0.5, out=x), _grid(m, 3)
    ),
    "method form": lambda m: (lambda x: (x.add_(_grid(m, 2, 3)), x))(_grid(m, 3)),
    "expanded self": lambda m: _self_out(
        m, lambda m, x: m.add(x, 1, out=x), _grid(m, 3).expand(2, 3)
    ),
}


def test_out_that_is_an_input(spec: str) -> None:
    same_each(OUT_INPUT, spec)


# -- resize_ that grows shared memory (grown elements written before they are read) -------------


def _grown_view(m: Any) -> Any:
    base = _grid(m, 6)
    v = base[2:4]
    v.resize_(6)
    v[2:].fill_(-1.0)
    base[3] = 50.0
    return v, base, v.storage_offset()


def _grown_alias(m: Any) -> Any:
    x = _grid(m, 4)
    a = x.detach()
    a.resize_(6)
    a[4:] = 9.0
    x[0] = -3.0
    return a, x, a.storage_offset()


def _grown_alias_of_view(m: Any) -> Any:
    x = _grid(m, 4)
    a = x[1:].detach()
    a.resize_(5)
    a[3:] = 7.0
    x[1] = -2.0
    return a, x


def _grown_base(m: Any) -> Any:
    x = _grid(m, 4)
    v = x[1:3]
    x.resize_(2, 4)
    x[1] = 0.5
    v[0] = 40.0
    return x, v


def _grown_base_then_view(m: Any) -> Any:
    x = _grid(m, 3)
    v = x.view(3)
    x.resize_(5)
    x[3:] = 1.0
    x.mul_(2)
    return x, v


def _grown_base_2d(m: Any) -> Any:
    x = _grid(m, 2, 2)
    t = x.t()
    x.resize_(3, 2)
    x[2] = -1.0
    t[0, 1] = 100.0
    return x, t, t.stride()


def _shrunk_then_grown(m: Any) -> Any:
    x = _grid(m, 6)
    v = x[1:]
    x.resize_(2)
    x.resize_(6)
    v[0] = -5.0
    return x, v


def _grown_view_written_by_base(m: Any) -> Any:
    base = _grid(m, 5)
    v = base[3:]
    v.resize_(2, 2)
    v[1] = 8.0
    base.add_(1)
    return v, base


def _grown_view_int(m: Any) -> Any:
    base = m.arange(5)
    v = base[1:]
    v.resize_(7)
    v[4:] = 0
    v.add_(10)
    return v, base


def _grown_view_numbers(m: Any) -> Any:
    base = _grid(m, 4)
    v = base[2:]
    v.resize_(3)
    v[2] = 1.0
    return v.sum().item(), base.sum().item(), v.numel(), v.is_contiguous()


RESIZE = {
    "view partway": _grown_view,
    "detach alias": _grown_alias,
    "alias of a view": _grown_alias_of_view,
    "base with views": _grown_base,
    "base with a full view": _grown_base_then_view,
    "base with a transposed view": _grown_base_2d,
    "shrunk then grown": _shrunk_then_grown,
    "view seen from its base": _grown_view_written_by_base,
    "int view": _grown_view_int,
    "numbers of a grown view": _grown_view_numbers,
    "view that fits": lambda m: (lambda b: (b[1:3].resize_(4), b))(_grid(m, 6)),
    "view to 0": lambda m: (lambda b: (b[1:].resize_(0), b))(_grid(m, 4)),
    "view resized to 2-d that fits": lambda m: (lambda b: (b[2:].resize_(2, 2), b))(_grid(m, 6)),
    "leaf requiring grad": lambda m: _leaf(m, 3).resize_(5),
    "detach of a leaf requiring grad": lambda m: (lambda b: b.detach().resize_(5)[:3])(_leaf(m, 3)),
    "negative size": lambda m: _grid(m, 3).resize_(-1),
    "grown then viewed": lambda m: (lambda x: (x.resize_(2, 3).fill_(2.0).view(3, 2), x))(
        _grid(m, 3).detach()
    ),
    "grown then expanded": lambda m: (lambda x: x.resize_(4).fill_(1.0).expand(2, 4).sum(0))(
        _grid(m, 2)
    ),
    "view of an expanded": lambda m: (lambda e: (e.resize_(6)[3:].fill_(4.0), e, e.stride()))(
        _grid(m, 3).expand(2, 3)
    ),
}


def test_resize_that_grows_shared_memory(spec: str) -> None:
    same_each(RESIZE, spec)


# -- pool layouts ------------------------------------------------------------------------------


def _pooled(m: Any, pool: Callable[[Any], Any], x: Any) -> Any:
    r = pool(x)
    if isinstance(r, tuple):
        return tuple((t, t.stride(), t.is_contiguous()) for t in r)
    return r, r.stride(), r.is_contiguous()


def _ncl_t(m: Any) -> Any:
    return _grid(m, 2, 6, 3).transpose(1, 2)  # (N, C, L) laid out (N, L, C)


def _nchw_last(m: Any) -> Any:
    return _grid(m, 2, 3, 4, 4).contiguous(memory_format=m.channels_last)


POOLS = {
    "max_pool1d transposed": lambda m: _pooled(
        m, lambda x: m.nn.functional.max_pool1d(x, 2), _ncl_t(m)
    ),
    "max_pool1d indices transposed": lambda m: _pooled(
        m, lambda x: m.nn.functional.max_pool1d(x, 2, return_indices=True), _ncl_t(m)
    ),
    "avg_pool1d transposed": lambda m: _pooled(
        m, lambda x: m.nn.functional.avg_pool1d(x, 2), _ncl_t(m)
    ),
    "avg_pool1d unbatched transposed": lambda m: _pooled(
        m, lambda x: m.nn.functional.avg_pool1d(x, 2), _grid(m, 6, 3).t()
    ),
    "max_pool1d unbatched transposed": lambda m: _pooled(
        m, lambda x: m.nn.functional.max_pool1d(x, 3, 1, return_indices=True), _grid(m, 6, 3).t()
    ),
    "adaptive_avg_pool1d transposed": lambda m: _pooled(
        m, lambda x: m.nn.functional.adaptive_avg_pool1d(x, 2), _ncl_t(m)
    ),
    "adaptive_max_pool1d transposed": lambda m: _pooled(
        m, lambda x: m.nn.functional.adaptive_max_pool1d(x, 2, True), _ncl_t(m)
    ),
    "adaptive_avg_pool2d channels_last": lambda m: _pooled(
        m, lambda x: m.nn.functional.adaptive_avg_pool2d(x, (2, 3)), _nchw_last(m)
    ),
    "adaptive_max_pool2d channels_last": lambda m: _pooled(
        m, lambda x: m.nn.functional.adaptive_max_pool2d(x, 2, True), _nchw_last(m)
    ),
    "adaptive_avg_pool2d to 1x1": lambda m: _pooled(
        m, lambda x: m.nn.functional.adaptive_avg_pool2d(x, 1), _nchw_last(m)
    ),
    "max_pool2d channels_last": lambda m: _pooled(
        m, lambda x: m.nn.functional.max_pool2d(x, 2, return_indices=True), _nchw_last(m)
    ),
    "avg_pool2d channels_last": lambda m: _pooled(
        m, lambda x: m.nn.functional.avg_pool2d(x, 2), _nchw_last(m)
    ),
    "max_pool1d strided input": lambda m: _pooled(
        m, lambda x: m.nn.functional.max_pool1d(x, 2), _grid(m, 2, 3, 8)[..., ::2]
    ),
    "adaptive_avg_pool1d unbatched": lambda m: _pooled(
        m, lambda x: m.nn.functional.adaptive_avg_pool1d(x, 4), _grid(m, 6, 3).t()
    ),
    "avg_pool1d grad layout": lambda m: (
        lambda x: (m.nn.functional.avg_pool1d(x, 2).sum().backward(), x.grad)[1]
    )(_grid(m, 2, 6, 3).transpose(1, 2).requires_grad_()),
    "max_pool1d float32 transposed": lambda m: _pooled(
        m,
        lambda x: m.nn.functional.max_pool1d(x, 2),
        _grid(m, 2, 6, 3, dtype=m.float32).transpose(1, 2),
    ),
}


def test_pool_result_layouts(spec: str) -> None:
    same_each(POOLS, spec)


# -- saved-tensor hooks of the two-output reductions ------------------------------------------


def _with_hooks(m: Any, call: Callable[[Any], Any], x: Any) -> Any:
    packed = []

    def pack(t: Any) -> Any:
        packed.append((tuple(t.shape), str(t.dtype).split(".")[-1]))
        return t * 1

    def unpack(t: Any) -> Any:
        packed.append("unpack")
        return t

    with m.autograd.graph.saved_tensors_hooks(pack, unpack):
        outs = call(x)
    sum(o.sum() * (i + 1) for i, o in enumerate(outs)).backward()
    return sorted(p for p in packed if p != "unpack"), packed.count("unpack") > 0, x.grad


def _doubling_unpack(m: Any) -> Any:
    x = _leaf(m, 2, 3)
    with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 2):
        mn, mx = m.aminmax(x, dim=1)
    (mn + mx).sum().backward()
    return x.grad


def _hooks_outside(m: Any) -> Any:
    x = _leaf(m, 2, 3)
    v, mean = m.var_mean(x, 1)
    with m.autograd.graph.saved_tensors_hooks(lambda t: 1 / 0, lambda t: t):
        (v + mean).sum().backward()
    return x.grad


def _saved_changed(m: Any) -> Any:
    x = _leaf(m, 2, 3)
    s, mean = m.std_mean(x, 1)
    s.mul_(2)
    (s + mean).sum().backward()
    return x.grad


HOOKS = {
    "aminmax": lambda m: _with_hooks(m, lambda x: m.aminmax(x), _leaf(m, 2, 3)),
    "aminmax dim": lambda m: _with_hooks(m, lambda x: m.aminmax(x, dim=-1), _leaf(m, 2, 3)),
    "aminmax keepdim": lambda m: _with_hooks(
        m, lambda x: m.aminmax(x, dim=0, keepdim=True), _leaf(m, 2, 3)
    ),
    "var_mean": lambda m: _with_hooks(m, lambda x: m.var_mean(x, 1), _leaf(m, 2, 3)),
    "var_mean all": lambda m: _with_hooks(m, lambda x: m.var_mean(x), _leaf(m, 2, 3)),
    "std_mean": lambda m: _with_hooks(m, lambda x: m.std_mean(x, 0), _leaf(m, 3, 2)),
    "std_mean correction 0": lambda m: _with_hooks(
        m, lambda x: m.std_mean(x, (0, 1), correction=0), _leaf(m, 3, 2)
    ),
    "var_mean 0-d": lambda m: _with_hooks(
        m, lambda x: m.var_mean(x, correction=0), m.tensor(3.0, requires_grad=True)
    ),
    "var_mean float32": lambda m: _with_hooks(
        m, lambda x: m.var_mean(x, 1), _grid(m, 2, 3, dtype=m.float32).requires_grad_()
    ),
    "unpack doubles": _doubling_unpack,
    "hooks only at backward": _hooks_outside,
    "saved output changed": _saved_changed,
}


def test_saved_tensor_hooks_of_two_output_reductions(spec: str) -> None:
    same_each(HOOKS, spec)


# -- tensor_split and kin: keywords, tensors, operators ----------------------------------------


SPLITS = {
    "sections=": lambda m: _grid(m, 7).tensor_split(sections=3),
    "indices=": lambda m: _grid(m, 7).tensor_split(indices=[1, 5]),
    "indices= tuple": lambda m: _grid(m, 7).tensor_split(indices=(2,)),
    "tensor_indices_or_sections=": lambda m: _grid(m, 7).tensor_split(
        tensor_indices_or_sections=m.tensor([2, 3])
    ),
    "tensor_indices_or_sections= 0-d": lambda m: _grid(m, 7).tensor_split(
        tensor_indices_or_sections=m.tensor(3)
    ),
    "sections= with dim=": lambda m: _grid(m, 2, 5).tensor_split(sections=2, dim=1),
    "indices= negative dim": lambda m: _grid(m, 2, 5).tensor_split(indices=[1, 3], dim=-1),
    "sections= one-element tensor": lambda m: _grid(m, 7).tensor_split(m.tensor([3])),
    "sections= keyword tensor": lambda m: m.tensor_split(_grid(m, 7), sections=m.tensor(3)),
    "sections= bool tensor": lambda m: m.tensor_split(_grid(m, 7), sections=m.tensor(True)),
    "sections= float tensor": lambda m: m.tensor_split(_grid(m, 7), sections=m.tensor(3.0)),
    "sections= list": lambda m: _grid(m, 7).tensor_split(sections=[2]),
    "indices= int": lambda m: _grid(m, 7).tensor_split(indices=2),
    "sections= 0": lambda m: _grid(m, 7).tensor_split(sections=0),
    "unknown keyword": lambda m: _grid(m, 7).tensor_split(parts=2),
    "function sections=": lambda m: m.tensor_split(_grid(m, 2, 6), sections=3, dim=1),
    "hsplit sections=": lambda m: _grid(m, 2, 6).hsplit(sections=3),
    "hsplit indices=": lambda m: _grid(m, 2, 6).hsplit(indices=[1, 4]),
    "vsplit sections=": lambda m: _grid(m, 4, 2).vsplit(sections=2),
    "vsplit indices=": lambda m: m.vsplit(_grid(m, 4, 2), indices=[3]),
    "dsplit sections=": lambda m: _grid(m, 1, 2, 4).dsplit(sections=2),
    "dsplit indices=": lambda m: _grid(m, 1, 2, 4).dsplit(indices=[1]),
    "hsplit 1-d": lambda m: _grid(m, 6).hsplit(sections=2),
    "hsplit uneven": lambda m: _grid(m, 2, 5).hsplit(sections=2),
    "dsplit 2-d": lambda m: _grid(m, 2, 4).dsplit(2),
    "empty sections": lambda m: _grid(m, 0, 3).tensor_split(sections=2),
}


def test_split_keywords(spec: str) -> None:
    same_each(SPLITS, spec)


def _graph(t: Any) -> Any:
    fn = t.grad_fn
    return type(fn).__name__, tuple(
        None if f is None else type(f).__name__ for f, _ in fn.next_functions
    )


def _argsort_no_grad(m: Any) -> Any:
    x = _leaf(m, 3) * 1
    v = x[:2]
    x.mul_(2)
    with m.no_grad():
        return v.argsort(), v.sort().indices


OPERATORS = {
    "radd edges": lambda m: _graph(2 + _leaf(m, 3)),
    "rmul edges": lambda m: _graph(2 * _leaf(m, 3)),
    "radd of bool": lambda m: True + m.tensor([1, 2]),
    "rmul int by float tensor": lambda m: 3 * m.tensor([1.5, 2.0]),
    "radd complex number": lambda m: (1 + 2j) + _grid(m, 2),
    "rmul float32 by a Python float": lambda m: 0.1 * _grid(m, 3, dtype=m.float32),
    "radd int8": lambda m: 200 + m.tensor([1, 2], dtype=m.int8),
    "__radd__ called": lambda m: _grid(m, 2).__radd__(_grid(m, 2)),
    "__rmul__ with tensor": lambda m: _graph(_leaf(m, 2).__rmul__(_leaf(m, 2))),
    "rmul grad": lambda m: (lambda x: ((3 * x).sum().backward(), x.grad)[1])(_leaf(m, 3)),
    "radd 0-d": lambda m: 1 + m.tensor(2.0),
    "sum() of tensors": lambda m: sum([_grid(m, 2), _grid(m, 2)]),
    "argsort of a changed view": lambda m: (
        lambda x: (lambda v: (x.mul_(2), v.argsort())[1])(x[:2])
    )(_leaf(m, 3) * 1),
    "argsort under no_grad of a changed view": _argsort_no_grad,
    "argsort of a leaf view": lambda m: (lambda x: x[1:].argsort(descending=True))(_leaf(m, 3)),
    "argsort out=": lambda m: (lambda o: (m.argsort(_grid(m, 3).flip(0), out=o), o)[1])(
        m.empty(0, dtype=m.int64)
    ),
}


def test_operators_and_argsort(spec: str) -> None:
    same_each(OPERATORS, spec)


# -- ctc_loss's saved targets -----------------------------------------------------------------


def _ctc(m: Any, change: Callable[[Any], Any], reduction: str = "mean", flat: bool = False) -> Any:
    logits = (_grid(m, 5, 2, 4) / 7).sin().requires_grad_()
    lp = logits.log_softmax(2)
    targets = m.tensor([1, 2, 3, 1, 2] if flat else [[1, 2, 3], [1, 2, 0]])
    loss = m.nn.functional.ctc_loss(
        lp, targets, m.tensor([5, 4]), m.tensor([3, 2]), reduction=reduction
    )
    change(targets)
    loss.backward()
    return loss, logits.grad


CTC = {
    "unchanged": lambda m: _ctc(m, lambda t: None),
    "targets changed": lambda m: _ctc(m, lambda t: t.fill_(1)),
    "targets changed, sum": lambda m: _ctc(m, lambda t: t.add_(0), "sum"),
    "targets changed, none": lambda m: _ctc(m, lambda t: t.zero_(), "none"),
    "flat targets changed": lambda m: _ctc(m, lambda t: t.fill_(2), flat=True),
    "flat targets unchanged": lambda m: _ctc(m, lambda t: None, flat=True),
    "targets view changed": lambda m: _ctc(m, lambda t: t[0].fill_(1)),
}


def test_ctc_saved_targets(spec: str) -> None:
    same_each(CTC, spec)


# -- more corners ------------------------------------------------------------------------------


def _warned(m: Any, call: Callable[[], Any]) -> Any:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = call()
    return r, len(w) > 0


def _out_view_resized(m: Any) -> Any:
    x = _grid(m, 3)
    v = x[:2]
    r, warned = _warned(m, lambda: m.add(_grid(m, 2, 2), 1, out=v))
    return v, x, warned


def _out_alias_resized(m: Any) -> Any:
    x = _grid(m, 3)
    a = x.detach()
    r, warned = _warned(m, lambda: m.mul(_grid(m, 2, 3), 2, out=a))
    return a, x, warned


def _out_other_view_bigger(m: Any) -> Any:
    x = _grid(m, 4)
    r, warned = _warned(m, lambda: m.add(x[:2], _grid(m, 3, 2), out=x[2:]))
    return x, warned


def _retain_then_view_inplace_base_loss(m: Any) -> Any:
    x = _leaf(m, 2, 2)
    y = x * 2
    y.retain_grad()
    y.view(-1).add_(1)
    (y * y).sum().backward()
    return y.grad, x.grad


def _retain_hook_order(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.retain_grad()
    y.register_hook(lambda g: g * 10)
    y.add_(1)
    y.sum().backward()
    return y.grad, x.grad


def _retain_hook_after_change(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.retain_grad()
    y.add_(1)
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    return y.grad, x.grad


def _retain_autograd_grad(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.retain_grad()
    y.mul_(2)
    (g,) = m.autograd.grad(y.sum(), x)
    return y.grad, g


def _retain_inplace_by_out(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.retain_grad()
    y += x
    (y * y).sum().backward()
    return y.grad, x.grad


def _retain_leaf_inplace(m: Any) -> Any:
    x = _leaf(m, 3)
    x.retain_grad()
    with m.no_grad():
        x.mul_(2)
    x.sum().backward()
    return x.grad, x.retains_grad


def _retain_complex(m: Any) -> Any:
    x = _leaf(m, 3)
    z = m.complex(x, x * 2)
    z.retain_grad()
    z.mul_(1j)
    z.abs().sum().backward()
    return z.grad, x.grad


def _hooks_aminmax_no_grad_input(m: Any) -> Any:
    packed = []
    with m.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
        m.aminmax(_grid(m, 2, 3), dim=1)
        m.var_mean(_grid(m, 2, 3), 1)
    return len(packed)


def _hooks_under_no_grad(m: Any) -> Any:
    packed = []
    x = _leaf(m, 2, 3)
    with m.autograd.graph.saved_tensors_hooks(lambda t: packed.append(1) or t, lambda t: t):
        with m.no_grad():
            m.std_mean(x, 1)
    return len(packed)


def _resized_view_then_base_view(m: Any) -> Any:
    base = _grid(m, 4)
    v = base[1:]
    w = base[:2]
    v.resize_(5)
    v[3:] = 0.0
    w.fill_(-1.0)
    return base, v, w


def _resize_alias_twice(m: Any) -> Any:
    x = _grid(m, 2)
    a = x.detach()
    a.resize_(3)
    a[2] = 5.0
    a.resize_(4)
    a[3] = 6.0
    x[0] = 0.0
    return a, x


MORE = {
    "out= a view needing more": _out_view_resized,
    "out= an alias needing more": _out_alias_resized,
    "out= view of an input, other slice": _out_other_view_bigger,
    "retained base, written through view(-1)": _retain_then_view_inplace_base_loss,
    "retain then hook then change": _retain_hook_order,
    "retain, change, then hook": _retain_hook_after_change,
    "retained, autograd.grad": _retain_autograd_grad,
    "retained, +=": _retain_inplace_by_out,
    "retained leaf changed under no_grad": _retain_leaf_inplace,
    "retained complex mul_": _retain_complex,
    "hooks without grad": _hooks_aminmax_no_grad_input,
    "hooks under no_grad": _hooks_under_no_grad,
    "grown view then another view written": _resized_view_then_base_view,
    "alias grown twice": _resize_alias_twice,
    "aminmax empty dim": lambda m: m.aminmax(m.zeros(0, 3), dim=1),
    "aminmax empty all": lambda m: m.aminmax(m.zeros(0, 3)),
    "var_mean negative dim tuple": lambda m: m.var_mean(_grid(m, 2, 3, 2), (-1, 0)),
    "std_mean keepdim": lambda m: m.std_mean(_grid(m, 2, 3), -1, keepdim=True),
    "aminmax int": lambda m: m.aminmax(m.tensor([[3, 1], [2, 5]]), dim=0),
    "aminmax bool": lambda m: m.aminmax(m.tensor([True, False])),
    "aminmax grad ties": lambda m: (lambda x: (sum(m.aminmax(x)).backward(), x.grad)[1])(
        m.tensor([1.0, 3.0, 3.0, 1.0], dtype=m.float64, requires_grad=True)
    ),
    "adaptive_avg_pool3d channels_last_3d": lambda m: _pooled(
        m,
        lambda x: m.nn.functional.adaptive_avg_pool3d(x, 2),
        _grid(m, 1, 2, 4, 4, 4).contiguous(memory_format=m.channels_last_3d),
    ),
    "adaptive_max_pool1d unbatched": lambda m: _pooled(
        m, lambda x: m.nn.functional.adaptive_max_pool1d(x, 3, True), _grid(m, 6, 2).t()
    ),
    "max_pool1d ceil_mode transposed": lambda m: _pooled(
        m, lambda x: m.nn.functional.max_pool1d(x, 2, ceil_mode=True), _grid(m, 2, 5, 3).mT
    ),
    "avg_pool1d padding transposed": lambda m: _pooled(
        m, lambda x: m.nn.functional.avg_pool1d(x, 3, 1, 1), _grid(m, 2, 5, 3).mT
    ),
    "adaptive_avg_pool2d unbatched channels": lambda m: _pooled(
        m,
        lambda x: m.nn.functional.adaptive_avg_pool2d(x, (1, 2)),
        _grid(m, 4, 4, 3).permute(2, 0, 1),
    ),
    "split pieces sections= tensor int32": lambda m: _grid(m, 6).tensor_split(
        sections=m.tensor(2, dtype=m.int32)
    ),
    "tensor_split tensor int32": lambda m: _grid(m, 6).tensor_split(m.tensor([2], dtype=m.int32)),
    "tensor_split 2-d tensor": lambda m: _grid(m, 6).tensor_split(m.tensor([[2]])),
    "tensor_split both keywords": lambda m: _grid(m, 6).tensor_split(sections=2, indices=[1]),
    "dsplit sections= not divisible": lambda m: _grid(m, 1, 2, 5).dsplit(sections=2),
    "vsplit 1-d": lambda m: _grid(m, 4).vsplit(2),
    "tensor_split dim out of range": lambda m: _grid(m, 4).tensor_split(sections=2, dim=1),
    "tensor_split indices past the end": lambda m: _grid(m, 4).tensor_split(indices=[1, 9, 2]),
    "radd of a numpy scalar": lambda m: np.float64(2.0) + _grid(m, 2),
    "rmul of a 0-d tensor by an int tensor": lambda m: m.tensor(2) * _grid(m, 2),
    "rsub still reversed": lambda m: 1 - _grid(m, 2),
}


def test_more_corners(spec: str) -> None:
    same_each(MORE, spec)


def _retain_double_backward_view(m: Any) -> Any:
    x = _leaf(m, 2, 2)
    y = x**3
    y.retain_grad()
    y.mul_(2)
    (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
    (g * g).sum().backward()
    return x.grad, y.grad


def _retain_chain(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    z = y * 2
    y.retain_grad()
    z.retain_grad()
    y.add_(1)
    z.mul_(y)
    z.sum().backward()
    return y.grad, z.grad, x.grad


def _retain_out_into(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.retain_grad()
    y.mul_(y.detach())
    y.sum().backward()
    return y.grad, x.grad


def _retain_grad_accumulates(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.retain_grad()
    y.mul_(2)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    return y.grad


def _retain_version_then_used(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x.exp()
    y.retain_grad()
    y.add_(1)
    y.sum().backward()
    return y.grad, x.grad


def _out_real_of_requires_grad(m: Any) -> Any:
    z = _complex(m, 3).requires_grad_()
    return m.add(_grid(m, 3), 1, out=z.detach().real), z


def _out_real_broadcast_to_more(m: Any) -> Any:
    z = _complex(m, 3)
    return m.add(_grid(m, 2, 3), 1, out=z.real), z


def _resize_view_then_clone_ops(m: Any) -> Any:
    base = _grid(m, 3, 2)
    v = base[1]
    v.resize_(2, 3)
    v[1:] = 0.0
    return v.sum(1), base.t().contiguous(), v.t().stride()


def _resize_view_of_t(m: Any) -> Any:
    base = _grid(m, 2, 3)
    v = base.t()
    v.resize_(7)
    v[6] = -1.0  # (the grown element, written before it is read)
    base[1, 0] = 9.0
    return v, base, v.stride()


MORE2 = {
    "retained, double backward of cube": _retain_double_backward_view,
    "retained chain": _retain_chain,
    "retained, mul_ by own values": _retain_out_into,
    "retained grad accumulates": _retain_grad_accumulates,
    "retained exp then add_": _retain_version_then_used,
    "out= real of a detached": _out_real_of_requires_grad,
    "out= real needing more": _out_real_broadcast_to_more,
    "grown row of a matrix": _resize_view_then_clone_ops,
    "transposed view grown": _resize_view_of_t,
    "int8 self needing more": lambda m: _self_out(
        m, lambda m, x: m.mul(x, m.ones(2, 2, dtype=m.int8), out=x), m.ones(2, dtype=m.int8)
    ),
    "bool self needing more": lambda m: _self_out(
        m, lambda m, x: m.logical_and(x, m.ones(2, 2, dtype=m.bool), out=x), m.ones(2, dtype=m.bool)
    ),
    "complex self needing more": lambda m: _self_out(
        m, lambda m, x: m.add(x, _complex(m, 2, 2), out=x), _complex(m, 2)
    ),
    "atan2 self needing more": lambda m: _self_out(
        m, lambda m, x: m.atan2(x, _grid(m, 2, 2), out=x), _grid(m, 2)
    ),
    "bitwise_and self needing more": lambda m: _self_out(
        m, lambda m, x: m.bitwise_and(x, m.ones(2, 3, dtype=m.int64), out=x), m.arange(3)
    ),
    "eq self needing more": lambda m: _self_out(
        m, lambda m, x: m.eq(x, _grid(m, 2, 2), out=x), _grid(m, 2)
    ),
    "var_mean hooks double backward": lambda m: (
        lambda x: (
            lambda vm: (
                m.autograd.grad((vm[0] + vm[1]).sum(), x, create_graph=True)[0].sum().backward(),
                x.grad,
            )[1]
        )(m.var_mean(x, 1))
    )(_leaf(m, 2, 3)),
}


def test_more_corners_two(spec: str) -> None:
    same_each(MORE2, spec)


def _strided(t: Any) -> Any:
    return t, t.stride()


PART_LAYOUTS = {
    "real, contiguous": lambda m: _strided(_complex(m, 2, 3).real.contiguous()),
    "real of step view, neg": lambda m: _strided(-_complex(m, 6)[::2].real),
    "imag 0-d, + 1": lambda m: _strided(m.tensor(1 + 2j).imag + 1),
    "real of transposed, copy_ into": lambda m: (
        lambda z: (z.t().real.copy_(_grid(m, 3, 2)), z)[1]
    )(_complex(m, 2, 3)),
    "real of transposed, sum dim": lambda m: _complex(m, 2, 3).t().real.sum(0),
}


def test_layouts_of_the_parts(spec: str) -> None:
    same_each(PART_LAYOUTS, spec)


#: results of ops on the real or imaginary part of a transposed complex tensor (a layout
#: that is not dense): torch lays them out as the part's strides sort
NON_DENSE_PARTS = {
    "real of transposed, + 1": lambda m: _strided(_complex(m, 2, 3).t().real + 1),
    "imag of transposed, exp": lambda m: _strided((_complex(m, 2, 3).t().imag / 10).exp()),
    "real of transposed, clone": lambda m: _strided(_complex(m, 2, 3).t().real.clone()),
    "real of transposed, empty_like strides": lambda m: m.empty_like(
        _complex(m, 2, 3).t().real
    ).stride(),
    "real of transposed, zeros_like": lambda m: _strided(m.zeros_like(_complex(m, 2, 3).t().real)),
    "real of permuted 3-d, mul": lambda m: _strided(_complex(m, 2, 3, 4).permute(2, 0, 1).real * 2),
    "real of transposed, out= fresh": lambda m: (
        lambda o: (m.add(_complex(m, 2, 3).t().real, 1, out=o), _strided(o))[1]
    )(m.empty(0, dtype=m.float64)),
    "real of transposed, where": lambda m: _strided(
        m.where(_complex(m, 2, 3).t().real > 2, 1.0, 0.0)
    ),
}


def test_non_dense_part_layouts_on_torch() -> None:
    same_each(NON_DENSE_PARTS, "torch:cpu")


def _pool_grad(m: Any, pool: Callable[[Any], Any], x: Any) -> Any:
    x.requires_grad_()
    out = pool(x)
    out = out[0] if isinstance(out, tuple) else out
    (out * _grid(m, *out.shape)).sum().backward()
    return x.grad, x.grad.stride()


POOL_GRADS = {
    "adaptive_max_pool2d channels_last grad": lambda m: _pool_grad(
        m, lambda x: m.nn.functional.adaptive_max_pool2d(x, 2), _nchw_last(m)
    ),
    "adaptive_avg_pool2d channels_last grad": lambda m: _pool_grad(
        m, lambda x: m.nn.functional.adaptive_avg_pool2d(x, 3), _nchw_last(m)
    ),
    "max_pool1d transposed grad": lambda m: _pool_grad(
        m, lambda x: m.nn.functional.max_pool1d(x, 2), _ncl_t(m).detach()
    ),
    "adaptive_avg_pool1d transposed grad": lambda m: _pool_grad(
        m, lambda x: m.nn.functional.adaptive_avg_pool1d(x, 4), _ncl_t(m).detach()
    ),
    "ctc int32 targets changed": lambda m: (
        lambda lp, t: (
            m.nn.functional.ctc_loss(lp, t, m.tensor([4]), m.tensor([2])),
            t.fill_(1),
        )[0]
    )(
        (_grid(m, 4, 1, 3) / 5).log_softmax(2),
        m.tensor([[1, 2]], dtype=m.int32),
    ),
}


def test_pool_gradients_and_ctc(spec: str) -> None:
    same_each(POOL_GRADS, spec)


def _view_retained_base_written(m: Any) -> Any:
    x = _leaf(m, 2, 3)
    y = x * 1
    v = y[0]
    v.retain_grad()
    y.mul_(2)
    (v * v).sum().backward()
    return v.grad, x.grad


def _base_retained_view_loss(m: Any) -> Any:
    x = _leaf(m, 2, 3)
    y = x * 1
    y.retain_grad()
    v = y[1]
    v.add_(3)
    (v * v).sum().backward()
    return y.grad, x.grad


def _view_retained_then_written_loss_both(m: Any) -> Any:
    x = _leaf(m, 4)
    y = x * 2
    v = y[1:3]
    v.retain_grad()
    v.mul_(3)
    (v.sum() + y.sum()).backward()
    return v.grad, x.grad


def _detach_alias_retained(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 1
    y.retain_grad()
    with m.no_grad():
        y.detach().add_(1)
    (y * y).sum().backward()
    return y.grad, x.grad


VIEW_RETAIN = {
    "retained, alias written": _detach_alias_retained,
}


def test_retain_grad_with_views(spec: str) -> None:
    same_each(VIEW_RETAIN, spec)


OUT_INPUT_MORE = {
    "cat out= an input": lambda m: _self_out(m, lambda m, x: m.cat([x, x], out=x), _grid(m, 2)),
    "cumsum out= input": lambda m: _self_out(m, lambda m, x: m.cumsum(x, 0, out=x), _grid(m, 4)),
    "abs out= input": lambda m: _self_out(m, lambda m, x: m.abs(x, out=x), -_grid(m, 3)),
    "add out= input, 0-d other": lambda m: _self_out(
        m, lambda m, x: m.add(x, m.tensor(2.0, dtype=m.float64), out=x), _grid(m, 3)
    ),
    "sub out= second input needing more": lambda m: _self_out(
        m, lambda m, x: m.sub(_grid(m, 2, 2), x, alpha=2, out=x), _grid(m, 2)
    ),
    "div out= input needing more, rounding": lambda m: _self_out(
        m, lambda m, x: m.div(x, _grid(m, 2, 3), rounding_mode="floor", out=x), _grid(m, 3)
    ),
}


def test_out_that_is_an_input_more(spec: str) -> None:
    same_each(OUT_INPUT_MORE, spec)


def _retained_data_written(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 2
    y.retain_grad()
    y.data.mul_(3)
    (y * y).sum().backward()
    return y.grad, x.grad


def _retained_requires_grad_check(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 2
    y.retain_grad()
    y.add_(1)
    return y.retains_grad, y.is_leaf, y.requires_grad, y.grad_fn is not None


def _retained_integer_in_place(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 2
    y.retain_grad()
    y.floor_()
    (y * x).sum().backward()
    return y.grad, x.grad


def _retained_then_detach_(m: Any) -> Any:
    x = _leaf(m, 3)
    y = x * 2
    y.retain_grad()
    y.mul_(2)
    z = y * 1
    y.detach_()
    z.sum().backward()
    return y.grad, x.grad, y.retains_grad


RETAIN_MORE = {
    "retained, written through .data": _retained_data_written,
    "retained flags after a change": _retained_requires_grad_check,
    "retained, floor_": _retained_integer_in_place,
}


def test_retain_grad_more(spec: str) -> None:
    same_each(RETAIN_MORE, spec)


# -- defects found -----------------------------------------------------------------------------


def test_retained_then_shape_changed_in_place(spec: str) -> None:
    same_each(
        {
            "transpose_": lambda m: _retained(m, lambda m, y: y.t_(), lambda y: (y * y).sum()),
            "unsqueeze_": lambda m: _retained(m, lambda m, y: y.unsqueeze_(0), lambda y: y.sum()),
        },
        spec,
    )


def test_retained_view_written_loss_through_base(spec: str) -> None:
    same_each(
        {
            "view retained, view written": _view_retained,
            "view retained, view written, both in loss": _view_retained_then_written_loss_both,
        },
        spec,
    )


def test_retained_view_of_a_base_written(spec: str) -> None:
    same_each({"view retained, base written": _view_retained_base_written}, spec)


def test_base_retained_written_through_a_view_loss_via_the_view(spec: str) -> None:
    same_each({"base retained, view written, view loss": _base_retained_view_loss}, spec)


def test_resize_grows_an_alias_of_a_leaf_requiring_grad(spec: str) -> None:
    same_each(
        {
            "view of detach": lambda m: (lambda b: b.detach()[1:].resize_(9).numel())(_leaf(m, 3)),
        },
        spec,
    )


SIZE_ONE_POOLS = {
    "avg_pool1d one channel": lambda m: _pooled(
        m, lambda x: m.nn.functional.avg_pool1d(x, 2), _grid(m, 2, 4, 1).transpose(1, 2)
    ),
    "avg_pool1d length one": lambda m: _pooled(
        m, lambda x: m.nn.functional.avg_pool1d(x, 1), _grid(m, 2, 1, 3).transpose(1, 2)
    ),
}


@pytest.mark.parametrize("on", ["numpy"])
def test_line_pool_layout_with_a_size_one_axis(on: str) -> None:
    same_each(SIZE_ONE_POOLS, on)


def test_line_pool_layout_with_a_size_one_axis_on_torch() -> None:
    same_each(SIZE_ONE_POOLS, "torch:cpu")


def test_tensor_split_indices_or_sections_keyword(spec: str) -> None:
    same_each(
        {
            "method": lambda m: _grid(m, 7).tensor_split(indices_or_sections=2),
            "function": lambda m: m.tensor_split(_grid(m, 7), indices_or_sections=[2]),
            "hsplit": lambda m: m.hsplit(_grid(m, 2, 4), indices_or_sections=2),
        },
        spec,
    )


def test_hsplit_with_a_tensor_of_indices(spec: str) -> None:
    same_each(
        {
            "hsplit": lambda m: _grid(m, 2, 6).hsplit(m.tensor([1, 2])),
            "vsplit": lambda m: m.vsplit(_grid(m, 4, 2), m.tensor([1, 3])),
        },
        spec,
    )


@pytest.mark.parametrize("on", ["numpy"])
def test_non_dense_part_layouts(on: str) -> None:
    same_each(NON_DENSE_PARTS, on)


def test_view_as_real_of_a_transposed_layout_kept(spec: str) -> None:
    same_each(
        {
            "view_as_real of transposed": lambda m: _strided(
                m.view_as_real(_complex(m, 2, 3).t()) + 0
            )
        },
        spec,
    )


def test_retains_grad_after_detach_(spec: str) -> None:
    same_each(
        {
            "after a change": _retained_then_detach_,
            "plain": lambda m: (lambda y: (y.retain_grad(), y.detach_(), y.retains_grad)[2])(
                _leaf(m, 3) * 2
            ),
        },
        spec,
    )
