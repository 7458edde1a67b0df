"""Second reading (reader A) of f97759b (contiguous copies, stack/cat layouts, the NumPy
plugin's mixed layouts, out= partial overlaps, index_put_ into repeated memory), 94becc0
(bare arrays into ``_assign``, detach/.data/Parameter aliases), f7befe1 (outer/ger,
named_modules memo, optimizer numbering, overlapping in-place writes, NumPy ufuncs, split
views, output_nr, Function gradient shapes, error classes, Module.to(complex)) and fd00826
(grad-mode blocks, add_/sub_ with alpha): each snippet runs on torch 2.13 and on
tensorweaver with only the import changed.

First the defects found, each a strict xfail naming the file and function at fault and the
fix proposed; then the corners that matched torch, grouped by what the commits touched, kept
so that they keep matching.
"""

from __future__ import annotations

import contextvars
import threading
import warnings
from typing import Any, Callable

import numpy as np
import pytest
from snippet_outcomes import same, same_each

BIG = 1 << 16  # (the size from which in-place updates write into the tensor's own memory)


def _grid(m: Any, *shape: int, dtype: Any = None) -> Any:
    return m.arange(float(np.prod(shape)), dtype=dtype or m.float64).reshape(shape)


def _channels_last(m: Any) -> Any:
    return _grid(m, 2, 3, 4, 5).contiguous(memory_format=m.channels_last)


def _f64(m: Any, *values: Any) -> Any:
    return m.tensor(list(values), dtype=m.float64)


# -- defects: silent ones first --------------------------------------------------------------


#: Writes of a value v (made, then set to require grad) into x = zeros(1).expand(3), whose
#: elements are one memory location.
EXPAND_WRITES: dict[str, tuple[Callable[[Any], Any], Callable[[Any, Any, Any], Any]]] = {
    "index_put_accumulate": (
        lambda m: _f64(m, 1.0, 2.0, 3.0),
        lambda m, x, v: x.index_put_((m.tensor([0, 2, 2]),), v, accumulate=True),
    ),
    "index_put": (
        lambda m: _f64(m, 1.0, 2.0, 3.0),
        lambda m, x, v: x.index_put_((m.tensor([0, 2, 2]),), v),
    ),
    "masked_fill": (
        lambda m: m.tensor(5.0, dtype=m.float64),
        lambda m, x, v: x.masked_fill_(m.tensor([True, False, False]), v),
    ),
}


@pytest.mark.parametrize("write", EXPAND_WRITES)
def test_write_into_expand_gradient(spec: str, write: str) -> None:
    make, written = EXPAND_WRITES[write]

    def program(m: Any) -> Any:
        v = make(m).requires_grad_()
        x = m.zeros(1, dtype=m.float64).expand(3)
        written(m, x, v)
        (x * _f64(m, 1.0, 10.0, 100.0)).sum().backward()
        return x, v.grad

    same(program, spec)


def test_index_put_into_expand_of_a_graph_tensor(spec: str) -> None:
    def program(m: Any) -> Any:
        b = m.zeros(1, dtype=m.float64, requires_grad=True)
        v = _f64(m, 1.0, 2.0, 3.0).requires_grad_()
        x = (b * 1).expand(3)
        x.index_put_((m.tensor([0, 2, 2]),), v, accumulate=True)
        (x * _f64(m, 1.0, 10.0, 100.0)).sum().backward()
        return v.grad, b.grad

    same(program, spec)


@pytest.mark.parametrize(
    "op",
    [
        lambda m, x: m.add(x[:4], 1, out=x[1:5]),
        lambda m, x: m.mul(x[:4], x[4:], out=x[2:6]),
        lambda m, x: m.exp(x[:4], out=x[1:5]),
        lambda m, x: m.clamp(x[:4], 0, 2, out=x[1:5]),
    ],
    ids=["add", "mul", "exp", "clamp"],
)
def test_elementwise_out_partly_overlapping_an_input(spec: str, op: Callable) -> None:
    same(lambda m: op(m, _grid(m, 8)), spec)


def test_cumsum_into_a_larger_partly_overlapping_out(spec: str) -> None:
    same(lambda m: (lambda x: (m.cumsum(x[:2], 0, out=x[1:4]), x))(_grid(m, 8)), spec)


def test_numpy_ufunc_of_a_bfloat16_second_operand() -> None:
    same(lambda m: np.add(m.ones(2), m.ones(2, dtype=m.bfloat16)), "torch:cpu")


@pytest.mark.parametrize(
    "spec",
    [
        "numpy",
        "torch:cpu",
    ],
)
def test_fill_with_none(spec: str) -> None:
    same(lambda m: _grid(m, 3).fill_(None), spec)


@pytest.mark.parametrize(
    "mode",
    [
        lambda m: m.no_grad(),
        lambda m: m.set_grad_enabled(False),
        lambda m: m.inference_mode(),
    ],
    ids=["no_grad", "set_grad_enabled", "inference_mode"],
)
def test_numpy_ufunc_of_a_tensor_requiring_grad_outside_grad_mode(
    spec: str, mode: Callable
) -> None:
    def program(m: Any) -> Any:
        x = _grid(m, 3).requires_grad_()
        with mode(m):
            return np.exp(x), np.add(np.ones(3), x)

    same(program, spec)


def test_function_gradient_shape_of_an_input_without_grad(spec: str) -> None:
    def program(m: Any) -> Any:
        class Product(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, a: Any, b: Any) -> Any:
                return a * b

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return g, m.ones(5, dtype=m.float64)

        a, b = m.ones(2, dtype=m.float64, requires_grad=True), m.ones(2, dtype=m.float64)
        Product.apply(a, b).sum().backward()
        return a.grad

    same(program, spec)


@pytest.mark.parametrize("cut", [lambda x: x.chunk(1)[0], lambda x: x[0]], ids=["chunk", "index"])
def test_no_grad_piece_of_a_leaf_that_is_a_view(spec: str, cut: Callable) -> None:
    def program(m: Any) -> Any:
        x = _grid(m, 2, 3).requires_grad_()
        with m.no_grad():
            p = cut(x)
        p.mul_(2)
        return x, p.requires_grad

    same(program, spec)


@pytest.mark.parametrize("manager", ["no_grad", "enable_grad"])
def test_grad_mode_manager_clone(manager: str) -> None:
    def program(m: Any) -> Any:
        copy = getattr(m, manager)().clone()
        with copy:
            return type(copy).__name__, m.is_grad_enabled()

    same(program, "numpy")


def test_tensor_split_into_one_section_is_a_view(spec: str) -> None:
    def program(m: Any) -> Any:
        y = _grid(m, 2, 3).requires_grad_() * 1
        (piece,) = y.tensor_split(1)
        return piece.grad_fn.name(), piece is y

    same(program, spec)


def test_function_backward_returning_a_number(spec: str) -> None:
    def program(m: Any) -> Any:
        class Twice(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any) -> Any:
                return x * 2

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                return 3.0

        x = m.ones(2, dtype=m.float64, requires_grad=True)
        Twice.apply(x).sum().backward()
        return x.grad

    same(program, spec)


def test_outer_of_a_number(spec: str) -> None:
    same(lambda m: m.outer(_grid(m, 3), 2), spec)


@pytest.mark.parametrize("dim", [4, -1])
def test_stack_of_channels_last_at_the_end(spec: str, dim: int) -> None:
    def program(m: Any) -> Any:
        y = m.stack([_channels_last(m), _channels_last(m) + 1], dim)
        return y.stride(), y.is_contiguous()

    same(program, spec)


def test_stack_into_an_empty_out_of_channels_last(spec: str) -> None:
    def program(m: Any) -> Any:
        out = m.empty(0, dtype=m.float64)
        m.stack([_channels_last(m)] * 2, 1, out=out)
        return out.stride(), out

    same(program, spec)


def test_elementwise_result_of_an_as_strided_view_follows_its_strides(spec: str) -> None:
    def program(m: Any) -> Any:
        y = _grid(m, 4, 4).as_strided((3, 3), (1, 4)) + _grid(m, 3, 3)
        return y.stride(), y.is_contiguous()

    same(program, spec)


# -- f97759b: contiguous() copies ------------------------------------------------------------


def _contiguous_of(view: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    """The base after a write into ``view(x).contiguous()``, with the copy's layout."""

    def program(m: Any) -> Any:
        x = _grid(m, 3, 4)
        v = view(m, x)
        c = v.contiguous()
        same_memory = c.data_ptr() == v.data_ptr()
        c.mul_(-1)
        return x, c.stride(), same_memory, c.is_contiguous(), c._version

    return program


def _written_part(part: str) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        z = m.complex(_grid(m, 2, 3), -_grid(m, 2, 3))
        c = getattr(z, part).contiguous()
        c.add_(100)
        return z, c, c.stride(), c.is_contiguous()

    return program


def _contiguous_gradient(view: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = _grid(m, 3, 4).requires_grad_()
        y = view(m, x).contiguous()
        (y * y).sum().backward()
        return x.grad

    return program


VIEWS: dict[str, Callable[[Any, Any], Any]] = {
    "t": lambda m, x: x.t(),
    "columns": lambda m, x: x[:, 1:3],
    "step": lambda m, x: x[:, ::2],
    "row": lambda m, x: x[1],
    "rows": lambda m, x: x[1:],
    "unfold": lambda m, x: x.unfold(1, 2, 1),
    "unfold_step": lambda m, x: x.unfold(1, 2, 2),
    "as_strided": lambda m, x: x.as_strided((2, 2), (1, 4)),
    "as_strided_c": lambda m, x: x.as_strided((2, 2), (2, 1)),
    "as_strided_offset": lambda m, x: x.as_strided((2, 3), (3, 1), 2),
    "expand": lambda m, x: x[:1].expand(3, 4),
    "detach": lambda m, x: x.detach(),
    "data": lambda m, x: x.data,
    "diagonal": lambda m, x: x.diagonal(),
    "column": lambda m, x: x[:, 2],
    "unsqueezed_t": lambda m, x: x.t().unsqueeze(0),
    "permuted": lambda m, x: x.reshape(2, 2, 3).permute(2, 0, 1),
    "narrow_all": lambda m, x: x.narrow(0, 0, 3),
    "empty_t": lambda m, x: x[:0].t(),
    "zero_d": lambda m, x: x[1, 2],
    "movedim": lambda m, x: x.movedim(0, 1),
    "view_as_real": lambda m, x: m.view_as_real(m.complex(x, x)),
    "real_column": lambda m, x: m.complex(x, x)[:, :1].real,
}


def _numpy_memory(make: Callable[[], np.ndarray]) -> Callable[[Any], Any]:
    """``from_numpy`` of an array in another order, its ``contiguous()`` written: the array
    after, and the copy's layout."""

    def program(m: Any) -> Any:
        a = make()
        t = m.from_numpy(a)
        c = t.contiguous()
        c.add_(100)
        return a.tolist(), c.stride(), t.is_contiguous(), c.data_ptr() == t.data_ptr()

    return program


def _fortran(m: Any) -> Any:
    return m.from_numpy(np.asfortranarray(np.arange(6.0).reshape(2, 3)))


CONTIGUOUS: dict[str, Callable[[Any], Any]] = {
    **{f"write_{k}": _contiguous_of(v) for k, v in VIEWS.items()},
    **{f"grad_{k}": _contiguous_gradient(VIEWS[k]) for k in "t unfold as_strided expand".split()},
    "real": _written_part("real"),
    "numpy_fortran": _numpy_memory(lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3))),
    "numpy_transposed": _numpy_memory(lambda: np.arange(6.0).reshape(2, 3).T),
    "numpy_stepped": _numpy_memory(lambda: np.arange(12.0)[::2]),
    "numpy_c": _numpy_memory(lambda: np.arange(6.0).reshape(2, 3)),
    "fortran_plus_c": lambda m: (_fortran(m) + m.ones(2, 3, dtype=m.float64)).stride(),
    "c_plus_fortran": lambda m: (m.ones(2, 3, dtype=m.float64) + _fortran(m)).stride(),
    "fortran_stacked": lambda m: m.stack([_fortran(m), _fortran(m)], 1).stride(),
    "fortran_t_is_kept": lambda m: (lambda t: t.t().contiguous().data_ptr() == t.data_ptr())(
        _fortran(m)
    ),
    "imag": _written_part("imag"),
    "conj_imag": lambda m: m.complex(_grid(m, 2), _grid(m, 2) + 1).conj().imag.contiguous(),
    "conj_imag_neg_bit": lambda m: m.complex(_grid(m, 2), _grid(m, 2)).conj().imag.is_neg(),
    "conj_real": lambda m: m.complex(_grid(m, 2), _grid(m, 2) + 1).conj().real.contiguous(),
    "t_imag": lambda m: m.complex(_grid(m, 2, 3), _grid(m, 2, 3)).t().imag.contiguous().stride(),
}

# -- f97759b: stack and cat ------------------------------------------------------------------


def _stack_at(dim: int) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        y = m.stack([_channels_last(m), _channels_last(m) + 1], dim)
        return y.stride(), y

    return program


def _stack_gradients(m: Any) -> Any:
    a = _channels_last(m).requires_grad_()
    b = _grid(m, 2, 3, 4, 5).requires_grad_()
    y = m.stack([a, b], 2)
    (y * _grid(m, *y.shape)).sum().backward()
    return a.grad, b.grad


def _cat_of_one(m: Any) -> Any:
    x = _grid(m, 2, 3)
    y = m.cat([x])
    y.add_(1)
    return x, y, y.data_ptr() == x.data_ptr(), y._version


def _stack_of_one(m: Any) -> Any:
    x = _grid(m, 2, 3)
    y = m.stack([x], 1)
    return y.stride(), y.data_ptr() == x.data_ptr(), y.grad_fn is None


STACK_CAT: dict[str, Callable[[Any], Any]] = {
    **{f"stack_channels_last_{d}": _stack_at(d) for d in (-5, -4, -3, -2, 0, 1, 2, 3)},
    "stack_mixed": lambda m: m.stack([_channels_last(m), _grid(m, 2, 3, 4, 5)], 1).stride(),
    "stack_mixed_second": lambda m: m.stack([_grid(m, 2, 3, 4, 5), _channels_last(m)], 1).stride(),
    "stack_t": lambda m: m.stack([_grid(m, 3, 4).t(), _grid(m, 3, 4).t()], 1).stride(),
    "stack_t_0": lambda m: m.stack([_grid(m, 3, 4).t(), _grid(m, 3, 4).t()], 0).stride(),
    "stack_t_end": lambda m: m.stack([_grid(m, 3, 4).t(), _grid(m, 3, 4).t()], 2).stride(),
    "stack_t_end_view": lambda m: m.stack([_grid(m, 3, 4).t()] * 2, -1).view(-1)[:5],
    "stack_channels_last_end_view": lambda m: m.stack([_channels_last(m)] * 2, 4).view(-1)[:5],
    "stack_0d": lambda m: m.stack([m.tensor(1.0), m.tensor(2.0)]),
    "stack_empty": lambda m: m.stack([_grid(m, 0, 3), _grid(m, 0, 3)], 1),
    "stack_one": _stack_of_one,
    "stack_negative_dim": lambda m: m.stack([_grid(m, 2, 3), _grid(m, 2, 3)], -2),
    "stack_dim_out_of_range": lambda m: m.stack([_grid(m, 2, 3), _grid(m, 2, 3)], 3),
    "stack_promotes": lambda m: m.stack([_grid(m, 2), m.tensor([1, 2])], 0),
    "stack_grad_fn": lambda m: m.stack([_grid(m, 2).requires_grad_(), _grid(m, 2)]).grad_fn.name(),
    "stack_shapes_differ": lambda m: m.stack([_grid(m, 2), _grid(m, 3)], 0),
    "stack_gradients": _stack_gradients,
    "cat_one_is_a_copy": _cat_of_one,
    "cat_one_grad_fn": lambda m: m.cat([_grid(m, 2).requires_grad_()]).grad_fn.name(),
    "cat_one_channels_last": lambda m: m.cat([_channels_last(m)], 1).stride(),
    "cat_one_t": lambda m: m.cat([_grid(m, 3, 4).t()]).stride(),
    "cat_nothing": lambda m: m.cat([]),
    "cat_one_and_legacy_empty": lambda m: m.cat([_grid(m, 2, 3), m.tensor([])]),
    "cat_legacy_empty_promotes": lambda m: m.cat([m.tensor([1, 2]), m.tensor([], dtype=m.float16)]),
    "cat_0d": lambda m: m.cat([m.tensor(1.0)]),
    "cat_channels_last": lambda m: m.cat([_channels_last(m), _channels_last(m)], 3).stride(),
    "cat_one_expanded": lambda m: m.cat([m.ones(1, 3).expand(4, 3)]).stride(),
}

# -- f97759b: the NumPy plugin's layout of a binary result (on torch:cpu too) ----------------

BINARY_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "div": lambda a, b: a / b,
    "floordiv": lambda a, b: a // (b + 1),
}

OPERANDS: dict[str, Callable[[Any], tuple[Any, Any]]] = {
    "t_c": lambda m: (_grid(m, 3, 4).t(), _grid(m, 4, 3)),
    "c_t": lambda m: (_grid(m, 4, 3), _grid(m, 3, 4).t()),
    "cl_c": lambda m: (_channels_last(m), _grid(m, 2, 3, 4, 5)),
    "c_cl": lambda m: (_grid(m, 2, 3, 4, 5), _channels_last(m)),
    "cl_row": lambda m: (_channels_last(m), _grid(m, 5)),
    "cl_channel": lambda m: (_channels_last(m), _grid(m, 3, 1, 1)),
    "cl_0d": lambda m: (_channels_last(m), m.tensor(2.0, dtype=m.float64)),
    "cl_number": lambda m: (_channels_last(m), 2),
    "t_column": lambda m: (_grid(m, 3, 4).t(), _grid(m, 4, 1)),
    "t_row": lambda m: (_grid(m, 3, 4).t(), _grid(m, 1, 3)),
    "row_t": lambda m: (_grid(m, 1, 3), _grid(m, 3, 4).t()),
    "t_size1": lambda m: (_grid(m, 1, 4).t(), _grid(m, 4, 1)),
    "step_c": lambda m: (_grid(m, 3, 8)[:, ::2], _grid(m, 3, 4)),
    "permuted_c": lambda m: (_grid(m, 2, 3, 4).permute(2, 0, 1), _grid(m, 4, 2, 3)),
    "permuted_permuted": lambda m: (
        _grid(m, 2, 3, 4).permute(2, 0, 1),
        _grid(m, 3, 4, 2).permute(2, 1, 0),
    ),
    "expanded_t": lambda m: (_grid(m, 1, 3).expand(4, 3), _grid(m, 3, 4).t()),
    "t_expanded": lambda m: (_grid(m, 3, 4).t(), _grid(m, 1, 3).expand(4, 3)),
    "cl_int_c": lambda m: (_channels_last(m).long(), _grid(m, 2, 3, 4, 5)),
    "t_float32_c": lambda m: (_grid(m, 3, 4, dtype=m.float32).t(), _grid(m, 4, 3)),
    "cl_empty": lambda m: (
        m.zeros(2, 0, 4, 5).contiguous(memory_format=m.channels_last),
        m.zeros(2, 0, 4, 5),
    ),
    "t_t": lambda m: (_grid(m, 3, 4).t(), _grid(m, 3, 4).t()),
    "t_vector": lambda m: (_grid(m, 3, 4).t(), _grid(m, 3)),
    "unsqueezed_t": lambda m: (_grid(m, 3, 4).t().unsqueeze(1), _grid(m, 4, 2, 3)),
}


def _laid_out(operands: Callable, op: Callable) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        y = op(*operands(m))
        return y.stride(), y.is_contiguous(), y

    return program


def _layout_gradients(m: Any) -> Any:
    a = _grid(m, 3, 4).t().requires_grad_()
    b = _grid(m, 4, 3).requires_grad_()
    y = a * b + b
    y.backward(m.ones(4, 3, dtype=m.float64))
    return a.grad, b.grad, a.grad.stride(), y.stride()


def _in_place_into_t(m: Any) -> Any:
    a = _grid(m, 3, 4).t()
    a += _grid(m, 4, 3)
    return a.stride(), a


LAYOUTS: dict[str, Callable[[Any], Any]] = {
    **{
        f"{pair}_{name}": _laid_out(operands, op)
        for pair, operands in OPERANDS.items()
        for name, op in BINARY_OPS.items()
    },
    "gradients": _layout_gradients,
    "in_place_t": _in_place_into_t,
}


def _laid_out_as(m: Any, shape: tuple, order: tuple) -> Any:
    """A tensor of ``shape`` whose memory holds its dimensions in ``order`` (outermost
    first): a permuted contiguous tensor."""
    held = m.arange(float(np.prod(shape)), dtype=m.float64).reshape([shape[d] for d in order])
    return held.permute(*[order.index(d) for d in range(len(shape))])


def _layout_sweep(seed: int, count: int) -> dict[str, Callable[[Any], Any]]:
    """Seeded binary ops between a permuted (maybe every-other-element) tensor and a
    permuted, maybe broadcast one, either side first: the result's strides (where every
    size is above 1, else whether it is contiguous) and values."""
    rng = np.random.default_rng(seed)
    cases = {}
    for i in range(count):
        nd = int(rng.integers(2, 5))
        shape = tuple(int(s) for s in rng.integers(2, 5, nd))
        stepped = int(rng.integers(nd))
        other = [1 if rng.random() < 0.3 else s for s in shape]
        other[stepped] = 1 if other[stepped] == 1 else (shape[stepped] + 1) // 2
        orders = (
            tuple(int(d) for d in rng.permutation(nd)),
            tuple(int(d) for d in rng.permutation(nd)),
        )
        op = str(rng.choice(["add", "sub", "mul", "div", "floor_divide"]))
        swapped = bool(rng.random() < 0.3)

        def program(
            m: Any,
            op=op,
            orders=orders,
            other=tuple(other),
            swapped=swapped,
            stepped=stepped,
            shape=shape,
        ) -> Any:
            index = [slice(None)] * len(shape)
            index[stepped] = slice(None, None, 2)
            a = _laid_out_as(m, shape, orders[0])[tuple(index)]
            b = _laid_out_as(m, other, orders[1]) + 1
            y = getattr(m, op)(*((b, a) if swapped else (a, b)))
            return (y.stride() if min(y.shape) > 1 else y.is_contiguous()), y

        cases[f"{i}_{op}_{shape}_{orders}_{other}_{swapped}"] = program
    return cases


LAYOUT_SWEEP = _layout_sweep(23, 30)

# -- f97759b: out= that partly overlaps an input ---------------------------------------------


def _out(write: Callable[[Any, Any], Any], values: bool = True) -> Callable[[Any], Any]:
    """The base and result of ``write(m, x)`` (an out= call into ``x``'s memory); only
    whether it raised where torch's result depends on the order its kernel reads and writes
    (``values`` False)."""

    def program(m: Any) -> Any:
        x = _grid(m, 8)
        r = write(m, x)
        return (x, r) if values else "computed"

    return program


def _mat(x: Any, start: int) -> Any:
    return x[start : start + 4].view(2, 2)


OUT_OVERLAP: dict[str, Callable[[Any], Any]] = {
    "cumsum_partly": _out(lambda m, x: m.cumsum(x[:4], 0, out=x[2:6])),
    "cumsum_same": _out(lambda m, x: m.cumsum(x, 0, out=x)),
    "add_same": _out(lambda m, x: m.add(x[:4], 1, out=x[:4])),
    "mul_self": _out(lambda m, x: m.mul(x, x, out=x)),
    "cumsum_apart": _out(lambda m, x: m.cumsum(x[:4], 0, out=x[4:])),
    "cumsum_same_view": _out(lambda m, x: m.cumsum(x[2:6], 0, out=x[2:6])),
    "cumsum_interleaved": _out(lambda m, x: m.cumsum(x[::2], 0, out=x[1::2])),
    "cumsum_strided_out": _out(lambda m, x: m.cumsum(x[:4], 0, out=x[::2]), values=False),
    "cumsum_resized_apart": _out(lambda m, x: m.cumsum(x[:4], 0, out=x[4:5])),
    "cumsum_2d_t": _out(lambda m, x: m.cumsum(_mat(x, 0), 0, out=_mat(x, 0).t())),
    "cumprod_partly": _out(lambda m, x: m.cumprod(x[:4], 0, out=x[1:5])),
    "logcumsumexp_partly": _out(lambda m, x: m.logcumsumexp(x[:4], 0, out=x[1:5])),
    "outer_partly": _out(lambda m, x: m.outer(x[:2], x[:2], out=_mat(x, 1))),
    "outer_apart": _out(lambda m, x: m.outer(x[:2], x[:2], out=_mat(x, 4))),
    "ger_partly": _out(lambda m, x: m.ger(x[:2], x[:2], out=_mat(x, 0))),
    "kron_partly": _out(lambda m, x: m.kron(x[:2], x[:2], out=x[:4])),
    "where_partly": _out(lambda m, x: m.where(x[:4] > 2, x[:4], x[4:], out=x[2:6])),
    "where_same": _out(lambda m, x: m.where(x[:4] > 2, x[:4], x[4:], out=x[:4])),
    "where_copies": _out(lambda m, x: m.where(x[:4] > 2, x[:4] * 1, x[4:] * 1, out=x[:4])),
    "where_t": _out(
        lambda m, x: m.where(
            m.ones(2, 2, dtype=m.bool),
            _mat(x, 0),
            m.zeros(2, 2, dtype=m.float64),
            out=_mat(x, 0).t(),
        )
    ),
    "diff_partly": _out(lambda m, x: m.diff(x[:5], out=x[1:5])),
    "scatter_partly": _out(lambda m, x: m.scatter(x[:4], 0, m.tensor([1, 0]), x[4:6], out=x[1:5])),
    "scatter_src_partly": _out(
        lambda m, x: m.scatter(x[:4] * 1, 0, m.tensor([1, 0]), x[4:6], out=x[5:])
    ),
    "index_add_partly": _out(lambda m, x: m.index_add(x[:4], 0, m.tensor([1]), x[4:5], out=x[2:6])),
    "index_copy_same": _out(lambda m, x: m.index_copy(x[:4], 0, m.tensor([1]), x[4:5], out=x[:4])),
    "index_select_partly": _out(
        lambda m, x: m.index_select(x[:4], 0, m.tensor([0, 1, 2]), out=x[2:5])
    ),
    "fmax_partly": _out(lambda m, x: m.fmax(x[:4], x[4:], out=x[1:5])),
    "heaviside_partly": _out(lambda m, x: m.heaviside(x[:4], x[4:], out=x[1:5])),
    "cat_partly": _out(lambda m, x: m.cat([x[:2], x[2:4]], out=x[1:5])),
    "addmm_input_partly": _out(
        lambda m, x: m.addmm(
            x[1:5].view(2, 2),
            m.ones(2, 2, dtype=m.float64),
            m.ones(2, 2, dtype=m.float64),
            out=_mat(x, 0),
        )
    ),
    # (torch allows these; its values depend on its kernel's reads and writes)
    "addmm_matrix_partly": _out(
        lambda m, x: m.addmm(
            m.zeros(2, 2, dtype=m.float64), _mat(x, 0), _mat(x, 2), out=_mat(x, 4)
        ),
        values=False,
    ),
    "mm_partly": _out(lambda m, x: m.mm(_mat(x, 0), _mat(x, 0), out=_mat(x, 2)), values=False),
    "sum_partly": _out(lambda m, x: m.sum(_mat(x, 0), 0, out=x[1:3]), values=False),
    "cumsum_requires_grad": lambda m: m.cumsum(
        _grid(m, 4).requires_grad_(), 0, out=_grid(m, 8)[1:5]
    ),
}

# -- f97759b: index_put_ -------------------------------------------------------------------


def _index_put(
    make: Callable, indices: Callable, values: Callable, accumulate: bool = True
) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = make(m)
        r = x.index_put_(indices(m), values(m), accumulate=accumulate)
        return r is x, x, x._version

    return program


def _at(*i: int) -> Callable[[Any], Any]:
    return lambda m: (m.tensor(list(i)),)


def _values(*v: float) -> Callable[[Any], Any]:
    return lambda m: _f64(m, *v)


def _expanded(m: Any) -> Any:
    return m.zeros(1, dtype=m.float64).expand(3)


def _written_base(write: Callable[[Any, Any], Any], make: Callable) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = make(m)
        write(m, x)
        return x

    return program


def _zero_stride_numpy(shape: tuple, strides: tuple, size: int) -> Callable[[Any], Any]:
    """index_put_(accumulate=True) into NumPy memory whose elements repeat (a zero stride):
    the tensor and the memory after."""

    def program(m: Any) -> Any:
        base = np.zeros(size)
        t = m.from_numpy(np.lib.stride_tricks.as_strided(base, shape, strides))
        where = tuple(m.tensor(i) for i in ([0, 1, 1], [0, 1, 2])[: len(shape)])
        t.index_put_(where, _f64(m, 1.0, 2.0, 4.0), accumulate=True)
        return t, base.tolist()

    return program


def _gradients_through_repeat(m: Any) -> Any:
    v = _f64(m, 1.0, 2.0, 3.0).requires_grad_()
    b = m.zeros(1, dtype=m.float64, requires_grad=True)
    x = (b * 1).repeat(3)
    x.index_put_((m.tensor([0, 2, 2]),), v, accumulate=True)
    (x * _f64(m, 1.0, 10.0, 100.0)).sum().backward()
    return x, v.grad, b.grad


def _gradients_into_slice(m: Any) -> Any:
    v = _f64(m, 1.0, 2.0, 3.0).requires_grad_()
    x = m.zeros(4, dtype=m.float64)[1:]
    x.index_put_((m.tensor([0, 2, 2]),), v, accumulate=True)
    (x * _f64(m, 1.0, 10.0, 100.0)).sum().backward()
    return x, v.grad


INDEX_PUT: dict[str, Callable[[Any], Any]] = {
    "repeated_indices": _index_put(lambda m: _grid(m, 4), _at(1, 1, 3), _values(1, 2, 3)),
    "repeated_put": _index_put(lambda m: _grid(m, 4), _at(1, 1, 3), _values(1, 2, 3), False),
    "expand": _index_put(_expanded, _at(0, 2), _values(1, 2)),
    "expand_repeated": _index_put(_expanded, _at(0, 0, 1), _values(1, 2, 4)),
    "expand_2d": _index_put(
        lambda m: m.zeros(2, 1, dtype=m.float64).expand(2, 3),
        lambda m: (m.tensor([0, 1]), m.tensor([1, 2])),
        _values(1, 2),
    ),
    "expand_put": _index_put(_expanded, _at(0, 2), _values(1, 2), False),
    "expand_int": _index_put(
        lambda m: m.zeros(1, dtype=m.int64).expand(3), _at(0, 2), lambda m: m.tensor([1, 2])
    ),
    "expand_float32": _index_put(
        lambda m: m.zeros(1).expand(3), _at(0, 2), lambda m: m.tensor([1.0, 2.0])
    ),
    "expand_mask": _index_put(_expanded, lambda m: (m.tensor([True, False, True]),), _values(1, 2)),
    "expand_0d_value": _index_put(_expanded, _at(0, 1), lambda m: m.tensor(5.0, dtype=m.float64)),
    "expand_rows": _index_put(
        lambda m: m.zeros(1, 2, dtype=m.float64).expand(3, 2),
        _at(0, 2),
        lambda m: m.ones(2, 2, dtype=m.float64),
    ),
    "expand_base": _written_base(
        lambda m, b: b.expand(3).index_put_((m.tensor([0, 2]),), _f64(m, 1, 2), accumulate=True),
        lambda m: m.zeros(1, dtype=m.float64),
    ),
    "expand_base_2d": _written_base(
        lambda m, b: b.expand(2, 3).index_put_(
            (m.tensor([0, 1]), m.tensor([0, 0])), _f64(m, 1, 5), accumulate=True
        ),
        lambda m: m.zeros(1, 3, dtype=m.float64),
    ),
    "slice_view": _written_base(
        lambda m, x: x[1:].index_put_((m.tensor([0, 0]),), _f64(m, 1, 2), accumulate=True),
        lambda m: _grid(m, 4),
    ),
    "t_view": _written_base(
        lambda m, x: x.t().index_put_(
            (m.tensor([0, 0]), m.tensor([1, 1])), _f64(m, 1, 2), accumulate=True
        ),
        lambda m: _grid(m, 2, 3),
    ),
    "unfold_view": _written_base(
        lambda m, x: x.unfold(0, 2, 1).index_put_(
            (m.tensor([0, 1]), m.tensor([1, 0])), _f64(m, 1, 2), accumulate=True
        ),
        lambda m: _grid(m, 4),
    ),
    "as_strided_view": _written_base(
        lambda m, x: x.as_strided((3, 2), (1, 1)).index_put_(
            (m.tensor([0, 1]), m.tensor([1, 0])), _f64(m, 1, 2), accumulate=True
        ),
        lambda m: _grid(m, 4),
    ),
    "setitem_expand": _written_base(
        lambda m, x: x.__setitem__(m.tensor([0, 2]), _f64(m, 1, 2)), _expanded
    ),
    "numpy_zero_stride": _zero_stride_numpy((3,), (0,), 1),
    "numpy_zero_stride_2d": _zero_stride_numpy((2, 3), (8, 0), 2),
    "out_of_place": lambda m: _expanded(m).index_put(
        (m.tensor([0, 2]),), _f64(m, 1, 2), accumulate=True
    ),
    "out_of_place_leaves_input": lambda m: (
        lambda x: (x.index_put((m.tensor([1, 1]),), _f64(m, 1, 2), accumulate=True), x)
    )(_grid(m, 3)),
    "dtypes_differ": _index_put(lambda m: _grid(m, 4), _at(1), lambda m: m.tensor([1.0])),
    "int_values_into_float": _index_put(lambda m: _grid(m, 3), _at(0), lambda m: m.tensor([1])),
    "no_indices": _index_put(
        lambda m: _grid(m, 4), lambda m: (m.tensor([], dtype=m.int64),), lambda m: _f64(m)
    ),
    "negative_indices": _index_put(lambda m: _grid(m, 4), _at(-1, -1), _values(1, 2)),
    "out_of_range": _index_put(lambda m: _grid(m, 4), _at(4), _values(1)),
    "list_of_indices": _written_base(
        lambda m, x: x.index_put_([m.tensor([0])], _f64(m, 9)), lambda m: _grid(m, 3)
    ),
    "list_of_lists": lambda m: _grid(m, 3).index_put_(([0, 0],), _f64(m, 1, 2)),
    "keywords": lambda m: _grid(m, 3).index_put_(
        indices=(m.tensor([0, 0]),), values=_f64(m, 1, 2), accumulate=True
    ),
    "function": lambda m: m.index_put_(_grid(m, 3), (m.tensor([0, 0]),), _f64(m, 1, 2), True),
    "none_index": lambda m: _grid(m, 2, 3).index_put_(
        (None, m.tensor([0])), m.tensor(1.0, dtype=m.float64)
    ),
    "too_many_indices": lambda m: _grid(m, 3).index_put_(
        (m.tensor([0]), m.tensor([0])), m.tensor(1.0, dtype=m.float64)
    ),
    "values_do_not_broadcast": lambda m: _grid(m, 3).index_put_(
        (m.tensor([0, 1]),), _f64(m, 1, 2, 3)
    ),
    "bool_accumulate": lambda m: m.zeros(3, dtype=m.bool).index_put_(
        (m.tensor([0, 0]),), m.tensor([True, True]), accumulate=True
    ),
    "int8_wraps": lambda m: m.full((2,), 120, dtype=m.int8).index_put_(
        (m.tensor([0, 0]),), m.tensor([5, 5], dtype=m.int8), accumulate=True
    ),
    "float16": lambda m: m.zeros(2, dtype=m.float16).index_put_(
        (m.tensor([0, 0, 1]),), m.tensor([0.1, 0.2, 0.3], dtype=m.float16), accumulate=True
    ),
    "complex": lambda m: m.zeros(2, dtype=m.complex128).index_put_(
        (m.tensor([0, 0]),), m.tensor([1j, 2], dtype=m.complex128), accumulate=True
    ),
    "rows": lambda m: _grid(m, 3, 2).index_put_(
        (m.tensor([0, 0, 2]),), m.ones(3, 2, dtype=m.float64), accumulate=True
    ),
    "leaf_requiring_grad": lambda m: (
        _grid(m, 3).requires_grad_().index_put_((m.tensor([0]),), _f64(m, 1))
    ),
    "gradients_through_repeat": _gradients_through_repeat,
    "gradients_into_slice": _gradients_into_slice,
}

# -- f7befe1: partly overlapping in-place writes ---------------------------------------------


def _set(x: Any, index: Any, value: Any) -> None:
    x[index] = value


WRITES: dict[str, Callable[[Any, Any], Any]] = {
    "set_shift": lambda m, x: _set(x, slice(1, None), x[:-1]),
    "set_all": lambda m, x: _set(x, slice(0, None), x[:]),
    "set_same_view": lambda m, x: _set(x, slice(1, 3), x[1:3]),
    "set_apart": lambda m, x: _set(x, slice(3, None), x[:3]),
    "set_0d": lambda m, x: _set(x, slice(1, None), x[0]),
    "set_broadcast_over_itself": lambda m, x: _set(x, slice(0, None), x[0:1]),
    "set_broadcast_apart": lambda m, x: _set(x, slice(1, None), x[0:1]),
    "set_column": lambda m, x: _set(x.view(2, 3), (slice(None), 0), x.view(2, 3)[:, 1]),
    "set_t": lambda m, x: _set(x[:4].view(2, 2), slice(None), x[:4].view(2, 2).t()),
    "set_step": lambda m, x: _set(x, slice(0, 3), x[::2]),
    "set_index_list": lambda m, x: _set(x, [0, 1], x[1:3]),
    "set_index_tensor": lambda m, x: _set(x, m.tensor([4, 5]), x[3:5]),
    "set_mask": lambda m, x: _set(x, x > 2, x[3:]),
    "set_mask_0d": lambda m, x: _set(x, x > 2, x[0]),
    "set_ellipsis_flip": lambda m, x: _set(x, Ellipsis, x.flip(0)),
    "set_clone": lambda m, x: _set(x, slice(1, None), x[:-1].clone()),
    "set_int": lambda m, x: _set(x, slice(1, 4), x[:3].long()),
    "copy_shift": lambda m, x: x[1:].copy_(x[:-1]),
    "copy_self": lambda m, x: x.copy_(x),
    "copy_same_view": lambda m, x: x[1:3].copy_(x[1:3]),
    "copy_t": lambda m, x: x[:4].view(2, 2).copy_(x[:4].view(2, 2).t()),
    "copy_broadcast": lambda m, x: x.copy_(x[0:1]),
    "copy_0d": lambda m, x: x[1:].copy_(x[0]),
    "copy_int": lambda m, x: x[1:].copy_(x[:-1].int()),
    "add_shift": lambda m, x: x[1:].add_(x[:-1]),
    "add_shift_alpha": lambda m, x: x[1:].add_(x[:-1], alpha=2),
    "iadd_shift": lambda m, x: x[1:].__iadd__(x[:-1]),
    "sub_shift": lambda m, x: x[1:].sub_(x[:-1]),
    "div_shift": lambda m, x: x[1:].div_(x[:-1] + 1),
    "masked_fill_shifted_mask": lambda m, x: x[1:].masked_fill_(x[:-1] > 2, 0.0),
    "maximum_copied_back": lambda m, x: x[1:].copy_(m.maximum(x[1:], x[:-1])),
    "add_self": lambda m, x: x.add_(x),
    "add_self_alpha": lambda m, x: x.add_(x, alpha=-1),
    "add_t": lambda m, x: x[:4].view(2, 2).add_(x[:4].view(2, 2).t()),
    "add_broadcast_row": lambda m, x: x.view(2, 3).add_(x.view(2, 3)[0]),
    "add_detach_of_self": lambda m, x: x.add_(x.detach()),
    "add_apart": lambda m, x: x[3:].add_(x[:3]),
    "add_0d_self": lambda m, x: x[0].add_(x[0]),
    "add_0d_other": lambda m, x: x[1:].add_(x[0]),
    "sibling_views_set": lambda m, x: _set(x[0:4], slice(1, None), x[0:3]),
    "sibling_views_copy": lambda m, x: x[2:6].copy_(x[0:4]),
    "sibling_views_add": lambda m, x: x[2:6].add_(x[0:4]),
    "sibling_views_add_alpha": lambda m, x: x[2:6].add_(x[0:4], alpha=2),
    "sibling_views_apart": lambda m, x: x[3:6].add_(x[0:3]),
    "reshaped_sibling": lambda m, x: x.view(2, 3)[1].copy_(x[2:5]),
}

#: Writes that torch refuses where an operand shares part of the written memory through a
#: detach()/.data alias, as a keyword, or for in-place ops other than add_/sub_/copy_ (at
#: f08cb6e tw wrote them silently; they match torch with the operand checks of
#: ops/methods.py _refuse_overlapping_operands and tensor.py _memory_root through aliases).
WRITES_THROUGH_OPERANDS: dict[str, Callable[[Any, Any], Any]] = {
    "set_detach": lambda m, x: _set(x, slice(1, None), x.detach()[:-1]),
    "set_data": lambda m, x: _set(x, slice(1, None), x.data[:-1]),
    "copy_detach": lambda m, x: x[1:].copy_(x.detach()[:-1]),
    "copy_into_data": lambda m, x: x.data[1:].copy_(x[:-1]),
    "add_shift_keyword": lambda m, x: x[1:].add_(other=x[:-1]),
    "add_shift_keyword_alpha": lambda m, x: x[1:].add_(other=x[:-1], alpha=2),
    "mul_shift": lambda m, x: x[1:].mul_(x[:-1]),
    "div_shift_view": lambda m, x: x[1:].div_(x[:-1]),
    "clamp_shift": lambda m, x: x[1:].clamp_(min=x[:-1]),
    "lerp_shift": lambda m, x: x[1:].lerp_(x[:-1], 0.5),
    "addcmul_shift": lambda m, x: x[1:].addcmul_(x[:-1], x[:-1]),
    "pow_shift": lambda m, x: x[1:].pow_(x[:-1]),
    "atan2_shift": lambda m, x: x[1:].atan2_(x[:-1]),
    "add_data_shift": lambda m, x: x[1:].add_(x.data[:-1]),
    "detach_add_shift": lambda m, x: x.detach()[1:].add_(x[:-1]),
    "sibling_alias_view_set": lambda m, x: _set(x[0:4], slice(1, None), x.detach()[0:3]),
}


def _written(write: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = _grid(m, 6)
        write(m, x)
        return x, x._version

    return program


# -- 94becc0 / fd00826: aliases and add_/sub_ with alpha -------------------------------------


def _many_aliases(kind: str) -> Callable[[Any], Any]:
    """Forty aliases made and mostly dropped (the list of followers is pruned at powers of
    two), then writes through the base and through a kept alias."""

    def program(m: Any) -> Any:
        x = _grid(m, 4)
        kept = []
        for i in range(40):
            a = x.detach() if kind == "detach" else x.data
            if i % 3 == 0:
                kept.append(a)
        x.add_(1)
        kept[-1].mul_(2)
        return x, [k[0] for k in kept], x._version, kept[0]._version

    return program


def _alias_versions(m: Any) -> Any:
    x = _grid(m, 3)
    d = x.detach()
    d.add_(1)
    after_detach = x._version
    e = x.data
    e.add_(1)
    return x, x._version, after_detach, d._version, e._version, d


def _parameter_alias(m: Any) -> Any:
    t = _grid(m, 3)
    p = m.nn.Parameter(t)
    t.add_(1)
    p.data.mul_(2)
    return t, p, p.requires_grad, p.is_leaf, t._version, p._version


def _parameter_of_a_view(m: Any) -> Any:
    t = _grid(m, 2, 3)
    p = m.nn.Parameter(t[0])
    p.data.add_(10)
    return t, p


def _detach_of_views(m: Any) -> Any:
    x = _grid(m, 2, 3)
    x[1].detach().zero_()
    v = x[:, 1:]
    v.detach().add_(5)
    return x, v


def _view_of_a_detach(m: Any) -> Any:
    x = _grid(m, 2, 3)
    d = x.detach()
    r = d[0]
    x.add_(1)
    return r, d


def _saved_output_changed(through: str) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = _grid(m, 3).requires_grad_()
        y = x.exp()
        (y.detach() if through == "detach" else y.data).zero_()
        y.sum().backward()
        return x.grad

    return program


def _data_set(m: Any) -> Any:
    x = _grid(m, 3).requires_grad_()
    d = x.detach()
    x.data = m.ones(3, dtype=m.float64)
    x.data.add_(1)
    return x, d


def _alias_chain(m: Any) -> Any:
    x = _grid(m, 3)
    d = x.detach().detach().data
    d.add_(1)
    return x, d, x._version


def _sgd_like_step(m: Any) -> Any:
    p = m.nn.Parameter(_grid(m, 3))
    (p * p).sum().backward()
    with m.no_grad():
        p.add_(p.grad, alpha=-0.1)
    return p, p._version, p.grad


def _dropped_base(n: int, via: str) -> Callable[[Any], Any]:
    """Writes through ``p.data`` (or ``p.detach()``) after ``p`` itself is dropped: the
    alias's write-back may skip its scan only where nothing else sees the memory."""

    def program(m: Any) -> Any:
        p = m.nn.Parameter(m.arange(float(n), dtype=m.float64))
        with m.no_grad():
            v = p[:3]
        d = p.data if via == "data" else p.detach()
        e = d[1:4]
        del p
        d.add_(1)
        d.add_(m.ones(n, dtype=m.float64), alpha=2)
        return v, e, d[:3]

    return program


def _dropped_base_of_a_row(m: Any) -> Any:
    x = _grid(m, 3, 4)
    row = x[1]
    d = x.data
    del x
    d[1, 2] = 100
    return row


def _aliases_among_views(m: Any) -> Any:
    x = _grid(m, 6)
    kept = []
    for i in range(37):
        a = x[i % 3 : i % 3 + 2] if i % 2 else x.detach()
        if i % 5 == 0:
            kept.append(a)
    x.mul_(2)
    kept[1].add_(100)
    return x, kept


def _inference_alpha(n: int, inside: bool) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        with m.inference_mode():
            x = m.ones(n, dtype=m.float64)
            if inside:
                x.sub_(m.ones(n, dtype=m.float64), alpha=3)
        if not inside:
            x.add_(m.ones(n, dtype=m.float64), alpha=2)
        return x[:3], x.is_inference()

    return program


def _aliases_see_alpha(n: int) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = m.arange(float(n), dtype=m.float64)
        d, e = x.data, x.detach()
        x.add_(m.ones(n, dtype=m.float64), alpha=2)
        return d[:3], e[-2:], x._version, e._version, d._version

    return program


def _foreach_add(m: Any) -> Any:
    xs = [m.ones(3, dtype=m.float64), m.ones(BIG, dtype=m.float64)]
    held = [x.detach() for x in xs]
    m._foreach_add_(xs, [m.ones(3, dtype=m.float64), m.ones(BIG, dtype=m.float64)], alpha=2)
    return [x[:2] for x in xs], [t[:2] for t in held], [x._version for x in xs]


def _saved_output_written(m: Any) -> Any:
    x = m.ones(4, dtype=m.float64, requires_grad=True)
    z = (x * 2).exp()
    with m.no_grad():
        z.add_(m.ones(4, dtype=m.float64), alpha=2)
    z.sum().backward()


ALIAS_WRITES: dict[str, Callable[[Any], Any]] = {
    **{
        f"dropped_base_{n}_{via}": _dropped_base(n, via)
        for n in (5, BIG)
        for via in ("data", "detach")
    },
    "dropped_base_of_a_row": _dropped_base_of_a_row,
    "aliases_among_views": _aliases_among_views,
    **{
        f"inference_{n}_{inside}": _inference_alpha(n, inside)
        for n in (4, BIG)
        for inside in (False, True)
    },
    **{f"aliases_see_alpha_{n}": _aliases_see_alpha(n) for n in (4, BIG)},
    "foreach_add": _foreach_add,
    "saved_output_written": _saved_output_written,
    "cat_out_self": lambda m: (lambda x: m.cat([x], out=x))(_grid(m, 3)),
    "cat_out_part": lambda m: (lambda x: m.cat([x[:2]], out=x[1:]))(_grid(m, 3)),
    "stack_out": lambda m: (
        lambda o: (m.stack([_grid(m, 2), _grid(m, 2)], 1, out=o), o.stride())[1]
    )(m.empty(2, 2, dtype=m.float64)),
    "cat_out_channels_last": lambda m: (
        lambda o: (m.cat([_channels_last(m)] * 2, 1, out=o), o.stride())[1]
    )(m.empty(0, dtype=m.float64)),
}

ALIASES: dict[str, Callable[[Any], Any]] = {
    "many_detach": _many_aliases("detach"),
    "many_data": _many_aliases("data"),
    "versions": _alias_versions,
    "parameter": _parameter_alias,
    "parameter_of_a_view": _parameter_of_a_view,
    "detach_of_views": _detach_of_views,
    "view_of_a_detach": _view_of_a_detach,
    "saved_output_changed_through_detach": _saved_output_changed("detach"),
    "saved_output_changed_through_data": _saved_output_changed("data"),
    "data_set": _data_set,
    "chain": _alias_chain,
    "sgd_like_step": _sgd_like_step,
}


def _add_alpha(
    n: int, dtype: str, alpha: Any, sub: bool = False, view: bool = False
) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = m.arange(float(n), dtype=getattr(m, dtype)) / 7
        y = m.ones(n, dtype=getattr(m, dtype)) * 3
        d = x.detach()
        target, other = (x[: n // 2], y[: n // 2]) if view else (x, y)
        (target.sub_ if sub else target.add_)(other, alpha=alpha)
        return x[:3], x[-3:], x._version, d[:3], x.dtype

    return program


def _alpha_under_no_grad(m: Any) -> Any:
    x = m.ones(4, dtype=m.float64, requires_grad=True)
    with m.no_grad():
        x.add_(m.ones(4, dtype=m.float64), alpha=0.5)
    return x, x.requires_grad, x.is_leaf, x.grad_fn is None, x._version


def _alpha_in_the_graph(m: Any) -> Any:
    x = m.ones(4, dtype=m.float64, requires_grad=True)
    y = x * 2
    y.add_(x, alpha=3)
    y.sum().backward()
    return y, x.grad, y.grad_fn.name()


def _alpha_into_a_saved_output(m: Any) -> Any:
    x = m.ones(4, dtype=m.float64, requires_grad=True)
    y = x.exp()
    with m.no_grad():
        y.add_(m.ones(4, dtype=m.float64), alpha=2)
    y.sum().backward()
    return x.grad


def _ones(m: Any, n: int = 4, dtype: str = "float64") -> Any:
    return m.ones(n, dtype=getattr(m, dtype))


ADD_ALPHA: dict[str, Callable[[Any], Any]] = {
    **{
        f"{n}_{dtype}_{alpha}_{'sub' if sub else 'add'}": _add_alpha(n, dtype, alpha, sub)
        for n in (8, BIG)
        for dtype in ("float64", "float32", "float16")
        for alpha in (2, -0.5)
        for sub in (False, True)
    },
    "view_small": _add_alpha(8, "float64", 2.5, view=True),
    "view_big": _add_alpha(BIG, "float64", 2.5, view=True),
    "float16_overflow": _add_alpha(8, "float16", 70000.0),
    "float16_overflow_big": _add_alpha(BIG, "float16", 70000.0),
    "float16_int_overflow": _add_alpha(8, "float16", 100000),
    "float16_inf": _add_alpha(8, "float16", float("inf")),
    "float16_nan": _add_alpha(8, "float16", float("nan")),
    "bool_alpha": _add_alpha(8, "float64", True),
    "int_tensor_float_alpha": lambda m: m.arange(4).add_(_ones(m, 4, "int64"), alpha=0.5),
    "int_tensor_int_alpha": lambda m: m.arange(4).add_(_ones(m, 4, "int64"), alpha=3),
    "bool_sub": lambda m: _ones(m, 4, "bool").sub_(_ones(m, 4, "bool"), alpha=1),
    "complex": lambda m: _ones(m, 4, "complex128").add_(_ones(m, 4, "complex128"), alpha=2),
    "complex_alpha_on_float": lambda m: _ones(m).add_(_ones(m), alpha=1j),
    "huge_int_alpha": lambda m: _ones(m).add_(_ones(m), alpha=2**70),
    "int_other": lambda m: _ones(m).add_(_ones(m, 4, "int64"), alpha=0.5),
    "float64_into_float32": lambda m: _ones(m, 4, "float32").add_(_ones(m), alpha=0.5),
    "leaf_requiring_grad": lambda m: _ones(m).requires_grad_().add_(_ones(m), alpha=0.5),
    "under_no_grad": _alpha_under_no_grad,
    "in_the_graph": _alpha_in_the_graph,
    "into_a_saved_output": _alpha_into_a_saved_output,
    "0d": lambda m: m.tensor(1.0, dtype=m.float64).add_(m.tensor(2.0, dtype=m.float64), alpha=3),
    "empty": lambda m: _ones(m, 0).add_(_ones(m, 0), alpha=3),
    "broadcast_other": lambda m: m.ones(2, 3, dtype=m.float64).add_(_grid(m, 3), alpha=3),
    "broadcast_self": lambda m: _ones(m, 3).add_(m.ones(2, 3, dtype=m.float64), alpha=3),
    "number_other": lambda m: _ones(m, 3).add_(2, alpha=3),
    "t_view": _written_base(
        lambda m, x: x.t().add_(m.ones(3, 2, dtype=m.float64), alpha=2),
        lambda m: _grid(m, 2, 3),
    ),
    "expanded_self": lambda m: m.ones(1, dtype=m.float64).expand(3).add_(_ones(m, 3), alpha=2),
    "negative_zero_alpha": lambda m: (
        lambda x: (x.sub_(m.zeros(4, dtype=m.float64), alpha=-0.0), x.sign())[1]
    )(_f64(m, 0.0, -0.0, 1.0, -1.0)),
}

ADD_ALPHA_BFLOAT16: dict[str, Callable[[Any], Any]] = {
    f"{n}_{alpha}_{'sub' if sub else 'add'}": _add_alpha(n, "bfloat16", alpha, sub)
    for n in (8, BIG)
    for alpha in (2, -0.5)
    for sub in (False, True)
}

# -- f7befe1: outer/ger, named_modules, optimizer numbering ----------------------------------


def _outer_gradients(m: Any) -> Any:
    a, b = _grid(m, 3).requires_grad_(), _grid(m, 2).requires_grad_()
    m.outer(a, b).pow(2).sum().backward()
    return a.grad, b.grad


def _outer_into(m: Any) -> Any:
    out = m.empty(3, 2, dtype=m.float64)
    m.outer(_grid(m, 3), _grid(m, 2), out=out)
    return out


OUTER: dict[str, Callable[[Any], Any]] = {
    "vectors": lambda m: m.outer(_grid(m, 3), _grid(m, 2)),
    "0d": lambda m: m.outer(m.tensor(2.0), _grid(m, 3)),
    "2d": lambda m: m.outer(_grid(m, 2, 2), _grid(m, 3)),
    "2d_second": lambda m: m.outer(_grid(m, 3), _grid(m, 1, 2)),
    "ger_2d": lambda m: m.ger(_grid(m, 2, 2), _grid(m, 3)),
    "method_2d": lambda m: _grid(m, 3).outer(_grid(m, 2, 1)),
    "ger_method": lambda m: _grid(m, 3).ger(_grid(m, 2)),
    "empty": lambda m: m.outer(m.ones(0), _grid(m, 3)),
    "int_and_float": lambda m: m.outer(m.arange(3), _grid(m, 2)),
    "bool": lambda m: m.outer(m.tensor([True, False]), m.tensor([True])),
    "complex": lambda m: m.outer(m.complex(_grid(m, 3), _grid(m, 3)), _grid(m, 2)),
    "out": _outer_into,
    "out_2d": lambda m: m.outer(_grid(m, 2, 2), _grid(m, 3), out=m.empty(4, 3, dtype=m.float64)),
    "gradients": _outer_gradients,
    "grad_fn": lambda m: m.outer(_grid(m, 3).requires_grad_(), _grid(m, 2)).grad_fn.name(),
    "expanded": lambda m: m.outer(m.ones(1, dtype=m.float64).expand(3), _grid(m, 2)),
    "strided": lambda m: m.outer(_grid(m, 6)[::2], _grid(m, 4)[1::2]),
    "addr_2d": lambda m: m.addr(m.zeros(3, 3), _grid(m, 3, 1).float(), _grid(m, 3).float()),
}


def _module_tree(m: Any) -> Any:
    class Block(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = m.nn.Linear(2, 2)
            self.b = m.nn.Sequential(m.nn.ReLU(), self.a)

    return Block()


def _named(walk: Callable[[Any, Any], Any]) -> Callable[[Any], Any]:
    return lambda m: walk(m, _module_tree(m))


def _memo_twice(m: Any, top: Any) -> Any:
    memo: set = set()
    first = [n for n, _ in top.named_modules(memo)]
    return first, [n for n, _ in top.named_modules(memo)], len(memo)


MODULE_WALKS: dict[str, Callable[[Any], Any]] = {
    "memo_twice": _named(_memo_twice),
    "memo_holds_a_child": _named(lambda m, top: [n for n, _ in top.named_modules({top.a})]),
    "memo_holds_the_top": _named(lambda m, top: [n for n, _ in top.named_modules({top})]),
    "memo_holds_modules": _named(
        lambda m, top: (lambda memo: (list(top.named_modules(memo)) and None, len(memo)))(set())
    ),
    "memo_list": _named(lambda m, top: [n for n, _ in top.named_modules([])]),
    "duplicates_kept": _named(
        lambda m, top: [n for n, _ in top.named_modules(remove_duplicate=False)]
    ),
    "prefix": _named(lambda m, top: [n for n, _ in top.named_modules(prefix="p")]),
    "duplicates_dropped": _named(lambda m, top: [n for n, _ in top.named_modules()]),
    "modules": _named(lambda m, top: len(list(top.modules()))),
    "named_parameters": _named(lambda m, top: [n for n, _ in top.named_parameters()]),
    "named_children": _named(lambda m, top: [n for n, _ in top.b.named_children()]),
}


def _numbered(
    groups: list[str], name: str = "SGD", step: bool = False, **options: Any
) -> Callable[[Any], Any]:
    """An optimizer's state_dict numbering of parameters listed as ``groups`` ("wbw": w, b,
    w in one group), after a step if asked."""

    def program(m: Any) -> Any:
        params = {
            "w": m.nn.Parameter(_f64(m, 1.0, -2.0)),
            "b": m.nn.Parameter(_f64(m, 0.5)),
            "c": m.nn.Parameter(_f64(m, 3.0)),
        }
        opt = getattr(m.optim, name)(
            [{"params": [params[k] for k in g]} for g in groups], lr=0.1, **options
        )
        if step:
            w, b, c = params.values()
            ((w * w).sum() + (b * c).sum()).backward()
            opt.step()
        sd = opt.state_dict()
        return (
            [g["params"] for g in sd["param_groups"]],
            {k: sorted(v) for k, v in sd["state"].items()},
        )

    return program


def _reloaded_with_a_repeat(m: Any) -> Any:
    def made() -> tuple[Any, Any, Any]:
        w, b = m.nn.Parameter(_f64(m, 1.0, -2.0)), m.nn.Parameter(_f64(m, 0.5))
        opt = m.optim.SGD([w, b, w], lr=0.1, momentum=0.9)
        ((w * w).sum() + b.sum()).backward()
        return w, b, opt

    *_, first = made()
    first.step()
    w, b, second = made()
    second.load_state_dict(first.state_dict())
    second.step()
    return w, b, second.state[w]["momentum_buffer"], second.state[b]["momentum_buffer"]


OPTIMIZER_NUMBERING: dict[str, Callable[[Any], Any]] = {
    "w_b_w": _numbered(["wbw"]),
    "w_w": _numbered(["ww"]),
    "two_groups": _numbered(["wb", "c"]),
    "two_groups_repeat": _numbered(["wbw", "c"]),
    "two_groups_repeats_later": _numbered(["c", "wbwb"]),
    "across_groups": _numbered(["w", "w"]),
    "momentum_step": _numbered(["bwb", "c"], step=True, momentum=0.9),
    "adam_step": _numbered(["wbw"], name="Adam", step=True),
    "reloaded": _reloaded_with_a_repeat,
    "add_param_group_repeat": lambda m: (
        lambda w: m.optim.SGD([w], lr=0.1).add_param_group({"params": [w]})
    )(m.nn.Parameter(_grid(m, 2))),
    "set_of_params": lambda m: (lambda w: m.optim.SGD([{"params": [w]}, {"params": {w}}], lr=0.1))(
        m.nn.Parameter(_grid(m, 2))
    ),
}


def _stepped_with_aliases(
    n: int, name: str, foreach: bool | None = None, **options: Any
) -> Callable[[Any], Any]:
    """Two optimizer steps over a parameter of ``n`` elements (from :data:`BIG` on, updated in
    its own memory: bare arrays into ``_assign``) while its ``.data``, ``detach()`` and a
    no_grad view are held: what each sees, and the version counters."""
    chosen = options if foreach is None else {**options, "foreach": foreach}

    def program(m: Any) -> Any:
        p = m.nn.Parameter(m.arange(float(n), dtype=m.float64) / n)
        q = m.nn.Parameter(m.ones(3, dtype=m.float64))
        data, detached = p.data, p.detach()
        with m.no_grad():
            view = p[:3]
        opt = getattr(m.optim, name)([p, q], lr=0.1, **chosen)
        for _ in range(2):
            opt.zero_grad()
            ((p * p).sum() + (q * 2).sum()).backward()
            opt.step()
        return (
            p[:3], p[-2:], data[:3], detached[-2:], view, q,
            p._version, detached._version, data._version,
        )  # fmt: skip

    return program


def _parameter_of_a_row(m: Any) -> Any:
    base = m.zeros(2, 3, dtype=m.float64)
    p = m.nn.Parameter(base[0])
    opt = m.optim.SGD([p], lr=0.5)
    p.sum().backward()
    opt.step()
    return base, p


OPTIMIZER_ALIASES: dict[str, Callable[[Any], Any]] = {
    **{
        f"{name}_{n}": _stepped_with_aliases(n, name, **options)
        for n in (5, BIG)
        for name, options in (
            ("SGD", {"momentum": 0.9}),
            ("Adam", {}),
            ("AdamW", {"weight_decay": 0.1}),
            ("RMSprop", {}),
            ("Adagrad", {}),
        )
    },
    **{
        f"{name}_{n}_foreach_{foreach}": _stepped_with_aliases(n, name, foreach)
        for n in (5, BIG)
        for name in ("SGD", "Adam")
        for foreach in (True, False)
    },
    "parameter_of_a_row": _parameter_of_a_row,
}


# -- f7befe1: NumPy ufuncs, split views, output_nr -------------------------------------------


def _requiring_grad(m: Any) -> Any:
    return _grid(m, 3).requires_grad_()


NUMPY_UFUNCS: dict[str, Callable[[Any], Any]] = {
    "exp": lambda m: np.exp(_requiring_grad(m)),
    "tensor_plus_number": lambda m: np.add(_requiring_grad(m), 1),
    "number_plus_tensor": lambda m: np.add(1, _requiring_grad(m)),
    "array_plus_tensor": lambda m: np.add(np.ones(3), _requiring_grad(m)),
    "plain_plus_requiring": lambda m: np.add(_grid(m, 3), _requiring_grad(m)),
    "requiring_plus_plain": lambda m: np.add(_requiring_grad(m), _grid(m, 3)),
    "non_leaf": lambda m: np.exp(_requiring_grad(m) * 2),
    "detached": lambda m: np.exp(_requiring_grad(m).detach()),
    "modf": lambda m: np.modf(_requiring_grad(m)),
    "numpy_of_a_detached": lambda m: (lambda x: x.numpy().tolist())(_requiring_grad(m).detach()),
    "isnan": lambda m: np.isnan(_grid(m, 3)),
    "greater": lambda m: np.greater(_grid(m, 3), 1),
    "0d": lambda m: np.exp(m.tensor(1.0, dtype=m.float64)),
    "int": lambda m: np.exp(m.arange(3)),
    "result_type": lambda m: type(np.add(_grid(m, 3), 1)).__name__,
    "t": lambda m: np.exp(_grid(m, 2, 3).t()),
    "complex": lambda m: np.exp(m.complex(_grid(m, 2), _grid(m, 2))),
    "float16": lambda m: np.exp(_grid(m, 2).half()),
    "logical_not": lambda m: np.logical_not(m.tensor([True, False])),
    "out_tensor": lambda m: (lambda x: (type(np.add(x, 1, out=x)).__name__, x))(_grid(m, 3)),
    "out_array": lambda m: (lambda a: (np.add(_grid(m, 3), 1, out=a), a.tolist())[1])(np.zeros(3)),
    "out_view": lambda m: (lambda x: (np.negative(x[1:], out=x[1:]), x)[1])(_grid(m, 3)),
}

NUMPY_UFUNCS_BFLOAT16: dict[str, Callable[[Any], Any]] = {
    "exp": lambda m: np.exp(m.ones(2, dtype=m.bfloat16)),
    "array_plus_tensor": lambda m: np.add(np.ones(2), m.ones(2, dtype=m.bfloat16)),
}


def _pieces(cut: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = _grid(m, 2, 3).requires_grad_()
        y = x * 1
        pieces = cut(y)
        first = pieces[0]
        labels = [p.grad_fn.name() for p in pieces], [p.output_nr for p in pieces]
        sum((p * (i + 1)).sum() for i, p in enumerate(pieces)).backward()
        shares = first.numel() == 0 or first.data_ptr() == y.data_ptr()  # (empty: no address)
        return labels, shares, first is y, x.grad

    return program


def _piece_written(cut: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = _grid(m, 2, 3)
        p = cut(x)[0]
        p.add_(10)
        return x, p._version, x._version, p is x, p.data_ptr() == x.data_ptr()

    return program


def _piece_of_a_leaf(cut: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = _grid(m, 2, 3).requires_grad_()
        p = cut(x)[0]
        return p.is_leaf, p.requires_grad, p.grad_fn.name(), p.data_ptr() == x.data_ptr()

    return program


def _piece_changed(cut: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = _grid(m, 2, 3).requires_grad_()
        y = x * 1
        cut(y)[0].mul_(2)
        y.sum().backward()
        return x.grad, y.grad_fn.name()

    return program


def _piece_of_a_leaf_under_no_grad(m: Any) -> Any:
    x = m.arange(6.0, dtype=m.float64, requires_grad=True)
    with m.no_grad():
        p = x.chunk(1)[0]
    p.mul_(2)


CUTS: dict[str, Callable[[Any], Any]] = {
    "chunk_1": lambda y: y.chunk(1),
    "chunk_1_dim_1": lambda y: y.chunk(1, 1),
    "split_larger": lambda y: y.split(5),
    "split_equal": lambda y: y.split(2),
    "split_sizes_one": lambda y: y.split([2]),
    "split_sizes_one_dim_1": lambda y: y.split([3], 1),
    "chunk_2": lambda y: y.chunk(2),
    "chunk_more": lambda y: y.chunk(5, 1),
    "split_negative_dim": lambda y: y.split(7, -1),
    "unbind": lambda y: y.unbind(1),
    "split_with_an_empty_piece": lambda y: y.split([0, 2]),
}


def _output_numbers(m: Any) -> Any:
    x = _grid(m, 3, 2).requires_grad_()
    largest = x.max(0)
    vm = m.var_mean(x, 0)
    return (
        x.output_nr,
        (x * 2).output_nr,
        largest.values.output_nr,
        largest.indices.output_nr,
        vm[0].output_nr,
        vm[1].output_nr,
        [u.output_nr for u in x.unbind(0)],
        x[1].output_nr,
        x.detach().output_nr,
        m.ones(2).output_nr,
        x.chunk(2)[1].output_nr,
        m.aminmax(x).max.output_nr,
        m.sort(x, 0)[1].output_nr,
        x.T.output_nr,
    )


def _output_nr_set(m: Any) -> Any:
    x = _grid(m, 3)
    x.output_nr = 1


def _function_output_numbers(m: Any) -> Any:
    class Two(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2, x * 3

        @staticmethod
        def backward(ctx: Any, a: Any, b: Any) -> Any:
            return a * 2 + b * 3

    a, b = Two.apply(_grid(m, 3).requires_grad_())
    return a.output_nr, b.output_nr, a.grad_fn is b.grad_fn


PIECES: dict[str, Callable[[Any], Any]] = {
    **{f"pieces_{k}": _pieces(cut) for k, cut in CUTS.items()},
    **{
        f"written_{k}": _piece_written(CUTS[k])
        for k in ("chunk_1", "split_larger", "split_sizes_one")
    },
    **{f"of_a_leaf_{k}": _piece_of_a_leaf(CUTS[k]) for k in ("chunk_1", "split_larger")},
    "of_a_leaf_changed": lambda m: _grid(m, 2, 3).requires_grad_().chunk(1)[0].add_(1),
    "of_a_leaf_under_no_grad": _piece_of_a_leaf_under_no_grad,
    "changed_of_several": _piece_changed(lambda y: y.split(1)),
    "changed_of_one": _piece_changed(lambda y: y.split(5)),
    "0d": lambda m: m.tensor(1.0).chunk(1),
    "split_empty": lambda m: [p.shape for p in m.ones(0, 3).split(2)],
    "chunk_empty": lambda m: [p.shape for p in m.ones(0, 3).chunk(1)],
    "no_grad_fn": lambda m: m.ones(2).chunk(1)[0].grad_fn,
    "output_nr": _output_numbers,
    "output_nr_is_read_only": _output_nr_set,
    "output_nr_of_a_function": _function_output_numbers,
    "output_nr_of_max": lambda m: [t.output_nr for t in _grid(m, 2, 3).requires_grad_().max(1)],
    "output_nr_of_topk": lambda m: [t.output_nr for t in _grid(m, 5).requires_grad_().topk(2)],
    "output_nr_of_split": lambda m: [
        t.output_nr for t in _grid(m, 5).requires_grad_().split([2, 3])
    ],
}

# -- f7befe1: a Function's gradient shapes, error classes, Module.to(complex) ----------------


def _function_gradient(
    shape: tuple, gradient: Callable[[Any, Any], Any], extra: bool = False
) -> Callable[[Any], Any]:
    """x.grad after backward through a Function whose backward returns ``gradient(m, g)``
    (with a non-tensor second argument if ``extra``)."""

    def program(m: Any) -> Any:
        class Twice(m.autograd.Function):
            @staticmethod
            def forward(ctx: Any, x: Any, k: Any = None) -> Any:
                return x * 2

            @staticmethod
            def backward(ctx: Any, g: Any) -> Any:
                r = gradient(m, g)
                return (r, None) if extra else r

        x = m.ones(*shape, dtype=m.float64, requires_grad=True)
        (Twice.apply(x, 3) if extra else Twice.apply(x)).sum().backward()
        return x.grad

    return program


def _gradient_through_autograd_grad(m: Any) -> Any:
    class Twice(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return m.ones(3, 2, dtype=m.float64)

    x = m.ones(2, dtype=m.float64, requires_grad=True)
    return m.autograd.grad(Twice.apply(x).sum(), x)


def _ones_of(*shape: int, dtype: str = "float64") -> Callable[[Any, Any], Any]:
    return lambda m, g: m.ones(*shape, dtype=getattr(m, dtype))


FUNCTION_GRADIENTS: dict[str, Callable[[Any], Any]] = {
    "same_shape": _function_gradient((2,), lambda m, g: g * 3),
    "too_long": _function_gradient((2,), _ones_of(3)),
    "sums_to_the_input": _function_gradient((2,), _ones_of(4, 2)),
    "smaller": _function_gradient((2,), _ones_of(1)),
    "0d_input": _function_gradient((), _ones_of(3)),
    "0d_gradient": _function_gradient((2,), lambda m, g: m.tensor(1.0, dtype=m.float64)),
    "keeps_size_1": _function_gradient((1, 2), _ones_of(3, 2)),
    "size_1_mismatch": _function_gradient((2, 1), _ones_of(2, 3)),
    "transposed": _function_gradient((2, 3), _ones_of(3, 2)),
    "int_gradient": _function_gradient((2,), _ones_of(2, dtype="int64")),
    "float32_gradient": _function_gradient((2,), lambda m, g: m.ones(2, dtype=m.float32) / 3),
    "none": _function_gradient((2,), lambda m, g: None),
    "empty_input": _function_gradient((0,), _ones_of(2)),
    "too_many": _function_gradient((2,), lambda m, g: (g, g)),
    "extra_argument_too_long": _function_gradient((2,), _ones_of(3), extra=True),
    "extra_argument_sums": _function_gradient((2,), _ones_of(2, 2), extra=True),
    "autograd_grad": _gradient_through_autograd_grad,
}

ERROR_CLASSES: dict[str, Callable[[Any], Any]] = {
    "index_tensors_mismatch": lambda m: _grid(m, 3, 3)[m.tensor([0, 1]), m.tensor([0, 1, 2])],
    "index_lists_mismatch": lambda m: _grid(m, 3, 3)[[0, 1], [0, 1, 2]],
    "index_tensors_broadcast": lambda m: _grid(m, 3, 3)[m.tensor([[0], [1]]), m.tensor([0, 1, 2])],
    "set_index_tensors_mismatch": lambda m: _set(
        _grid(m, 3, 3), (m.tensor([0, 1]), m.tensor([0, 1, 2])), 1.0
    ),
    "mask_and_index_mismatch": lambda m: _grid(m, 3, 3)[
        m.tensor([True, False, True]), m.tensor([0, 1, 2])
    ],
    "index_put_mismatch": lambda m: _grid(m, 3, 3).index_put_(
        (m.tensor([0, 1]), m.tensor([0, 1, 2])), m.tensor(1.0, dtype=m.float64)
    ),
    "index_out_of_range": lambda m: _grid(m, 3)[m.tensor([3])],
    "float_index": lambda m: _grid(m, 3)[m.tensor([0.0])],
    "apart_index_tensors_mismatch": lambda m: _grid(m, 3, 3, 3)[
        m.tensor([0, 1]), :, m.tensor([0, 1, 2])
    ],
    "fill_str": lambda m: _grid(m, 3).fill_("1"),
    "fill_bytes": lambda m: _grid(m, 3).fill_(b"1"),
    "fill_int_str": lambda m: m.arange(3).fill_("1"),
    "full_str": lambda m: m.full((2,), "1"),
    "full_like_str": lambda m: m.full_like(_grid(m, 3), "1"),
    "new_full_str": lambda m: _grid(m, 3).new_full((2,), "1"),
    "masked_fill_str": lambda m: _grid(m, 3).masked_fill(m.tensor([True, False, True]), "1"),
    "index_fill_str": lambda m: _grid(m, 3).index_fill(0, m.tensor([0]), "1"),
    "setitem_str": lambda m: _set(_grid(m, 3), 0, "1"),
    "clamp_str": lambda m: _grid(m, 3).clamp(min="1"),
    "add_str": lambda m: _grid(m, 3) + "1",
    "fill_numpy_float": lambda m: _grid(m, 3).fill_(np.float32(2.5)),
    "fill_0d_tensor": lambda m: _grid(m, 3).fill_(m.tensor(2.5)),
    "fill_1d_tensor": lambda m: _grid(m, 3).fill_(m.tensor([2.5])),
    "masked_fill_bool": lambda m: _grid(m, 3).masked_fill(m.tensor([True, False, True]), True),
}


def _module_to(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    """A float64 Linear with an int buffer after ``.to(...)`` (dtypes given by name): what
    changed and which warnings came."""

    def program(m: Any) -> Any:
        lin = m.nn.Linear(2, 2, dtype=m.float64)
        lin.register_buffer("steps", m.tensor(3))
        given = [getattr(m, a) for a in args]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            r = lin.to(*given, **{k: getattr(m, v) for k, v in kwargs.items()})
        return (
            r is lin,
            lin.weight.dtype,
            lin.bias.dtype,
            lin.steps.dtype,
            sorted({w.category.__name__ for w in caught}),
            type(lin.weight).__name__,
            lin.weight.requires_grad,
        )

    return program


def _complex_then_float(m: Any) -> Any:
    lin = m.nn.Linear(2, 2, dtype=m.float64).to(m.complex128)
    lin.to(m.float32)
    # (no warnings compared: torch warns of the dropped imaginary parts once per process)
    return lin.weight.dtype, lin.bias.dtype


def _complex_kept_by_casts(m: Any) -> Any:
    lin = m.nn.Linear(2, 2).to(m.complex64)
    dtypes = []
    for cast in (lin.double, lin.half, lin.float):
        cast()
        dtypes.append(lin.weight.dtype)
    return dtypes


def _complex_forward(m: Any) -> Any:
    lin = m.nn.Linear(2, 2, dtype=m.float64)
    with m.no_grad():
        lin.weight.copy_(m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64))
        lin.bias.fill_(0.5)
    lin.to(m.complex128)
    z = m.complex(m.ones(1, 2, dtype=m.float64), m.ones(1, 2, dtype=m.float64))
    y = lin(z)
    y.abs().sum().backward()
    return y, lin.weight.grad


MODULE_TO: dict[str, Callable[[Any], Any]] = {
    **{d: _module_to(d) for d in ("complex64", "complex128", "cfloat", "int32", "float16", "bool")},
    "keyword_complex": _module_to(dtype="complex64"),
    "complex_then_float": _complex_then_float,
    "complex_kept_by_casts": _complex_kept_by_casts,
    "complex_forward": _complex_forward,
    "type_complex": lambda m: m.nn.Linear(2, 2).type(m.complex64).weight.dtype,
}

# -- fd00826: grad-mode blocks ---------------------------------------------------------------


def _records(m: Any) -> bool:
    return (_requiring_grad(m) * 2).requires_grad


def _nested(m: Any) -> Any:
    seen = []
    with m.no_grad():
        seen.append(_records(m))
        with m.enable_grad():
            seen.append(_records(m))
            with m.no_grad():
                seen.append(_records(m))
            seen.append(_records(m))
        seen.append(m.is_grad_enabled())
    return seen, m.is_grad_enabled()


def _raised_inside(m: Any) -> Any:
    try:
        with m.no_grad():
            raise ValueError
    except ValueError:
        pass
    return m.is_grad_enabled()


def _decorators(m: Any) -> Any:
    @m.no_grad()
    def called(x: Any) -> Any:
        return (x * 2).requires_grad, m.is_grad_enabled()

    @m.no_grad
    def bare(x: Any) -> Any:
        return (x * 2).requires_grad

    @m.enable_grad
    def enabling(x: Any) -> Any:
        return (x * 2).requires_grad

    x = _requiring_grad(m)
    with m.no_grad():
        enabled = enabling(x)
    return called(x), bare(x), enabled, m.is_grad_enabled(), called.__name__, bare.__name__


def _generator(m: Any) -> Any:
    @m.no_grad()
    def steps() -> Any:
        for _ in range(2):
            yield m.is_grad_enabled()

    return [(v, m.is_grad_enabled()) for v in steps()]


def _set_grad_enabled_calls(m: Any) -> Any:
    seen = [m.is_grad_enabled()]
    m.set_grad_enabled(False)
    seen.append(m.is_grad_enabled())
    m.set_grad_enabled(True)
    seen.append(m.is_grad_enabled())
    with m.set_grad_enabled(False):
        seen.append(m.is_grad_enabled())
    return seen, m.is_grad_enabled()


def _set_grad_enabled_decorates(m: Any) -> Any:
    @m.set_grad_enabled(False)
    def f() -> bool:
        return m.is_grad_enabled()

    return m.is_grad_enabled(), f(), m.is_grad_enabled()


def _left_in_another_context(m: Any) -> Any:
    block = m.no_grad()
    context = contextvars.copy_context()
    context.run(block.__enter__)
    inside = context.run(m.is_grad_enabled)
    block.__exit__(None, None, None)
    return inside, m.is_grad_enabled()


def _other_thread(m: Any) -> Any:
    seen: list = []
    with m.no_grad():
        t = threading.Thread(target=lambda: seen.append(m.is_grad_enabled()))
        t.start()
        t.join()
        seen.append(m.is_grad_enabled())
    return seen


def _with_inference_mode(m: Any) -> Any:
    seen = []
    with m.inference_mode():
        with m.enable_grad():
            seen.append(m.is_grad_enabled())
            seen.append(_records(m))
        with m.no_grad():
            seen.append(m.is_grad_enabled())
        seen.append(m.is_grad_enabled())
    with m.no_grad(), m.inference_mode(False):
        seen.append(m.is_grad_enabled())
    return seen


def _entered_values(m: Any) -> Any:
    with m.no_grad() as a, m.enable_grad() as b, m.set_grad_enabled(False) as c:
        pass
    return a, b, c


def _method_decorated(m: Any) -> Any:
    class A:
        @m.no_grad()
        def f(self) -> bool:
            return m.is_grad_enabled()

    return A().f(), A.f.__name__


def _switch_then_block(m: Any) -> Any:
    switch = m.set_grad_enabled(False)
    before = m.is_grad_enabled()
    with switch:
        inside = m.is_grad_enabled()
    return before, inside, m.is_grad_enabled()


GRAD_MODE: dict[str, Callable[[Any], Any]] = {
    "nested": _nested,
    "raised_inside": _raised_inside,
    "decorators": _decorators,
    "generator": _generator,
    "set_grad_enabled_calls": _set_grad_enabled_calls,
    "set_grad_enabled_decorates": _set_grad_enabled_decorates,
    "left_in_another_context": _left_in_another_context,
    "other_thread": _other_thread,
    "inference_mode": _with_inference_mode,
    "entered_values": _entered_values,
    "method_decorated": _method_decorated,
    "instances": lambda m: (
        isinstance(m.no_grad(), m.no_grad),
        isinstance(m.enable_grad(), m.enable_grad),
    ),
    "switch_then_block": _switch_then_block,
    "no_grad_of_a_non_callable": lambda m: callable(m.no_grad(3)),
}

GROUPS: dict[str, dict[str, Callable[[Any], Any]]] = {
    "contiguous": CONTIGUOUS,
    "stack_cat": STACK_CAT,
    "layouts": LAYOUTS,
    "layout_sweep": LAYOUT_SWEEP,
    "out_overlap": OUT_OVERLAP,
    "index_put": INDEX_PUT,
    "writes": {k: _written(w) for k, w in WRITES.items()},
    "writes_through_operands": {k: _written(w) for k, w in WRITES_THROUGH_OPERANDS.items()},
    "aliases": ALIASES,
    "alias_writes": ALIAS_WRITES,
    "add_alpha": ADD_ALPHA,
    "outer": OUTER,
    "module_walks": MODULE_WALKS,
    "optimizer_numbering": OPTIMIZER_NUMBERING,
    "optimizer_aliases": OPTIMIZER_ALIASES,
    "numpy_ufuncs": NUMPY_UFUNCS,
    "pieces": PIECES,
    "function_gradients": FUNCTION_GRADIENTS,
    "error_classes": ERROR_CLASSES,
    "module_to": MODULE_TO,
    "grad_mode": GRAD_MODE,
}


@pytest.mark.parametrize("group", list(GROUPS))
def test_matches_torch(spec: str, group: str) -> None:
    same_each(GROUPS[group], spec)


@pytest.mark.parametrize("group", ["add_alpha", "numpy_ufuncs"])
def test_bfloat16_matches_torch(group: str) -> None:
    """The bfloat16 cases, on the backend that has bfloat16 (NumPy has none)."""
    cases = {"add_alpha": ADD_ALPHA_BFLOAT16, "numpy_ufuncs": NUMPY_UFUNCS_BFLOAT16}[group]
    same_each(cases, "torch:cpu")


#: A few of the cases above on cuPyNumeric (no data_ptr or strides: it has neither layout
#: nor addresses as torch's).
ON_CUNUMERIC = {
    "real": CONTIGUOUS["real"],
    "imag": CONTIGUOUS["imag"],
    "index_put_expand": INDEX_PUT["expand"],
    "index_put_repeated": INDEX_PUT["repeated_indices"],
    "set_shift": _written(WRITES["set_shift"]),
    "copy_shift": _written(WRITES["copy_shift"]),
    "add_shift_alpha": _written(WRITES["add_shift_alpha"]),
    "add_alpha": ADD_ALPHA["8_float64_2_add"],
    "alias_versions": ALIASES["versions"],
    "parameter": ALIASES["parameter"],
    "outer_2d": OUTER["2d"],
    "numbering": OPTIMIZER_NUMBERING["w_b_w"],
}


@pytest.mark.cunumeric
def test_matches_torch_on_cunumeric() -> None:
    same_each(ON_CUNUMERIC, "cunumeric")
