"""``out=`` of the elementwise ops outside ops/elementwise.py (numeric, integer, complex,
torch.special's incomplete gamma, Bessel and polynomial functions, ``F.normalize``) against
their inputs' memory, and the layout ``fill_`` with a tensor value leaves, each compared
with torch 2.13 running the same program: an ``out`` over part of an input's memory (or
all of it with other strides) is PyTorch's TensorIterator error, the very same elements
are an in-place write, an expanded ``out`` repeats elements (refused).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
from snippet_outcomes import same, same_each


def _values(m: Any, dtype: str) -> Any:
    """Eight values of ``dtype`` in every op's domain here: (0, 1) for floats, 1..8 for
    integers, (0, 1) plus an imaginary part for complex."""
    if dtype.startswith(("int", "uint")):
        return m.arange(1, 9, dtype=getattr(m, dtype))
    x = m.arange(1.0, 9.0, dtype=m.float64) / 10
    if dtype.startswith("complex"):
        x = m.complex(x, 1 - x)
    return x.to(getattr(m, dtype))


Call = Callable[[Any, tuple, Any], Any]
FLOATS = ("float64", "float32", "float16", "bfloat16")
INTEGERS = ("int64", "int32", "int16", "int8", "uint8")

#: Each op as ``call(m, operands, out)`` with its operand count and the dtypes it takes.
OPS: dict[str, tuple[Call, int, tuple[str, ...]]] = {
    "fmod": (lambda m, a, o: m.fmod(*a, out=o), 2, (*FLOATS, "int64", "int8")),
    "hypot": (lambda m, a, o: m.hypot(*a, out=o), 2, FLOATS),
    "logaddexp": (lambda m, a, o: m.logaddexp(*a, out=o), 2, ("float64", "float32", "complex128")),
    "logaddexp2": (lambda m, a, o: m.logaddexp2(*a, out=o), 2, ("float64", "bfloat16")),
    "clamp_min": (lambda m, a, o: m.clamp_min(*a, out=o), 2, ("float64", "float16", "int32")),
    "clamp_max": (lambda m, a, o: m.clamp_max(*a, out=o), 2, ("float64", "int64", "uint8")),
    "clamp_min_number": (lambda m, a, o: m.clamp_min(a[0], 0.3, out=o), 1, ("float32",)),
    "frac": (lambda m, a, o: m.frac(*a, out=o), 1, FLOATS),
    "gcd": (lambda m, a, o: m.gcd(*a, out=o), 2, INTEGERS),
    "lcm": (lambda m, a, o: m.lcm(*a, out=o), 2, ("int64", "int16")),
    "bitwise_left_shift": (lambda m, a, o: m.bitwise_left_shift(*a, out=o), 2, INTEGERS),
    "bitwise_right_shift": (lambda m, a, o: m.bitwise_right_shift(*a, out=o), 2, ("int64",)),
    "angle": (lambda m, a, o: m.angle(*a, out=o), 1, ("float64", "float32", "complex128")),
    "sgn": (lambda m, a, o: m.sgn(*a, out=o), 1, ("float64", "complex128", "complex64", "int64")),
    "gammainc": (lambda m, a, o: m.special.gammainc(*a, out=o), 2, ("float64", "float32")),
    "gammaincc": (lambda m, a, o: m.special.gammaincc(*a, out=o), 2, ("float64",)),
    "bessel_j0": (lambda m, a, o: m.special.bessel_j0(*a, out=o), 1, ("float64", "float32")),
    "modified_bessel_k1": (
        lambda m, a, o: m.special.modified_bessel_k1(*a, out=o),
        1,
        ("float64",),
    ),
    "chebyshev_polynomial_t": (
        lambda m, a, o: m.special.chebyshev_polynomial_t(a[0], 3, out=o),
        1,
        ("float64", "float32"),
    ),
    "hermite_polynomial_h_tensor_n": (
        lambda m, a, o: m.special.hermite_polynomial_h(a[0], m.full_like(a[0], 2), out=o),
        1,
        ("float64",),
    ),
    "normalize": (
        lambda m, a, o: m.nn.functional.normalize(a[0], dim=0, out=o),
        1,
        ("float64", "float32"),
    ),
}


def _program(call: Call, arity: int, dtype: str, case: str) -> Callable[[Any], Any]:
    """``case`` of ``call`` on eight values ``x`` of ``dtype``: what ``x`` (or the expanded
    ``out``) holds after it (or the error)."""

    def program(m: Any) -> Any:
        x = _values(m, dtype)
        if case == "partly":  # out over part of the first operand
            call(m, (x[:4], x[4:])[:arity], x[1:5])
        elif case == "partly_second":
            call(m, (x[4:], x[:4]), x[1:5])
        elif case == "same_first":  # in place
            call(m, (x[:4], x[4:])[:arity], x[:4])
        elif case == "same_second":
            call(m, (x[4:], x[:4]), x[:4])
        elif case == "transposed":  # the same memory with other strides
            y = x[:4].view(2, 2)
            call(m, (y, x[4:].view(2, 2))[:arity], y.t())
        elif case == "expanded_out":
            out = m.zeros(1, dtype=x.dtype).expand(4)
            call(m, (x[:4], x[4:])[:arity], out)
            return out
        elif case == "expanded_input":  # an expanded operand is not dense: not checked
            call(m, (x[:1].expand(3), x[5:])[:arity], x[5:])
        return x

    return program


def _cases(name: str, spec: str) -> dict[str, Callable[[Any], Any]]:
    call, arity, taken = OPS[name]
    cases = ["partly", "same_first", "transposed", "expanded_out", "expanded_input"]
    if arity == 2:
        cases += ["partly_second", "same_second"]
    programs = {}
    for i, dtype in enumerate(taken):
        if dtype == "bfloat16" and spec == "numpy":
            continue  # (NumPy has no bfloat16)
        # every case in the first dtype; in the others, the overlap and the in-place write
        for case in cases if i == 0 else cases[:2]:
            programs[f"{dtype}-{case}"] = _program(call, arity, dtype, case)
    return programs


@pytest.mark.parametrize("name", list(OPS))
def test_out_against_the_inputs_memory(spec: str, name: str) -> None:
    same_each(_cases(name, spec), spec, single=2)


#: The in-place forms, ``x[1:].op_(operand)``: the operand over part of x's memory, the same
#: elements, a copy, or the same memory transposed.
OPERANDS: dict[str, Callable[[Any], Any]] = {
    "shifted": lambda x: x[:-1],
    "same": lambda x: x[1:],
    "apart": lambda x: x[1:].clone(),
}
IN_PLACE_DTYPES = {
    "fmod_": "float64",
    "hypot_": "float32",
    "clamp_min_": "float64",
    "clamp_max_": "int64",
    "gcd_": "int64",
    "lcm_": "int32",
    "bitwise_left_shift_": "int64",
    "bitwise_right_shift_": "int16",
}


def _in_place(op: str, cut: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    def program(m: Any) -> Any:
        x = _values(m, IN_PLACE_DTYPES[op])
        if cut is None:
            y = x[:4].view(2, 2)
            getattr(y, op)(y.t())
        else:
            getattr(x[1:], op)(cut(x))
        return x

    return program


IN_PLACE: dict[str, Callable[[Any], Any]] = {
    f"{op}{kind}": _in_place(op, cut)
    for op in IN_PLACE_DTYPES
    for kind, cut in {**OPERANDS, "transposed": None}.items()
}


def test_in_place_forms_against_the_operands_memory(spec: str) -> None:
    same_each(IN_PLACE, spec)


# -- fill_ with a 0-d tensor value writes into the tensor's own memory ----------------------


def _layout(y: Any) -> Any:
    return y.stride(), y.is_contiguous(), y


def _filled(m: Any, x: Any, value: float = 1.5) -> Any:
    return x.fill_(m.tensor(value, dtype=x.dtype))


FILLS: dict[str, Callable[[Any], Any]] = {
    "float": lambda m: _layout(_filled(m, m.zeros(3, 2))),
    "int64": lambda m: _layout(_filled(m, m.zeros(3, 2, dtype=m.int64), 7)),
    "bool": lambda m: _layout(_filled(m, m.zeros(2, 3, dtype=m.bool), 1)),
    "complex": lambda m: _layout(_filled(m, m.zeros(2, 3, dtype=m.complex64))),
    "negative_zero": lambda m: _layout(_filled(m, m.ones(2, 2), -0.0)),
    "number_value_cast": lambda m: _layout(m.zeros(3, 2, dtype=m.int32).fill_(m.tensor(2.7))),
    "then_view": lambda m: _filled(m, m.zeros(3, 2)).view(6),
    "then_in_place": lambda m: _layout(_filled(m, m.zeros(3, 2)).mul_(2)),
    "then_row_written": lambda m: (lambda x: (x[1].add_(1), _layout(x))[1])(
        _filled(m, m.zeros(3, 2))
    ),
    "then_transposed_view": lambda m: _layout(_filled(m, m.zeros(3, 2)).t()),
    "base_with_a_view": lambda m: (lambda x, v: (_filled(m, x), _layout(x), _layout(v))[1:])(
        *(lambda x: (x, x[1]))(m.zeros(3, 2))
    ),
    "transposed_tensor": lambda m: _layout(_filled(m, m.zeros(2, 3).t())),
    "channels_last": lambda m: _layout(
        _filled(m, m.zeros(2, 3, 2, 2).contiguous(memory_format=m.channels_last))
    ),
    "a_strided_view": lambda m: (lambda x: (_layout(_filled(m, x[:, 1])), x))(m.zeros(3, 2)),
    "a_row_view": lambda m: (lambda x: (_layout(_filled(m, x[1:])), x))(m.zeros(3, 2)),
    "one_element": lambda m: _layout(_filled(m, m.zeros(1, 1))),
    "zero_d": lambda m: _layout(_filled(m, m.zeros(()))),
    "numpy_memory": lambda m: (lambda a: (_layout(_filled(m, m.from_numpy(a))), a.tolist()))(
        np.zeros((3, 2))
    ),
    "value_requires_grad": lambda m: (
        lambda w: (lambda x: (_layout(x), m.autograd.grad(x.sum(), w)))(m.zeros(3, 2).fill_(w))
    )(m.tensor(2.0, requires_grad=True)),
}


def test_fill_with_a_tensor_value_as_torch(spec: str) -> None:
    same_each(FILLS, spec)


def test_fill_of_an_empty_tensor_keeps_its_strides() -> None:
    same(lambda m: _layout(_filled(m, m.zeros(0, 3))), "torch:cpu")


# -- found in files this fix did not own ----------------------------------------------------


def _x(m: Any) -> Any:
    return _values(m, "float64")


#: out= of functions checked by ops/out_arguments.py's OUT table, whose kernels in torch 2.13
#: refuse an out over part of the input's memory (the very same elements are allowed).
PARTLY_ELSEWHERE: dict[str, Callable[[Any], Any]] = {
    "bernoulli": lambda m: (lambda x: (m.bernoulli(x[:4], out=x[1:5]), x)[1])(_x(m)),
    "normal_mean": lambda m: (lambda x: (m.normal(x[:4], 1.0, out=x[1:5]), x)[1])(_x(m)),
    "normal_std": lambda m: (lambda x: (m.normal(0.0, x[:4], out=x[1:5]), x)[1])(_x(m)),
    "msort": lambda m: (lambda x: (m.msort(x[:4], out=x[1:5]), x)[1])(_x(m)),
    "sort_values": lambda m: (
        lambda x: (m.sort(x[:4], out=(x[1:5], m.empty(4, dtype=m.int64))), x)[1]
    )(_x(m)),
    "topk_values": lambda m: (
        lambda x: (m.topk(x[:4], 4, out=(x[1:5], m.empty(4, dtype=m.int64))), x)[1]
    )(_x(m)),
    "frexp_mantissa": lambda m: (
        lambda x: (m.frexp(x[:4], out=(x[1:5], m.empty(4, dtype=m.int32))), x)[1]
    )(_x(m)),
}


def test_out_partly_over_the_input_of_functions_in_the_out_table(spec: str) -> None:
    same_each(PARTLY_ELSEWHERE, spec)


def test_normal_into_its_mean_as_torch(spec: str) -> None:
    same(lambda m: (lambda x: (m.normal(x[:4], 0.0, out=x[:4]), x)[1])(_x(m)), spec)
