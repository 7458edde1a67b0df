"""Random draws and autograd, against torch 2.13: an in-place fill (``normal_``,
``uniform_``, ``bernoulli_``, ``exponential_``, ``geometric_``, ``log_normal_``, ``cauchy_``,
``random_``) of a tensor in a graph keeps it there through PyTorch's node (``NormalBackward0``
...), which gives zero gradients; ``bernoulli(p)`` of a ``p`` that requires grad gives a result
that does (``BernoulliBackward0``), as do ``normal`` (``NormalBackward1/2/3``, zero gradients
to its tensor mean and std) and ``poisson`` (``PoissonBackward0``), and ``binomial`` (whose
backward raises); leaves that require grad are refused, ``no_grad`` records
nothing; ``out=`` refuses what torch refuses. The draws themselves are each backend's: the
programs compare graphs, flags, gradients and errors, never drawn values.
"""

from __future__ import annotations

from typing import Any

import pytest
from snippet_outcomes import grad_fn_name as _name
from snippet_outcomes import grid, leaf, same_each, walk
from tw_backends import FAST


@pytest.fixture(params=FAST)
def spec(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture(params=[*FAST, pytest.param("cunumeric", marks=pytest.mark.cunumeric)])
def spec_all(request: pytest.FixtureRequest) -> str:
    return request.param


#: Fills and their arguments (the overload decides PyTorch's node name: random_'s three).
FILLS = {
    "normal_": ("normal_", ()),
    "normal_args": ("normal_", (1.0, 2.0)),
    "uniform_": ("uniform_", ()),
    "uniform_args": ("uniform_", (1.0, 2.0)),
    "bernoulli_": ("bernoulli_", ()),
    "bernoulli_p": ("bernoulli_", (0.3,)),
    "exponential_": ("exponential_", ()),
    "geometric_": ("geometric_", (0.5,)),
    "log_normal_": ("log_normal_", ()),
    "cauchy_": ("cauchy_", ()),
    "random_": ("random_", ()),
    "random_to": ("random_", (5,)),
    "random_from_to": ("random_", (1, 5)),
    "random_from_none": ("random_", (1, None)),
}


def _fill_of_non_leaf(m: Any, fill: str, args: tuple) -> tuple:
    p = leaf(m, 3)
    q = p * 1
    getattr(q, fill)(*args)
    (q * 2).sum().backward()
    return q.is_leaf, q.requires_grad, walk(q.grad_fn, 2), p.grad, q.shape, q.dtype


def test_fills_of_non_leaves(spec_all: str) -> None:
    same_each(
        {k: (lambda m, f=f, a=a: _fill_of_non_leaf(m, f, a)) for k, (f, a) in FILLS.items()},
        spec_all,
    )


def _bernoulli_tensor_p(m: Any, how: str) -> tuple:
    p = m.full((3,), 0.5, dtype=m.float64, requires_grad=how != "p_needs_none")
    if how == "self_needs_none":  # a result that requires grad through p alone
        q = m.zeros(2, 3, dtype=m.float32)
    else:
        x = leaf(m, 2, 3)
        q = x * 1
    q.bernoulli_(p * 1 if p.requires_grad else p)
    (q * 2).sum().backward()
    return q.requires_grad, walk(q.grad_fn, 2), p.grad, q.dtype


def test_bernoulli_fill_with_tensor_probabilities(spec: str) -> None:
    same_each(
        {
            h: (lambda m, h=h: _bernoulli_tensor_p(m, h))
            for h in ("self_needs_none", "non_leaf", "p_needs_none")
        },
        spec,
    )


def _leaf_fill(m: Any, fill: str, how: str) -> Any:
    x = m.zeros(3, dtype=m.float64, requires_grad=True)
    if how == "refused":
        return getattr(x, fill)()
    with m.no_grad():
        getattr(x, fill)()
    return x.is_leaf, x.requires_grad, _name(x), x.shape


def _fill_under_no_grad(m: Any, fill: str) -> tuple:
    p = leaf(m, 3)
    q = p * 1
    with m.no_grad():
        getattr(q, fill)()
    (q * 2).sum().backward()
    return _name(q), p.grad


def _fill_of_view(m: Any, fill: str) -> tuple:
    p = leaf(m, 2, 3)
    q = p * 1
    v = q[0]
    getattr(v, fill)()
    (q * 2).sum().backward()
    return _name(q), _name(v), p.grad


def test_leaves_views_and_no_grad(spec: str) -> None:
    programs = {}
    for fill in ("normal_", "uniform_", "bernoulli_", "exponential_", "random_"):
        for how in ("refused", "no_grad"):
            programs[f"leaf_{fill}_{how}"] = lambda m, f=fill, h=how: _leaf_fill(m, f, h)
        programs[f"no_grad_{fill}"] = lambda m, f=fill: _fill_under_no_grad(m, f)
        programs[f"view_{fill}"] = lambda m, f=fill: _fill_of_view(m, f)
    same_each(programs, spec)


def _bernoulli_of(m: Any, how: str) -> Any:
    p = m.full((2, 3), 0.25, dtype=m.float64, requires_grad=True)
    if how == "no_grad":
        with m.no_grad():
            r = m.bernoulli(p)
        return r.requires_grad, _name(r)
    r = {
        "function": lambda: m.bernoulli(p),
        "method": lambda: p.bernoulli(),
        "non_leaf": lambda: m.bernoulli(p * 1),
        "number_p": lambda: m.bernoulli(p, 0.5),
        "number_p_method": lambda: p.bernoulli(0.5),
    }[how]()
    seen = r.requires_grad, walk(r.grad_fn, 1), r.shape, r.dtype
    try:
        (r * 2).sum().backward()
    except RuntimeError as e:  # (number_p: torch defines no derivative)
        return seen, type(e).__name__
    return seen, p.grad


def test_bernoulli_of_probabilities_that_require_grad(spec: str) -> None:
    hows = ("function", "method", "non_leaf", "number_p", "number_p_method", "no_grad")
    same_each({h: (lambda m, h=h: _bernoulli_of(m, h)) for h in hows}, spec)


def _draw_like(m: Any, how: str) -> tuple:
    x = leaf(m, 2, 3)
    r = {
        "rand_like": lambda: m.rand_like(x),
        "randn_like": lambda: m.randn_like(x),
        "randint_like": lambda: m.randint_like(x, 5),
        "multinomial": lambda: m.multinomial(x, 2),
    }[how]()
    return r.requires_grad, _name(r), r.shape, r.dtype


def test_draws_shaped_like_tensors_that_require_grad(spec: str) -> None:
    hows = ("rand_like", "randn_like", "randint_like", "multinomial")
    same_each({h: (lambda m, h=h: _draw_like(m, h)) for h in hows}, spec)


def _bernoulli_out(m: Any, how: str) -> Any:
    out = m.empty(3, dtype=m.float64)
    if how == "grad_p":
        return m.bernoulli(leaf(m, 3) / 4, out=out)
    if how == "grad_out":
        return m.bernoulli(grid(m, 3) / 4, out=out.requires_grad_())
    with m.no_grad():
        r = m.bernoulli(leaf(m, 3) / 4, out=out)
    return r is out, r.requires_grad, r.shape


def _normal_out(m: Any, dtype: str, form: str, n: int = 3) -> Any:
    mean = grid(m, n)  # (a view, of arange)
    if form == "grad":
        mean.requires_grad_()
    args = {
        "tf": (mean, 1.0),
        "ft": (1.0, mean),
        "tt": (mean, mean),
        "ff": (1.0, 2.0, (n,)),
        "grad": (mean, 1.0),
    }[form]
    r = m.normal(*args, out=m.empty(n, dtype=getattr(m, dtype)))
    return r.shape, r.dtype


def test_random_out_arguments(spec_all: str) -> None:
    programs = {h: (lambda m, h=h: _bernoulli_out(m, h)) for h in ("grad_p", "grad_out", "none")}
    for dtype in ("int64", "int8", "uint8", "bool", "float16", "float32", "complex64"):
        for form in ("tf", "ft", "tt", "ff"):
            programs[f"normal_{dtype}_{form}"] = lambda m, d=dtype, f=form: _normal_out(m, d, f)
    programs["normal_int_grad"] = lambda m: _normal_out(m, "int64", "grad")
    programs["normal_int_empty"] = lambda m: _normal_out(m, "int64", "tf", 0)
    same_each(programs, spec_all)


# -- draws with tensor parameters: normal, poisson, binomial ----------------------------------


def _normal_of(m: Any, form: str) -> tuple:
    mean = leaf(m, 3)
    std = m.ones(3, dtype=m.float64, requires_grad=True)
    r = {
        "tt": lambda: m.normal(mean, std),
        "tf": lambda: m.normal(mean, 1.0),
        "ft": lambda: m.normal(0.0, std),
        "t_default": lambda: m.normal(mean),
        "tt_std_needs_none": lambda: m.normal(mean, std.detach()),
        "broadcast": lambda: m.normal(mean.reshape(3, 1) * 2, std),
        "generator": lambda: m.normal(mean=mean, std=2.0, generator=m.Generator()),
        "float32_mean": lambda: m.normal(mean.float(), std),  # (the result: mean's dtype)
        "0d_mean": lambda: m.normal(mean.sum(), 1.0),
    }[form]()
    seen = r.requires_grad, walk(r.grad_fn, 2), r.shape, r.dtype
    (r * 2).sum().backward()
    return seen, mean.grad, std.grad


def test_normal_of_parameters_that_require_grad(spec: str) -> None:
    forms = ("tt", "tf", "ft", "t_default", "tt_std_needs_none", "broadcast", "generator")
    forms += ("float32_mean", "0d_mean")
    same_each({f: (lambda m, f=f: _normal_of(m, f)) for f in forms}, spec)


def _normal_arguments(m: Any, how: str) -> Any:
    ones = m.ones(3, dtype=m.float64)
    r = {
        "size_with_tensor": lambda: m.normal(ones, 1.0, size=(3,)),
        "requires_grad_with_tensor": lambda: m.normal(ones, 1.0, requires_grad=True),
        "dtype_with_tensor": lambda: m.normal(ones, 1.0, dtype=m.float32),
        "complex_std": lambda: m.normal(ones, ones.to(m.complex128)),
        "complex_std_number_mean": lambda: m.normal(0.0, ones.to(m.complex128)),
        "int_mean_tensor_std": lambda: m.normal(ones.long(), ones),
        "float16_mean": lambda: m.normal(ones.half(), ones),
        "int_mean_float_out": lambda: m.normal(ones.long(), ones, out=m.empty(3)),
        "complex_out": lambda: m.normal(ones, 1.0, out=m.empty(3, dtype=m.complex64)),
    }[how]()
    # (a complex out draws complex noise, as PyTorch's kernel does into it)
    return r.shape, r.dtype, bool(r.imag.ne(0).any()) if r.is_complex() else None


def test_normal_argument_forms_and_dtypes(spec: str) -> None:
    hows = ("size_with_tensor", "requires_grad_with_tensor", "dtype_with_tensor", "complex_std")
    hows += ("complex_std_number_mean", "int_mean_tensor_std", "float16_mean")
    hows += ("int_mean_float_out", "complex_out")
    same_each({h: (lambda m, h=h: _normal_arguments(m, h)) for h in hows}, spec)


def _poisson_of(m: Any) -> tuple:
    rates = leaf(m, 3)
    r = m.poisson(rates)
    seen = r.requires_grad, walk(r.grad_fn, 1)
    (r * 2).sum().backward()
    return seen, rates.grad


def test_poisson_of_rates_that_require_grad(spec: str) -> None:
    same_each({"poisson": _poisson_of}, spec)


def _binomial_of(m: Any, how: str) -> Any:
    count = m.full((3,), 4.0, dtype=m.float64, requires_grad=how in ("both", "count"))
    prob = m.full((3,), 0.5, dtype=m.float64, requires_grad=how in ("both", "prob"))
    if how == "float32_prob":
        return m.binomial(count, prob.float())
    if how == "float16":
        return m.binomial(count.half(), prob.half())
    r = m.binomial(count, prob[:1] if how == "broadcast" else prob)
    seen = r.requires_grad, walk(r.grad_fn, 1), r.shape, r.dtype
    if not r.requires_grad:
        return seen
    try:
        (r * 2).sum().backward()
    except RuntimeError as e:  # (torch defines no derivative)
        return seen, str(e)
    return seen, count.grad, prob.grad


def test_binomial_of_parameters_that_require_grad(spec: str) -> None:
    hows = ("both", "count", "prob", "none", "broadcast", "float32_prob", "float16")
    same_each({h: (lambda m, h=h: _binomial_of(m, h)) for h in hows}, spec)


def _normal_of_view_into_out(m: Any, how: str) -> Any:
    # (std 0: the draws are the means themselves; a view and another tensor each start at
    # offset 0 of their own memory on cuPyNumeric: not the same elements)
    if how == "view_mean":
        return m.normal(grid(m, 3), 0.0, out=m.empty(3, dtype=m.float64))
    x = grid(m, 6)
    return m.normal(m.ones(3, dtype=m.float64), 0.0, out=x[:3]), x


@pytest.mark.cunumeric
def test_normal_of_a_view_into_out_on_cunumeric() -> None:
    hows = ("view_mean", "view_out")
    same_each({h: (lambda m, h=h: _normal_of_view_into_out(m, h)) for h in hows}, "cunumeric")
