"""Regression tests for the defects the ``tw.func`` sweep (test_sweep_func.py) found, each
compared with ``torch.func`` 2.13 on the same inputs."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque

import numpy as np
import pytest
import tensorweaver as tw
from func_twins import arrays, finite_gradient, like_torch, raises_like_torch


def test_none_is_a_pytree_leaf_as_in_torch(backend):
    """None was a node without leaves: a None input mapped with in_dim 0, a None output
    with out_dim 0, a None aux or a None in grad's argument tree all passed silently."""
    (x,) = arrays((4, 3))
    err = raises_like_torch(lambda m: lambda x: m.func.vmap(lambda a, b: a)(x, None), x)
    assert "NoneType" in str(err)
    raises_like_torch(lambda m: lambda x: m.func.vmap(lambda a: (a, None))(x), x)
    like_torch(lambda m: m.func.vmap(lambda a: (a * 2, None), out_dims=(0, None)), x)
    like_torch(
        lambda m: (
            lambda x: m.func.vmap(lambda a, b: a if b is None else b, in_dims=(0, None))(x, None)
        ),
        x,
    )
    raises_like_torch(lambda m: m.func.grad(lambda a: (a.sum(), None), has_aux=True), x)
    raises_like_torch(lambda m: lambda x: m.func.grad(lambda t: t[0].sum())((x, None)), x)
    raises_like_torch(lambda m: lambda x: m.func.vjp(lambda a: (a, None), x), x)
    raises_like_torch(lambda m: m.func.jacrev(lambda a: (a, None), has_aux=True), x)


def test_forward_mode_refuses_integer_primals_and_tangents(backend):
    """jvp/jacfwd/linearize of an int64 primal raised RuntimeError (requires_grad_), not
    torch's ValueError; an int64 tangent was accepted."""
    x, t = arrays((3,), (3,))
    err = raises_like_torch(lambda m: lambda x, t: m.func.jvp(lambda a: a, (x.long(),), (t,)), x, t)
    assert "primal" in str(err) and "int64" in str(err)
    err = raises_like_torch(lambda m: lambda x, t: m.func.jvp(m.sin, (x,), (t.long(),)), x, t)
    assert "tangent" in str(err)
    raises_like_torch(lambda m: lambda x: m.func.jacfwd(lambda a: a * 1.0)(x.long()), x)
    raises_like_torch(lambda m: lambda x: m.func.linearize(lambda a: a * 2, x.long()), x)


def test_forward_mode_of_a_number_raises_attribute_error_as_torch(backend):
    """jacfwd/linearize with a Python number where a tensor is differentiated raised
    ValueError; torch's AttributeError comes from sizing its tangent."""
    (x,) = arrays((3,))
    raises_like_torch(lambda m: lambda x: m.func.jacfwd(lambda a, b: a * b, argnums=1)(x, 2.0), x)
    raises_like_torch(lambda m: lambda x: m.func.linearize(lambda a, b: a * b, x, 2.0), x)


def test_linearize_checks_each_tangent_against_its_primal(backend):
    """linearize's jvp_fn accepted a float32 tangent for a float64 primal."""
    x, t = arrays((3,), (3,))

    def build(m):
        return lambda x, t: m.func.linearize(lambda a: a.sin() * a, x)[1](t.float())

    err = raises_like_torch(build, x, t)
    assert "dtype" in str(err)
    like_torch(lambda m: lambda x, t: m.func.linearize(lambda a: a.sin() * a, x)[1](t), x, t)


def test_vjp_fn_refuses_a_number_cotangent(backend):
    """vjp_fn(1.0) for a 0-d output returned a gradient; torch raises TypeError."""
    (x,) = arrays((3,))
    err = raises_like_torch(lambda m: lambda x: m.func.vjp(lambda a: a.sum(), x)[1](1.0), x)
    assert "float" in str(err)
    like_torch(lambda m: lambda x: m.func.vjp(lambda a: a.sum(), x)[1](None), x)


def test_complex_outputs_are_refused_like_torch(backend):
    """grad of a complex 0-d output, and jacrev/jacfwd of complex outputs, returned real
    results; torch raises RuntimeError."""
    (x,) = arrays((3,))
    err = raises_like_torch(lambda m: m.func.grad(lambda a: (a * (1 + 1j)).sum()), x)
    assert "real" in str(err)
    for name in ("jacrev", "jacfwd"):
        err = raises_like_torch(lambda m, n=name: getattr(m.func, n)(lambda a: a * (1 + 1j)), x)
        assert "outputs to be real" in str(err)


@pytest.mark.parametrize("name", ["jacrev", "jacfwd", "hessian"])
def test_jacobians_take_no_keyword_arguments(backend, name):
    """jacrev/jacfwd/hessian passed keyword arguments on to the function; torch's wrappers
    take positional arguments only (TypeError)."""
    (x,) = arrays((3,))
    raises_like_torch(
        lambda m: lambda x: getattr(m.func, name)(lambda a, k=1: (a * k).sum())(x, k=2), x
    )


def test_vmap_empty_batch_checks_out_dims(backend):
    """A batch of size 0 with an out_dim past the output's dims returned a tensor."""
    (x,) = arrays((0, 3))
    raises_like_torch(lambda m: m.func.vmap(lambda a: a, out_dims=2), x)
    like_torch(lambda m: m.func.vmap(lambda a: a, out_dims=-2), x)


def test_vmap_out_dim_none_accepts_an_unmapped_nan_output(backend):
    """An unmapped output holding NaN was taken for a mapped one (NaN != NaN): ValueError."""
    (x,) = arrays((4, 3))
    nan = lambda m: m.full((2,), float("nan"), dtype=m.float64)  # noqa: E731
    like_torch(lambda m: m.func.vmap(lambda a: (a, nan(m)), out_dims=(0, None)), x)


def test_vmap_empty_batch_passes_keyword_arguments_and_checks_out_dim_none(backend):
    """A batch of size 0 called the function without its keyword arguments (TypeError),
    and returned a mapped output with out_dim None instead of raising torch's ValueError."""
    (x,) = arrays((0, 3))
    like_torch(lambda m: lambda x: m.func.vmap(lambda a, *, k: a * k)(x, k=2.0), x)
    raises_like_torch(lambda m: m.func.vmap(lambda a: (a, a.sum()), out_dims=(0, None)), x)
    ones = lambda m: m.ones(2, dtype=m.float64)  # noqa: E731
    like_torch(lambda m: m.func.vmap(lambda a: (a, ones(m)), out_dims=(0, None)), x)


def test_vmap_refuses_bool_in_dims_and_non_int_chunk_sizes(backend):
    """in_dims=True mapped dim 1, chunk_size=1.5 or True ran (vmap and jacrev); torch
    raises TypeError."""
    (x,) = arrays((4, 3))
    raises_like_torch(lambda m: m.func.vmap(lambda a: a, in_dims=True), x)
    raises_like_torch(lambda m: m.func.vmap(lambda a: a, chunk_size=1.5), x)
    raises_like_torch(lambda m: m.func.vmap(lambda a: a, chunk_size=True), x)
    raises_like_torch(lambda m: m.func.jacrev(lambda a: a.sin(), chunk_size=1.5), x[0])


def test_vmap_refuses_writes_into_unmapped_tensors(backend):
    """A write into a captured tensor, an in_dims=None input, or a captured batch norm's
    running statistics happened once per element (silently wrong); torch raises."""
    x, y = arrays((4, 3), (3,))
    raises_like_torch(lambda m: lambda x, y: m.func.vmap(lambda a: y.add_(a))(x), x, y)
    raises_like_torch(
        lambda m: lambda x, y: m.func.vmap(lambda a, b: b.mul_(a), in_dims=(0, None))(x, y), x, y
    )

    def setitem(m):
        def run(x):
            y = m.zeros(3, dtype=m.float64)

            def f(a):
                y[0] = a[0]
                return y

            return m.func.vmap(f)(x)

        return run

    raises_like_torch(setitem, x)

    def batch_norm(m):
        bn = m.nn.BatchNorm1d(3).double()
        return m.func.vmap(lambda a: bn(a.reshape(1, 3).expand(2, 3)))

    raises_like_torch(batch_norm, x)
    # writes into the mapped input reach it, as torch's
    like_torch(lambda m: lambda x: (m.func.vmap(lambda a: a.mul_(2))(x), x), x)


def test_vmap_of_functional_call_with_stacked_buffers_still_writes_them(backend):
    """The write guard leaves mapped state alone: an ensemble of batch norms in training
    updates its stacked running statistics, as torch's."""
    (x,) = arrays((3, 5, 2))

    def build(m):
        def run(x):
            models = [m.nn.BatchNorm1d(2).double() for _ in range(3)]
            params, buffers = m.func.stack_module_state(models)
            call = lambda p, b, xi: m.func.functional_call(models[0], (p, b), (xi,))  # noqa: E731
            return m.func.vmap(call)(params, buffers, x), buffers

        return run

    like_torch(build, x)


def test_jacfwd_of_number_free_function_matches_finite_differences(backend):
    """The forward-mode checks added before the Jacobian leave its values alone."""
    (x,) = arrays((3,))
    jac = tw.func.jacfwd(lambda a: a.sin() * a.prod())(tw.tensor(x))
    for i in range(3):
        fd = finite_gradient(lambda v, i=i: float(np.sin(v[i]) * v.prod()), x)
        np.testing.assert_allclose(np.asarray(jac[i]), fd, rtol=1e-6, atol=1e-8)


def test_rearrange_exists_and_rearranges_like_torch(backend):
    """torch.func.rearrange was missing from tw.func (AttributeError)."""
    (x,) = arrays((2, 4, 6, 3))
    pattern = "b (h1 h) (w1 w) c -> (b h1 w1) h w c"
    like_torch(lambda m: lambda x: m.func.rearrange(x, pattern, h1=2, w1=2), x)
    err = raises_like_torch(lambda m: lambda x: m.func.rearrange(x, "b h w c -> b h w"), x)
    assert "one side" in str(err)


def test_ordered_and_default_dicts_and_deques_are_their_own_nodes(backend):
    """vmap/grad/jacrev gave back a plain dict for an OrderedDict or a defaultdict, and
    refused a deque of tensors as a non-tensor input (ValueError)."""
    (x,) = arrays((4, 3))

    def build(m):
        def run(x):
            d = defaultdict(list, a=x)
            out = m.func.vmap(lambda o, d, q: (o, d, q))(OrderedDict(a=x), d, deque([x, x]))
            g = m.func.grad(lambda o: o["a"].sum())(OrderedDict(a=x))
            names = [type(v).__name__ for v in (*out, g)]
            return names, out[1].default_factory, (out[0], out[1], list(out[2])), g

        return run

    like_torch(build, x)


def test_mapping_in_dims_match_any_mapping_as_torch(backend):
    """With OrderedDict its own kind of node, a dict in_dims still matches an OrderedDict
    input, key by key, as torch's (a guard for the change above)."""
    (x,) = arrays((4, 3))
    f = lambda d: d["a"] + d["b"][0]  # noqa: E731
    like_torch(
        lambda m: lambda x: m.func.vmap(f, in_dims=({"a": 0, "b": None},))(OrderedDict(a=x, b=x)),
        x,
    )
