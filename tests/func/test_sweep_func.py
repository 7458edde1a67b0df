"""A seeded differential sweep of ``tw.func`` against ``torch.func`` 2.13: ``vmap`` (in_dims
and out_dims as ints, None and trees; randomness; chunk_size; nesting; many ops; batch dims
at other positions; 0-d and empty batches; PyTorch's errors), ``grad``/``grad_and_value``,
``vjp``, ``jvp``, ``linearize``, ``jacrev``/``jacfwd``/``hessian``, ``functional_call`` and
``stack_module_state``.

Each case is ``fn(m, *inputs)`` on module ``m`` (tensorweaver or torch) and float64 inputs
drawn from a seed (shapes per case; an ``("int", shape, high)`` entry draws int64 indices).
What it returns (trees of tensors with their dtype, shape, ``requires_grad`` and values;
other values as they are) or the built-in class of the error it raises must be the same on
both. The suite runs seed 0 on NumPy; ``TW_FUNC_SWEEP_SEEDS=3`` runs three seeds on NumPy
and torch:cpu.
"""

from __future__ import annotations

import os
from collections import OrderedDict, defaultdict, deque
from collections.abc import Iterator
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor.tensor_reference import builtin_class
from tw_backends import FAST, entered

SEEDS = range(int(os.environ.get("TW_FUNC_SWEEP_SEEDS", "1")))
#: The transforms do not depend on the device: the suite's share runs on NumPy.
BACKENDS = FAST if "TW_FUNC_SWEEP_SEEDS" in os.environ else ("numpy",)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """tw's device for the case, float64 by default on both sides (torch's CPU)."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with entered(request.param, float64=True, seed=0) as spec:
            yield spec
    finally:
        torch.set_default_dtype(previous)


CASES: dict[str, tuple[Callable, tuple]] = {}


def case(*shapes: Any) -> Callable:
    """Registers ``fn`` under its name, with the shapes of its inputs."""

    def register(fn: Callable) -> Callable:
        CASES[fn.__name__] = (fn, shapes)
        return fn

    return register


def vmap(m: Any, **options: Any) -> Callable:
    return lambda f: m.func.vmap(f, **options)


def inputs(m: Any, shapes: tuple, seed: int) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        if s[0] == "int":
            out.append(m.tensor(rng.integers(0, s[2], size=s[1])))
        else:
            out.append(m.tensor(rng.uniform(-1.5, 1.5, size=s), dtype=m.float64))
    return out


def outcome(m: Any, name: str, seed: int) -> tuple:
    """``("ok", result)`` or ``("raises", built-in class name, message)``."""
    fn, shapes = CASES[name]
    try:
        return "ok", fn(m, *inputs(m, shapes, seed))
    except Exception as error:  # noqa: BLE001 - the class is compared with torch's
        return "raises", builtin_class(error).__name__, str(error)


#: Cases computing in float32 inside: their float64 results agree to float32's precision.
FLOAT32_INSIDE = {"jacobians_dtypes"}


def assert_same(ours: Any, theirs: Any, path: str) -> None:
    """``ours`` (tw) is ``theirs`` (torch): containers, tensors' metadata and values."""
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tw.Tensor), f"{path}: {type(ours)}"
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], path
        assert tuple(ours.shape) == tuple(theirs.shape), f"{path}: {ours.shape}"
        assert ours.requires_grad == theirs.requires_grad, f"{path}: requires_grad"
        precise = theirs.dtype == torch.float64 and path.split("[")[0] not in FLOAT32_INSIDE
        tol = 1e-9 if precise else 1e-5
        np.testing.assert_allclose(
            np.asarray(ours.detach()), theirs.detach().numpy(), rtol=tol, atol=tol, err_msg=path
        )
    elif isinstance(theirs, (tuple, list)):
        # torch's return types (structseqs) and tw's (namedtuples) by their names
        assert type(ours).__name__ == type(theirs).__name__, f"{path}: {type(ours)}"
        assert len(ours) == len(theirs), f"{path}: length {len(ours)}"
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, f"{path}[{i}]")
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs), f"{path}: keys"
        for k in theirs:
            assert_same(ours[k], theirs[k], f"{path}[{k!r}]")
    else:
        assert ours == theirs, f"{path}: {ours!r} != {theirs!r}"


# -- vmap over ops ----------------------------------------------------------------------------


@case((4, 3))
def vmap_elementwise(m, x):
    return vmap(m)(lambda a: a.sin() * a.exp() + a**2)(x)


@case((4, 3, 5))
def vmap_reductions_with_dim(m, x):
    return vmap(m)(lambda a: (a.sum(1), a.mean(-1, keepdim=True), a.max(0), a.argmax()))(x)


@case((4, 3, 5))
def vmap_max_at_dim_1(m, x):
    return vmap(m, in_dims=1)(lambda a: a.max(dim=1))(x)


@case((4, 3, 5), (4, 5, 2))
def vmap_matmul_and_mm(m, x, y):
    return vmap(m)(lambda a, b: (a @ b, m.mm(a, b)))(x, y)


@case((2, 4, 3, 5), (2, 4, 5, 2))
def vmap_bmm(m, x, y):
    return vmap(m)(m.bmm)(x, y)


@case((4, 6), ("int", (4,), 6), ("int", (4, 2), 6))
def vmap_indexing(m, x, i, j):
    return vmap(m)(lambda a, k, g: (a[1:4:2], a[[0, 2, 2]], a[k], a.gather(0, g)))(x, i, j)


@case((4, 6))
def vmap_views(m, x):
    return vmap(m)(lambda a: (a.view(2, 3).t(), a.unsqueeze(-1), a.expand(2, 6)))(x)


@case((4, 6))
def vmap_reshape_at_dim_1(m, x):
    return vmap(m, in_dims=1)(lambda a: a.reshape(2, 2))(x)


@case((4, 6), (3, 6), (3,))
def vmap_softmax_and_linear(m, x, w, b):
    f = m.nn.functional
    return vmap(m, in_dims=(0, None, None))(lambda a, w, b: f.softmax(f.linear(a, w, b), 0))(
        x, w, b
    )


@case((4, 2, 7), (3, 2, 3))
def vmap_conv1d(m, x, w):
    conv = m.nn.functional.conv1d
    return vmap(m, in_dims=(0, None))(lambda a, w: (conv(a.unsqueeze(0), w)[0], conv(a, w)))(x, w)


@case((4, 3), (4, 2), (3,))
def vmap_cat_and_stack(m, x, y, z):
    return vmap(m, in_dims=(0, 0, None))(lambda a, b, c: (m.cat([a, b, c]), m.stack([a, c], 1)))(
        x, y, z
    )


@case((4, 3))
def vmap_sort_topk_where(m, x):
    return vmap(m)(lambda a: (m.sort(a), a.topk(2), m.where(a > 0, a, m.zeros(()))))(x)


@case((3, 4, 5))
def vmap_in_dim_2_and_out_dim_1(m, x):
    return vmap(m, in_dims=2, out_dims=1)(lambda a: a.cumsum(0))(x)


@case((4, 5, 3))
def vmap_in_dim_2_out_dim_minus_2(m, x):
    return vmap(m, in_dims=2, out_dims=-2)(lambda a: a.t())(x)


@case((4,))
def vmap_zero_d_elements(m, x):
    return (
        vmap(m)(lambda a: a * 2)(x),
        vmap(m, out_dims=-1)(lambda a: a * 2)(x),
        vmap(m, out_dims=1)(lambda a: a * 2)(x),
    )


@case((4, 0))
def vmap_empty_elements(m, x):
    return vmap(m)(lambda a: a.sum())(x)


@case((0, 3))
def vmap_empty_batch(m, x):
    return (
        vmap(m)(lambda a: (a, a.sum(0)))(x),
        vmap(m, out_dims=(0, None))(lambda a: (a, 3))(x),
        vmap(m, out_dims=1)(lambda a: a)(x),
    )


@case((0, 3))
def vmap_empty_batch_keyword_arguments(m, x):
    return vmap(m)(lambda a, *, k: a * k)(x, k=2.0)


@case((0, 3))
def vmap_empty_batch_out_dim_none(m, x):
    return vmap(m, out_dims=(0, None))(lambda a: (a, m.ones(2)))(x)


@case((0, 3))
def vmap_empty_batch_out_dim_none_of_mapped_output(m, x):
    return vmap(m, out_dims=(0, None))(lambda a: (a, a.sum()))(x)


@case((0, 3))
def vmap_empty_batch_out_dim_out_of_range(m, x):
    return vmap(m, out_dims=2)(lambda a: a)(x)


@case((4, 3))
def vmap_int_and_float32_outputs(m, x):
    return vmap(m)(lambda a: ((a > 0).sum(), a.float()))(x)


@case((4, 3))
def vmap_in_place_on_mapped_input(m, x):
    def f(a):
        a[0] = 7.0
        return a.mul_(2)

    return vmap(m)(f)(x), x


@case((4, 3))
def vmap_write_through_view_at_dim_1(m, x):
    def f(a):
        a.view(-1)[1:3].zero_()
        return a.sum()

    return vmap(m, in_dims=1)(f)(x), x


@case((4, 3))
def vmap_requires_grad_input(m, x):
    x.requires_grad_()
    out = vmap(m)(lambda a: a.exp() * a.sum())(x)
    return out, m.autograd.grad(out.square().sum(), x)


# -- vmap's in_dims, out_dims and trees -------------------------------------------------------


@case((4, 3), (4, 3))
def vmap_in_dims_dict(m, x, y):
    f = vmap(m, in_dims=({"a": 0, "b": None},))(lambda d: d["a"] + d["b"][0])
    return f({"a": x, "b": y})


@case((4, 3), (3, 4))
def vmap_in_dims_nested_tuple(m, x, y):
    return vmap(m, in_dims=((0, 1),))(lambda t: t[0] * t[1])((x, y))


@case((4, 3), (4, 2))
def vmap_in_dims_list(m, x, y):
    return vmap(m, in_dims=([0, None],))(lambda s: s[0].sum() + s[1])([x, y[0]])


@case((4, 3))
def vmap_in_dims_dict_extra_key(m, x):
    return vmap(m, in_dims=({"a": 0},))(lambda d: d["a"])({"a": x, "b": x})


@case((4, 3))
def vmap_keeps_container_types(m, x):
    d = defaultdict(list, a=x)
    out = vmap(m)(lambda o, d, q: (o, d, q))(OrderedDict(a=x), d, deque([x, x], maxlen=3))
    o, d, q = out
    return (o, d, list(q)), type(o).__name__, d.default_factory, type(q).__name__, q.maxlen


@case((4, 3))
def vmap_mapping_in_dims_for_other_mappings(m, x):
    d = defaultdict(list, a=x, b=x)
    f = lambda d: d["a"] + d["b"][0]  # noqa: E731
    by_dict = vmap(m, in_dims=({"a": 0, "b": None},))(f)(OrderedDict(a=x, b=x))
    return by_dict, vmap(m, in_dims=(OrderedDict(a=0, b=None),))(f)(d)


@case((4, 3))
def vmap_mapping_in_dims_in_another_key_order(m, x):
    return vmap(m, in_dims=({"b": None, "a": 0},))(lambda d: d["a"] + d["b"][0])({"a": x, "b": x})


@case((4, 3))
def vmap_dict_subclass_is_a_leaf(m, x):
    class Box(dict):
        pass

    return vmap(m)(lambda d: d)(Box(a=x))


@case((3,))
def grad_keeps_container_types(m, x):
    g = m.func.grad(lambda d: d["a"].sin().sum())(defaultdict(int, a=x))
    j = m.func.jacrev(lambda d: d["a"].sin())(OrderedDict(a=x))
    return g, type(g).__name__, g.default_factory, j, type(j).__name__


@case((4, 3))
def vmap_none_argument(m, x):
    return vmap(m, in_dims=(0, None))(lambda a, b: a if b is None else b)(x, None)


@case((4, 3))
def vmap_none_argument_mapped(m, x):
    return vmap(m)(lambda a, b: a)(x, None)


@case((4, 3))
def vmap_none_output(m, x):
    return vmap(m)(lambda a: (a, None))(x)


@case((4, 3))
def vmap_none_output_out_dim_none(m, x):
    return vmap(m, out_dims=(0, None))(lambda a: (a, None))(x)


@case((4, 3))
def vmap_out_dims_dict(m, x):
    return vmap(m, out_dims=({"a": 1, "b": 0},))(lambda a: {"a": a, "b": a.sum()})(x)


@case((4, 3))
def vmap_out_dims_tuple_for_one_tensor(m, x):
    return vmap(m, out_dims=(1,))(lambda a: a * 2)(x)


@case((4, 3))
def vmap_out_dims_wrong_structure(m, x):
    return vmap(m, out_dims=(0, 1))(lambda a: a)(x)


@case((4, 3))
def vmap_out_dim_out_of_range(m, x):
    return vmap(m, out_dims=-3)(lambda a: a)(x)


@case((4, 3))
def vmap_constant_output(m, x):
    c = m.ones(2)
    return vmap(m)(lambda a: c)(x), vmap(m, out_dims=None)(lambda a: c)(x)


@case((4, 3))
def vmap_out_dim_none_of_nan_output(m, x):
    return vmap(m, out_dims=(0, None))(lambda a: (a, m.full((2,), float("nan"))))(x)


@case((4, 3))
def vmap_out_dim_none_of_mapped_output(m, x):
    return vmap(m, out_dims=None)(lambda a: a)(x)


@case((4, 3))
def vmap_out_dim_none_of_mapped_equal_output(m, x):
    return vmap(m, out_dims=None)(lambda a: a * 0)(x)


@case((4, 3))
def vmap_in_dim_bool(m, x):
    return vmap(m, in_dims=True)(lambda a: a)(x)


@case((4, 3))
def vmap_in_dim_out_of_range(m, x):
    return vmap(m, in_dims=-3)(lambda a: a)(x)


@case((4, 3))
def vmap_in_dim_of_0d_input(m, x):
    return vmap(m, in_dims=(0, 0))(lambda a, b: a * b)(x, x[0, 0])


@case((4, 3), (5, 3))
def vmap_mismatched_batch_sizes(m, x, y):
    return vmap(m)(lambda a, b: a + b)(x, y)


@case((4, 3))
def vmap_non_tensor_output(m, x):
    return vmap(m)(lambda a: 5)(x)


@case((4, 3))
def vmap_keyword_arguments_not_mapped(m, x):
    return vmap(m)(lambda a, *, k: a * k)(x, k=x[0])


@case((4, 3))
def vmap_chunk_sizes(m, x):
    f = lambda a: a.cumsum(0)  # noqa: E731
    return vmap(m, chunk_size=3)(f)(x), vmap(m, chunk_size=100)(f)(x)


@case((4, 3))
def vmap_chunk_size_float(m, x):
    return vmap(m, chunk_size=1.5)(lambda a: a)(x)


@case((4, 3))
def vmap_chunk_size_negative(m, x):
    return vmap(m, chunk_size=-1)(lambda a: a)(x)


@case((2, 3, 4))
def vmap_nested(m, x):
    inner = vmap(m, in_dims=1, out_dims=0)(lambda a: a.cumsum(0))
    return vmap(m)(vmap(m)(vmap(m)(lambda a: a * a.sin())))(x), vmap(m, out_dims=1)(inner)(x)


# -- vmap's randomness ------------------------------------------------------------------------


@case((4, 3))
def vmap_random_op_error(m, x):
    return vmap(m)(lambda a: a + m.randn(3))(x)


@case((4, 3))
def vmap_random_like_error(m, x):
    return vmap(m)(lambda a: m.nn.functional.dropout(a, 0.5))(x)


@case((4, 3))
def vmap_randomness_same(m, x):
    r = vmap(m, randomness="same", chunk_size=3)(lambda a: m.rand(3) + a * 0)(x)
    d = vmap(m, randomness="same")(lambda a: m.nn.functional.dropout(m.ones(3) + a * 0, 0.5))(x)
    return bool((r == r[0]).all()), bool((d == d[0]).all())


@case((4, 3))
def vmap_randomness_different(m, x):
    r = vmap(m, randomness="different", chunk_size=2)(lambda a: m.rand_like(a))(x)
    return tuple(r.shape), bool((r[0] != r[1]).all())


@case((4, 3))
def vmap_randomness_of_in_place_draws(m, x):
    y = m.zeros(3)
    return tuple(vmap(m, randomness="different")(lambda a: a.uniform_() + y.uniform_())(x).shape)


@case((4, 3))
def vmap_randomness_same_in_place_draw_into_unmapped(m, x):
    y = m.zeros(3)
    return tuple(vmap(m, randomness="same")(lambda a: y.uniform_() + a)(x).shape)


@case((4, 3))
def vmap_randomness_same_with_mapped_probabilities(m, x):
    return tuple(vmap(m, randomness="same")(lambda a: m.bernoulli(a.abs() / 2))(x).shape)


@case((4, 3))
def vmap_manual_seed_inside(m, x):
    def f(a):
        m.manual_seed(1234)
        return a

    return vmap(m)(f)(x)


# -- vmap's unsupported uses ------------------------------------------------------------------


@case((4, 3), (3,))
def vmap_write_into_captured_tensor(m, x, y):
    return vmap(m)(lambda a: y.add_(a))(x)


@case((4, 3), (3,))
def vmap_write_into_unmapped_input(m, x, y):
    return vmap(m, in_dims=(0, None))(lambda a, b: b.add_(a))(x, y)


@case((4, 3))
def vmap_setitem_into_captured_tensor(m, x):
    y = m.zeros(3)

    def f(a):
        y[0] = a[0]
        return y

    return vmap(m)(f)(x)


@case((4, 3))
def vmap_batch_norm_training_with_unmapped_statistics(m, x):
    bn = m.nn.BatchNorm1d(3)
    return vmap(m)(lambda a: bn(a.reshape(1, 3).expand(2, 3)))(x)


@case((4, 3), (3,))
def vmap_unmapped_write_of_unmapped_value(m, x, y):
    return vmap(m, in_dims=(0, None))(lambda a, b: b.add_(1) * a)(x, y), y


@case((4, 3))
def vmap_item(m, x):
    return vmap(m)(lambda a: a.sum().item())(x)


@case((4, 3))
def vmap_data_dependent_control_flow(m, x):
    return vmap(m)(lambda a: a if a.sum() > 0 else -a)(x)


@case((4, 3))
def vmap_tolist(m, x):
    return vmap(m)(lambda a: a.tolist())(x)


@case((4, 3))
def vmap_nonzero(m, x):
    return vmap(m)(lambda a: a.nonzero())(x)


@case((4, 3))
def vmap_boolean_mask(m, x):
    return vmap(m)(lambda a: a[a > -2])(x)


# -- vmap of the other transforms -------------------------------------------------------------


@case((4, 3), (3,))
def vmap_of_grad_argnums(m, x, y):
    g = m.func.grad(lambda a, b: (a * b).sin().sum(), argnums=(0, 1))
    return vmap(m, in_dims=(0, None))(g)(x, y)


@case((4, 3), (3, 5))
def vmap_of_grad_has_aux(m, x, w):
    g = m.func.grad(lambda w, xi: ((xi @ w).tanh().sum(), xi.sum()), has_aux=True)
    return vmap(m, in_dims=(None, 0))(g)(w, x)


@case((4, 3))
def vmap_of_jacobians(m, x):
    f = lambda a: a.sin() * a.sum()  # noqa: E731
    h = m.func.hessian(lambda a: (a.sin() * a.sum()).sum())
    return vmap(m)(m.func.jacrev(f))(x), vmap(m)(m.func.jacfwd(f))(x), vmap(m)(h)(x)


@case((4, 3), (4, 3))
def vmap_of_jvp_and_vjp(m, x, t):
    jvp = vmap(m)(lambda a, b: m.func.jvp(lambda q: q.exp(), (a,), (b,)))(x, t)
    vjp = vmap(m)(lambda a, b: m.func.vjp(lambda q: q.exp(), a)[1](b))(x, t)
    return jvp, vjp


# -- grad and grad_and_value ------------------------------------------------------------------


@case((3,), (2, 3))
def grad_argnums(m, x, y):
    f = lambda a, b: (b @ a).exp().sum()  # noqa: E731
    return m.func.grad(f, argnums=(1, 0))(x, y), m.func.grad(f, argnums=-1)(x, y)


@case((3,))
def grad_argnums_out_of_range(m, x):
    return m.func.grad(lambda a: a.sum(), argnums=1)(x)


@case((3,))
def grad_argnums_list(m, x):
    return m.func.grad(lambda a: a.sum(), argnums=[0])(x)


@case((3,))
def grad_has_aux_tree(m, x):
    f = lambda a: ((a**2).sum(), {"s": a.sin(), "c": [a.cos()]})  # noqa: E731
    return m.func.grad(f, has_aux=True)(x)


@case((3,))
def grad_has_aux_not_a_pair(m, x):
    return m.func.grad(lambda a: ((a**2).sum(), a, a), has_aux=True)(x)


@case((3,))
def grad_has_aux_none(m, x):
    return m.func.grad(lambda a: ((a**2).sum(), None), has_aux=True)(x)


@case((3,))
def grad_of_tree_with_none(m, x):
    return m.func.grad(lambda t: (t[0] ** 2).sum())((x, None))


@case((3,))
def grad_non_scalar_output(m, x):
    return m.func.grad(lambda a: a**2)(x)


@case((3,))
def grad_complex_output(m, x):
    return m.func.grad(lambda a: (a * (1 + 1j)).sum())(x)


@case((3,))
def grad_integer_input(m, x):
    return m.func.grad(lambda a: a.sum().double())(x.long())


@case((3,), (2, 3))
def grad_and_value_argnums_and_aux(m, x, y):
    f = lambda a, b: ((b @ a).exp().sum(), a * 2)  # noqa: E731
    return m.func.grad_and_value(f, argnums=(0, 1), has_aux=True)(x, y)


@case((3,))
def grad_nested_and_under_no_grad(m, x):
    inner = m.func.grad(lambda b: (b**3).sum())
    with m.no_grad():
        g = m.func.grad(lambda a: (a**3).sum())(x)
    return m.func.grad(lambda a: inner(a).sum())(x), g


@case((3,))
def grad_keeps_graph_to_outside_tensor(m, x):
    w = x.clone().requires_grad_()
    g = m.func.grad(lambda a: (a * w).sin().sum())(x)
    return g, m.autograd.grad(g.sum(), w)


# -- vjp, jvp, linearize ----------------------------------------------------------------------


@case((3,), (3,))
def vjp_trees_and_aux(m, x, y):
    out, fn = m.func.vjp(lambda a, b: (a.sin() * b, a.sum()), x, y)
    out2, fn2, aux = m.func.vjp(lambda a: (a.exp(), a.cos()), x, has_aux=True)
    return out, fn((m.ones(3), m.tensor(2.0))), out2, fn2(x), aux


@case((3,))
def vjp_cotangent_structure(m, x):
    return m.func.vjp(lambda a: (a.sin(), a), x)[1](m.ones(3))


@case((3,))
def vjp_cotangent_shape(m, x):
    return m.func.vjp(lambda a: a.sin(), x)[1](m.ones(4))


@case((3,))
def vjp_cotangent_number(m, x):
    return m.func.vjp(lambda a: a.sum(), x)[1](1.0)


@case((3,))
def vjp_cotangent_none(m, x):
    return m.func.vjp(lambda a: a.sum(), x)[1](None)


@case((3,))
def vjp_none_output(m, x):
    return m.func.vjp(lambda a: (a.sin(), None), x)[0]


@case((3,))
def vjp_integer_output(m, x):
    return m.func.vjp(lambda a: a.long(), x)[0]


@case((3,), (3,))
def jvp_trees_and_aux(m, x, t):
    first = m.func.jvp(lambda a: (a.sin(), a.sum()), (x,), (t,))
    tree = m.func.jvp(lambda d: d["a"] * d["b"], ({"a": x, "b": x},), ({"a": t, "b": t},))
    return first, tree, m.func.jvp(lambda a: (a.sin(), a * 2), (x,), (t,), has_aux=True)


@case((3,), (3,))
def jvp_primals_not_a_tuple(m, x, t):
    return m.func.jvp(lambda a: a.sin(), [x], [t])


@case((3,), (4,))
def jvp_tangent_shape(m, x, t):
    return m.func.jvp(lambda a: a.sin(), (x,), (t,))


@case((3,), (3,))
def jvp_integer_primal(m, x, t):
    return m.func.jvp(lambda a: a * 2, (x.long(),), (t,))


@case((3,), (3,))
def jvp_integer_tangent(m, x, t):
    return m.func.jvp(lambda a: a.sin(), (x,), (t.long(),))


@case((3,), (3,))
def jvp_strict_and_independent(m, x, t):
    return m.func.jvp(lambda a: a.sin(), (x,), (t,), strict=True), m.func.jvp(
        lambda a: m.ones(3), (x,), (t,)
    )


@case((3,), (3,))
def linearize_values(m, x, t):
    out, fn = m.func.linearize(lambda a, b: (a.sin() * b, a.sum()), x, t)
    return out, fn(t, x), fn(x, t)


@case((3,), (3,))
def linearize_tangent_dtype(m, x, t):
    return m.func.linearize(lambda a: a.sin() * a, x)[1](t.float())


@case((3,), (4,))
def linearize_tangent_shape(m, x, t):
    return m.func.linearize(lambda a: a.sin() * a, x)[1](t)


@case((3,))
def linearize_integer_primal(m, x):
    return m.func.linearize(lambda a: a * 2, x.long())[0]


@case((3,))
def linearize_number_primal(m, x):
    return m.func.linearize(lambda a, b: a * b, x, 2.0)[0]


# -- jacrev, jacfwd, hessian ------------------------------------------------------------------


@case((3,), (2, 3))
def jacobians_argnums(m, x, y):
    f = lambda a, b: b @ a.exp()  # noqa: E731
    return m.func.jacrev(f, argnums=(0, 1))(x, y), m.func.jacfwd(f, argnums=(0, 1))(x, y)


@case((3,))
def jacobians_trees_and_aux(m, x):
    f = lambda d: ({"a": d["a"].sin(), "b": (d["b"].sum(), d["a"][:2])}, d["a"].cos())  # noqa
    d = {"a": x, "b": x + 1}
    return m.func.jacrev(f, has_aux=True)(d), m.func.jacfwd(f, has_aux=True)(d)


@case((3,))
def jacrev_chunk_size(m, x):
    f = lambda a: a.sin() * a.sum()  # noqa: E731
    return m.func.jacrev(f, chunk_size=2)(x), m.func.jacrev(f, chunk_size=1)(x)


@case((3,))
def jacrev_chunk_size_float(m, x):
    return m.func.jacrev(lambda a: a.sin(), chunk_size=1.5)(x)


@case((3,))
def jacobians_dtypes(m, x):
    f = lambda a: a.double().sin()  # noqa: E731
    g = lambda a: a.float().sin()  # noqa: E731
    return m.func.jacrev(f)(x.float()), m.func.jacrev(g)(x), m.func.jacfwd(g)(x)


@case((3,))
def jacfwd_float64_output_of_float32_input(m, x):
    return m.func.jacfwd(lambda a: a.double().sin())(x.float())


@case((3,))
def jacfwd_integer_input(m, x):
    return m.func.jacfwd(lambda a: a.double())(x.long())


@case((3,))
def jacfwd_number_input(m, x):
    return m.func.jacfwd(lambda a, b: a * b, argnums=1)(x, 2.0)


@case((3,))
def jacrev_complex_output(m, x):
    return m.func.jacrev(lambda a: a * (1 + 1j))(x)


@case((3,))
def jacfwd_complex_output(m, x):
    return m.func.jacfwd(lambda a: a * (1 + 1j))(x)


@case((3,))
def jacrev_keyword_arguments(m, x):
    return m.func.jacrev(lambda a, k=1: a * k)(x, k=2)


@case((3,))
def hessian_keyword_arguments(m, x):
    return m.func.hessian(lambda a, k=1: (a * k).sum())(x, k=2)


@case((3,))
def jacrev_aux_none(m, x):
    return m.func.jacrev(lambda a: (a.sin(), None), has_aux=True)(x)


@case((3,))
def jacfwd_random_op(m, x):
    return m.func.jacfwd(lambda a: a * m.rand(3))(x)


@case((3,), (3,))
def hessians(m, x, y):
    f = lambda a, b: (a.sin() * b.exp() * a.sum()).sum()  # noqa: E731
    nested = m.func.jacfwd(m.func.jacrev(lambda a: a.sin() * a.prod()))(x)
    return m.func.hessian(f)(x, y), m.func.hessian(f, argnums=(0, 1))(x, y), nested


# -- functional_call and stack_module_state ---------------------------------------------------


def _net(m):
    net = m.nn.Sequential(m.nn.Linear(3, 4), m.nn.BatchNorm1d(4), m.nn.Linear(4, 2)).double()
    with m.no_grad():
        for i, p in enumerate(net.parameters()):
            p.copy_(m.linspace(-1, 1, p.numel()).reshape(p.shape) * (i + 1) * 0.3)
    return net


def _tied(m):
    class Tied(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = m.nn.Linear(3, 3, bias=False).double()
            self.b = m.nn.Linear(3, 3, bias=False).double()
            self.b.weight = self.a.weight

        def forward(self, x):
            return self.b(self.a(x)) - self.a(x)

    return Tied()


@case((5, 3))
def functional_call_params_and_buffers(m, x):
    net = _net(m)
    net.eval()
    params = {k: v * 2 for k, v in net.named_parameters()}
    net2 = _net(m)
    buffers = {k: v.clone() for k, v in net2.named_buffers()}
    trained = m.func.functional_call(net2, (dict(net2.named_parameters()), buffers), (x,))
    return m.func.functional_call(net, params, x), trained, buffers, dict(net2.named_buffers())


@case((5, 3))
def functional_call_strict(m, x):
    net = _net(m)
    net.eval()
    full = {**dict(net.named_parameters()), **dict(net.named_buffers())}
    return m.func.functional_call(net, full, (x,), strict=True)


@case((5, 3))
def functional_call_strict_missing(m, x):
    net = _net(m)
    return m.func.functional_call(net, {"0.weight": net[0].weight}, (x,), strict=True)


@case((5, 3))
def functional_call_repeated_name(m, x):
    net = _net(m)
    w = net[0].weight
    return m.func.functional_call(net, ({"0.weight": w}, {"0.weight": w}), (x,))


@case((4, 3))
def functional_call_tied_weights(m, x):
    net = _tied(m)
    with m.no_grad():
        net.a.weight.zero_()
    given = {"a.weight": x[:3].clone()}
    tied = m.func.functional_call(net, given, (x,))
    untied = m.func.functional_call(net, given, (x,), tie_weights=False)
    return tied, untied, m.func.functional_call(net, given, (x,), strict=True)


@case((5, 3))
def functional_call_grad(m, x):
    net = _net(m)
    net.eval()
    params = {k: v.detach() for k, v in net.named_parameters()}
    return m.func.grad(lambda p: m.func.functional_call(net, p, (x,)).square().sum())(params)


@case((4, 3))
def stack_module_state_ensemble(m, x):
    models = [m.nn.Linear(3, 2).double() for _ in range(3)]
    with m.no_grad():
        for i, mod in enumerate(models):
            mod.weight.copy_(m.linspace(-1, 1, 6).reshape(2, 3) * (i + 1))
            mod.bias.fill_(i)
    params, buffers = m.func.stack_module_state(models)
    call = lambda p, b, x: m.func.functional_call(models[0], (p, b), (x,))  # noqa: E731
    out = vmap(m, in_dims=(0, 0, None))(call)(params, buffers, x)
    return out, params, buffers


@case((4, 3))
def stack_module_state_errors(m, x):
    a, b = m.nn.Linear(3, 2), m.nn.Linear(3, 2)
    b.weight.requires_grad_(False)
    return m.func.stack_module_state([a, b])


@case((3, 1))
def debug_unwrap_inside_vmap(m, x):
    return vmap(m)(lambda a: m.func.debug_unwrap(a) * 2)(x)


# -- rearrange --------------------------------------------------------------------------------

#: (pattern, axes_lengths, input shape): rearrangements and PyTorch's errors for bad ones.
PATTERNS = [
    ("a b c -> (a b) c", {}, (2, 3, 4)),
    ("(a b) c d -> a b c d", {"a": 2}, (4, 3, 4)),
    ("b (h1 h) (w1 w) c -> (b h1 w1) h w c", {"h1": 2, "w1": 2}, (2, 4, 6, 3)),
    ("a b c -> c b a", {}, (2, 3, 4)),
    ("a b c -> a b () c 1", {}, (2, 3, 4)),
    ("a 1 c -> (c a)", {}, (2, 1, 4)),
    ("... c -> c ...", {}, (2, 3, 4)),
    ("b ... c -> b (...) c", {}, (2, 3, 4, 5)),
    ("a ... -> ... a", {}, (2,)),
    ("... -> ...", {}, ()),
    ("a b -> (b 1 a)", {}, (0, 3)),
    ("class  b ->b class", {}, (2, 3)),
    ("(a b) c d -> a b c d", {"a": 4}, (2, 3, 4)),
    ("a (b c) d -> a b c d", {}, (2, 6, 4)),
    ("a (b c) -> a b c", {"b": 0}, (2, 0)),
    ("a b c -> a b c", {"a": 3}, (2, 3, 4)),
    ("a b c -> a b c", {"a": 2.0}, (2, 3, 4)),
    ("a b c -> a b c", {}, (2, 3)),
    ("a b ... c d e -> a", {}, (2, 3)),
    ("a b -> a b -> a", {}, (2, 3)),
    ("a b -> a ... b", {}, (2, 3)),
    ("(a ...) -> a ...", {}, (2, 3)),
    ("a b -> a 2 b", {}, (2, 3)),
    ("a 0 -> a", {}, (2, 3)),
    ("a a -> a", {}, (2, 3)),
    ("a b -> a b", {"c": 2}, (2, 3)),
    ("a .. b -> a b", {}, (2, 3)),
    ("a b! -> a b", {}, (2, 3)),
    ("(a (b)) -> a b", {}, (2, 3)),
    ("a b) -> a b", {}, (2, 3)),
    ("(a b -> a b", {}, (2, 3)),
    ("_a b -> _a b", {}, (2, 3)),
]


def _rearranging(pattern: str, lengths: dict) -> Callable:
    return lambda m, x: m.func.rearrange(x, pattern, **lengths)


for _i, (_pattern, _lengths, _shape) in enumerate(PATTERNS):
    CASES[f"rearrange_{_i:02d}"] = (_rearranging(_pattern, _lengths), (_shape,))


@case((2, 3), (2, 3), (2, 3))
def rearrange_a_list_stacks_it(m, a, b, c):
    stacked = m.func.rearrange([a, b, c], "n a b -> a (n b)")
    return stacked, m.func.rearrange((a, b), "n a b -> b n a")


@case((2, 3))
def rearrange_is_differentiable(m, x):
    x.requires_grad_()
    y = m.func.rearrange(x, "a b -> (b a)")
    return m.autograd.grad((y * y.detach().exp()).sum(), x)


#: Cases where tensorweaver differs from torch, each a strict xfail with the reason.
_LOOP = (
    "tw's vmap calls the function once per batch element on plain tensors (no batched "
    "tensor), so it cannot tell a mapped tensor from an unmapped one inside the function: "
)
KNOWN: dict[str, str] = {
    "vmap_nonzero": _LOOP + "nonzero() works when every element has as many; torch raises",
    "vmap_boolean_mask": _LOOP + "a[mask] works when every element has as many; torch raises",
    "vmap_unmapped_write_of_unmapped_value": _LOOP
    + "a write into an unmapped tensor would repeat per element, so it raises "
    "(_unbatched_writes.py); torch writes once when the value is unmapped",
    "jacfwd_float64_output_of_float32_input": (
        "jacfwd runs on reverse mode here (jacobians.py): the gradient comes back in the "
        "float32 input's dtype before the float64 layout cast, so the float64 Jacobian "
        "has float32 precision (torch's forward mode pushes the tangent through a.double())"
    ),
    "vmap_randomness_same_in_place_draw_into_unmapped": _LOOP
    + "a write into an unmapped tensor raises (_unbatched_writes.py); under 'same' torch "
    "draws once into it",
    "vmap_randomness_same_with_mapped_probabilities": _LOOP
    + "torch refuses randomness='same' for a random op of a mapped tensor (bernoulli(p))",
    "debug_unwrap_inside_vmap": _LOOP
    + "debug_unwrap of a mapped input is that element's slice; torch's is the whole batch",
    "vmap_manual_seed_inside": (
        "randomness='error' compares the generators' states before and after the call "
        "(_randomness.py), and a reseed changes them as a draw does; torch flags draws only "
        "(needs a draw counter in tensorweaver/random.py)"
    ),
}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_func_like_torch(backend: str, name: str, seed: int, request: pytest.FixtureRequest):
    if name in KNOWN:
        request.applymarker(pytest.mark.xfail(strict=True, reason=KNOWN[name]))
    ours, theirs = outcome(tw, name, seed), outcome(torch, name, seed)
    if theirs[0] == "raises":
        assert ours[:2] == theirs[:2], f"{name}: ours {ours}, torch {theirs}"
    else:
        assert ours[0] == "ok", f"{name}: ours {ours}, torch {theirs}"
        assert_same(ours[1], theirs[1], name)
