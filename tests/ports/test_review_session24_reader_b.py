"""Second reading (reader B) of the twenty-third session's autograd, linalg and nn fixes:
978c1ef (one node for eigh/svd/qr/slogdet/lu, hooks on fused linalg nodes, batched
products recorded as torch's, sparse gradients), 4b16839 (MHA's 2-D attn_mask, the torch
plugin's recurrent kernel on non-contiguous operands), 7aca5a7 (class-loss target batches)
and 5b511d1 (probs_or_logits.py), each snippet run on torch 2.13 and on tensorweaver with
only the import changed.

The corners that matched torch come first, grouped per area (torch's outcome of each program
is computed once per module); then the defects found, each a strict xfail naming the file and
function at fault and the fix proposed.
"""

from __future__ import annotations

import copy
import io
from functools import partial
from typing import Any, Callable

import numpy as np
import pytest
import torch
from snippet_outcomes import same, same_each, walk

Program = Callable[[Any], Any]


def _shape(g: Any) -> Any:
    return None if g is None else tuple(g.shape)


def _data(m: Any, *shape: int, seed: int = 0, grad: bool = True, dtype: Any = None) -> Any:
    values = np.random.default_rng(seed).standard_normal(shape)
    return m.tensor(values, dtype=dtype or m.float64, requires_grad=grad)


def _spd(m: Any, *batch: int, n: int = 3, seed: int = 0, dtype: Any = None) -> Any:
    r = np.random.default_rng(seed).standard_normal((*batch, n, n))
    a = r @ np.swapaxes(r, -1, -2) + n * np.eye(n)
    return m.tensor(a, dtype=dtype or m.float64, requires_grad=True)


def _hooked(make: Callable[[Any], tuple], replace: bool = False) -> Program:
    """The first of ``make``'s tensors' node: its name and next_functions, what its pre-hook
    and hook see (with ``replace`` the hook triples every grad_input), and the gradients of
    the other tensors ``make`` gives (its leaves) after a weighted square loss."""

    def program(m: Any) -> Any:
        out, *leaves = make(m)
        fn = out.grad_fn
        seen: list = []
        fn.register_prehook(lambda go: seen.append(("pre", [_shape(g) for g in go])))

        def hook(gi: tuple, go: tuple) -> Any:
            seen.append(([_shape(g) for g in gi], [_shape(g) for g in go]))
            return tuple(None if g is None else g * 3 for g in gi) if replace else None

        fn.register_hook(hook)
        weights = m.arange(1.0, out.numel() + 1.0, dtype=out.dtype).reshape(out.shape)
        (out * out * weights).sum().backward()
        return fn.name(), walk(fn, 2), seen, [t.grad for t in leaves]

    return program


def _grad_of(make: Callable[[Any, Any], Any], values: Any) -> Program:
    """The outputs of ``make(m, x)`` and x's gradient after their sum's backward."""

    def program(m: Any) -> Any:
        x = m.tensor(values, dtype=m.float64, requires_grad=True)
        out = make(m, x)
        out.sum().backward()
        return out, x.grad

    return program


def _second(make: Callable[[Any, Any], Any], x: Callable[[Any], Any]) -> Program:
    """x's gradient of the squared norm of ``make``'s gradient (a double backward)."""

    def program(m: Any) -> Any:
        a = x(m)
        (g,) = m.autograd.grad(make(m, a), a, create_graph=True)
        (g**2).sum().backward()
        return a.grad

    return program


# -- 978c1ef: one node for eigh / svd / qr / slogdet / lu ----------------------------------------


def _one_node(make: Callable[[Any, Any], tuple], use: Callable[[Any, tuple], Any]) -> Program:
    """What pre-hooks and hooks on the outputs' one node see, its outputs' numbers and
    next_functions (gradient signs of vectors are LAPACK's choice: only shapes compared)."""

    def program(m: Any) -> Any:
        x = _spd(m, 2)
        outs = make(m, x)
        node = outs[0].grad_fn
        seen: list = []
        node.register_prehook(lambda go: seen.append(("pre", [_shape(g) for g in go])))
        node.register_hook(lambda gi, go: seen.append(([_shape(g) for g in gi], len(go))))
        use(m, outs).backward()
        numbers = [o.output_nr for o in outs if o.requires_grad]
        return node.name(), seen, walk(node, 2), numbers

    return program


def _weighted(m: Any, t: Any) -> Any:
    return (t**2 * m.arange(1.0, t.shape[-1] + 1.0, dtype=t.dtype)).sum()


ONE_NODE: dict[str, Program] = {
    "eigh_batched": _one_node(
        lambda m, x: tuple(m.linalg.eigh(x)), lambda m, o: o[0].sum() + _weighted(m, o[1])
    ),
    "eigh_upper": _one_node(
        lambda m, x: tuple(m.linalg.eigh(x, UPLO="U")), lambda m, o: o[0].pow(2).sum()
    ),
    "svd_full_matrices": _one_node(lambda m, x: tuple(m.linalg.svd(x)), lambda m, o: o[1].sum()),
    "lu": _one_node(lambda m, x: tuple(m.linalg.lu(x)), lambda m, o: (o[1] * 2).sum() + o[2].sum()),
    "lu_factor": _one_node(lambda m, x: tuple(m.linalg.lu_factor(x)), lambda m, o: o[0].sum()),
    "slogdet": _one_node(lambda m, x: tuple(m.linalg.slogdet(x)), lambda m, o: o[1].sum()),
    "eigvalsh": _one_node(lambda m, x: (m.linalg.eigvalsh(x),), lambda m, o: o[0].sum()),
    "svdvals": _one_node(lambda m, x: (m.linalg.svdvals(x),), lambda m, o: o[0].sum()),
    "eigh_upper_grad": _grad_of(
        lambda m, x: m.linalg.eigh(x, UPLO="U")[0].pow(2),
        np.diag([1.0, 2.0, 4.0]) + np.triu(np.ones((3, 3)), 1),
    ),
    "eigh_zero_batch": _grad_of(
        lambda m, x: sum(o.sum() for o in m.linalg.eigh(x)), np.zeros((0, 3, 3))
    ),
    "svd_zero_batch": _grad_of(
        lambda m, x: sum(o.sum() for o in m.linalg.svd(x, full_matrices=False)), np.zeros((0, 3, 2))
    ),
    "svd_full_singular_values": _grad_of(
        lambda m, x: m.linalg.svd(x)[1], np.arange(12.0).reshape(4, 3) ** 0.5
    ),
    "torch_svd_names": lambda m: (lambda r: (r[0].grad_fn.name(), walk(r[2].grad_fn, 2)))(
        m.svd(_data(m, 4, 3))
    ),
    "torch_svd_grad": _grad_of(lambda m, x: m.svd(x)[1], np.arange(12.0).reshape(4, 3) ** 0.5),
    "qr_r_mode_backward": _grad_of(lambda m, x: m.linalg.qr(x, mode="r")[1], np.eye(4, 3) + 1),
    "qr_complete_tall_backward": _grad_of(
        lambda m, x: m.linalg.qr(x, mode="complete")[1], np.eye(4, 3) + 1
    ),
    "qr_complete_wide": _grad_of(lambda m, x: m.linalg.qr(x, mode="complete")[1], np.eye(3, 4) + 1),
    "slogdet_negative_det": _grad_of(
        lambda m, x: m.linalg.slogdet(x)[1], -np.diag([1.0, 2.0, 3.0]) + 0.1
    ),
    "slogdet_sign_only": _grad_of(lambda m, x: m.linalg.slogdet(x)[0], -np.diag([1.0, 2.0, 3.0])),
    "eigh_repeated_values": _grad_of(lambda m, x: m.linalg.eigh(x)[0].pow(2), np.eye(3)),
    "lu_factor_ex": lambda m: (
        lambda r: (len(r), r[0].grad_fn.name(), [t.requires_grad for t in r])
    )(m.linalg.lu_factor_ex(_spd(m))),
    "cholesky_ex": lambda m: (
        lambda r: (walk(r[0].grad_fn, 2), [t.requires_grad for t in r], r[1])
    )(m.linalg.cholesky_ex(_spd(m))),
    "inv_ex": lambda m: (lambda r: (r[0].grad_fn.name(), [t.requires_grad for t in r]))(
        m.linalg.inv_ex(_spd(m))
    ),
    "det_names": lambda m: (
        lambda x: [f(x).grad_fn.name() for f in (m.det, m.logdet, m.linalg.det)]
    )(_spd(m)),
    "logdet_grad": _grad_of(lambda m, x: m.logdet(x), np.diag([1.0, 2.0, 3.0]) + 0.1),
    "retain_grad_of_outputs": lambda m: (
        lambda r: (
            r[0].retain_grad(),
            r[1].retain_grad(),
            (r[0] ** 2).sum().backward(),
            r[0].grad,
            r[1].grad,
        )[3:]
    )(m.linalg.eigh(_spd(m))),
    "tensor_hook_on_values": lambda m: (
        lambda x, r: (r[0].register_hook(lambda g: g * 3), r[0].sum().backward(), x.grad)[2]
    )(*(lambda x: (x, m.linalg.eigh(x)))(_spd(m))),
    "non_leaf_input": lambda m: walk(m.linalg.eigh(_spd(m) * 2)[0].grad_fn, 3),
    # (eigenvalues exact in single precision: rounding is no finding here)
    "float32": _grad_of(lambda m, x: m.linalg.eigh(x.float())[0], np.diag([1.0, 2.0, 4.0])),
    "svdvals_double_backward": _second(
        lambda m, a: (m.linalg.svdvals(a) ** 3).sum(), lambda m: _data(m, 2, 4, 3)
    ),
    "qr_double_backward": _second(
        lambda m, a: (m.linalg.qr(a)[1] ** 2).sum(), lambda m: _data(m, 4, 3)
    ),
    "slogdet_double_backward": _second(
        lambda m, a: m.linalg.slogdet(a)[1].sum(), lambda m: _spd(m, 2)
    ),
    "lu_double_backward": _second(lambda m, a: (m.linalg.lu(a)[2] ** 2).sum(), lambda m: _spd(m)),
}


def test_one_node_outputs_match_torch(spec: str) -> None:
    same_each(ONE_NODE, spec)


# -- 978c1ef: hooks on (fused) linalg nodes ----------------------------------------------------


def _lu_solve(m: Any, **kw: Any) -> tuple:
    lu, pivots = m.linalg.lu_factor(_data(m, 3, 3))
    b = _data(m, 3, 2, seed=1) if kw.get("left", True) else _data(m, 2, 3, seed=1)
    return m.linalg.lu_solve(lu, pivots, b, **kw), lu, b


def _triangle(m: Any, upper: bool) -> Any:
    a = _spd(m).detach()
    return (a.triu() if upper else a.tril()).requires_grad_()


FUSED: dict[str, Callable[[Any], tuple]] = {
    "inv_batched": lambda m: (lambda a: (m.linalg.inv(a), a))(_spd(m, 2)),
    "inv_zero_batch": lambda m: (lambda a: (m.linalg.inv(a), a))(_spd(m, 0)),
    "inv_float32": lambda m: (lambda a: (m.linalg.inv(a), a))(_spd(m, 2, dtype=m.float32)),
    "inv_of_transposed_view": lambda m: (lambda a: (m.linalg.inv(a.mT), a))(_spd(m, 2)),
    "inverse": lambda m: (lambda a: (m.inverse(a), a))(_spd(m)),
    "solve_left_false": lambda m: (lambda a, b: (m.linalg.solve(a, b, left=False), a, b))(
        _spd(m), _data(m, 2, 3, seed=1)
    ),
    "solve_vector": lambda m: (lambda a, b: (m.linalg.solve(a, b), a, b))(
        _spd(m, 2), _data(m, 3, seed=1)
    ),
    "solve_broadcast": lambda m: (lambda a, b: (m.linalg.solve(a, b), a, b))(
        _spd(m), _data(m, 2, 3, 2, seed=1)
    ),
    "solve_only_b": lambda m: (lambda b: (m.linalg.solve(_spd(m).detach(), b), b))(
        _data(m, 3, 2, seed=1)
    ),
    "solve_only_a": lambda m: (lambda a: (m.linalg.solve(a, _data(m, 3, 2, grad=False)), a))(
        _spd(m)
    ),
    "solve_ex": lambda m: (lambda a, b: (m.linalg.solve_ex(a, b)[0], a, b))(
        _spd(m), _data(m, 3, 2, seed=1)
    ),
    "cholesky_upper": lambda m: (lambda a: (m.linalg.cholesky(a, upper=True), a))(_spd(m, 2)),
    "cholesky_ex": lambda m: (lambda a: (m.linalg.cholesky_ex(a)[0], a))(_spd(m)),
    "det_singular": lambda m: (lambda a: (m.linalg.det(a), a))(
        m.ones(3, 3, dtype=m.float64, requires_grad=True)
    ),
    "det_zero_batch": lambda m: (lambda a: (m.linalg.det(a), a))(_spd(m, 0)),
    "det_1x1": lambda m: (lambda a: (m.linalg.det(a), a))(_data(m, 2, 1, 1)),
    "pinv_hermitian": lambda m: (lambda a: (m.linalg.pinv(a, hermitian=True), a))(_spd(m)),
    "pinv_wide_batch": lambda m: (lambda a: (m.linalg.pinv(a), a))(_data(m, 2, 3, 4)),
    "pinv_rtol": lambda m: (lambda a: (m.linalg.pinv(a, rtol=0.3), a))(_data(m, 4, 3)),
    "pinverse": lambda m: (lambda a: (m.pinverse(a), a))(_data(m, 4, 3)),
    "lu_factor_batched": lambda m: (lambda a: (m.linalg.lu_factor(a)[0], a))(_data(m, 2, 3, 3)),
    "lu_factor_tall": lambda m: (lambda a: (m.linalg.lu_factor(a)[0], a))(_data(m, 4, 3)),
    "lu_solve_adjoint": lambda m: _lu_solve(m, adjoint=True),
    "lu_solve_left_false": lambda m: _lu_solve(m, left=False),
    "matrix_exp_batched": lambda m: (lambda a: (m.linalg.matrix_exp(a / 3), a))(_data(m, 2, 3, 3)),
    "matrix_exp_1x1": lambda m: (lambda a: (m.linalg.matrix_exp(a), a))(_data(m, 1, 1)),
    "matrix_power_-1": lambda m: (lambda a: (m.linalg.matrix_power(a, -1), a))(_spd(m)),
    "matrix_power_-2": lambda m: (lambda a: (m.linalg.matrix_power(a, -2), a))(_spd(m)),
    "matrix_power_4": lambda m: (lambda a: (m.linalg.matrix_power(a, 4), a))(_data(m, 3, 3)),
    "matrix_power_5": lambda m: (lambda a: (m.linalg.matrix_power(a, 5), a))(_data(m, 3, 3)),
    "tensor_matrix_power_3": lambda m: (lambda a: (a.matrix_power(3), a))(_data(m, 3, 3)),
    "cholesky_inverse_upper": lambda m: (lambda c: (m.cholesky_inverse(c, upper=True), c))(
        m.linalg.cholesky(_spd(m).detach(), upper=True).requires_grad_()
    ),
    "cholesky_solve": lambda m: (lambda b, c: (m.cholesky_solve(b, c), b, c))(
        _data(m, 3, 2, seed=1), m.linalg.cholesky(_spd(m).detach()).requires_grad_()
    ),
    "solve_triangular_left_false": lambda m: (
        lambda a, b: (m.linalg.solve_triangular(a, b, upper=False, left=False), a, b)
    )(_triangle(m, False), _data(m, 2, 3, seed=1)),
    "solve_triangular_unitriangular": lambda m: (
        lambda a, b: (m.linalg.solve_triangular(a, b, upper=True, unitriangular=True), a, b)
    )(_triangle(m, True), _data(m, 3, 2, seed=1)),
    "householder_product_batched": lambda m: (
        lambda a, tau: (m.linalg.householder_product(a, tau), a, tau)
    )(_data(m, 2, 4, 3), _data(m, 2, 2, seed=1)),
    "matrix_norm_fro": lambda m: (lambda a: (m.linalg.matrix_norm(a), a))(_data(m, 2, 3, 3)),
    "vecdot": lambda m: (lambda a, b: (m.linalg.vecdot(a, b), a, b))(
        _data(m, 2, 3), _data(m, 2, 3, seed=1)
    ),
}

FUSED_PROGRAMS: dict[str, Program] = {
    **{name: _hooked(make) for name, make in FUSED.items()},
    **{
        f"{name}_hook_replaces": _hooked(FUSED[name], replace=True)
        for name in (
            "inv_batched",
            "solve_broadcast",
            "det_1x1",
            "pinv_wide_batch",
            "lu_solve_adjoint",
        )
    },
}


def _hook_in_double_backward(make: Callable[[Any, Any], Any], square: bool) -> Program:
    """Whether each call of a hook on ``make``'s node saw a gradient that requires grad,
    through a create_graph backward of the (squared) output's sum and a second backward."""

    def program(m: Any) -> Any:
        a = _spd(m)
        y = make(m, a)
        seen: list = []
        y.grad_fn.register_hook(lambda gi, go: seen.append(gi[0].requires_grad))
        (g,) = m.autograd.grad((y * y if square else y).sum(), a, create_graph=True)
        g.pow(2).sum().backward()
        return seen, a.grad

    return program


def _eigh_hooks_twice(m: Any) -> Any:
    a = _spd(m)
    values, vectors = m.linalg.eigh(a)
    seen: list = []
    removed = values.grad_fn.register_hook(lambda gi, go: seen.append("removed"))
    removed.remove()
    values.grad_fn.register_hook(lambda gi, go: seen.append([_shape(g) for g in gi]))
    loss = values.sum() + _weighted(m, vectors)
    loss.backward(retain_graph=True)
    loss.backward()
    return seen, a.grad


FUSED_PROGRAMS.update(
    {
        "inv_prehook_replaces": lambda m: (
            lambda a, y: (
                y.grad_fn.register_prehook(lambda go: (go[0] * 2,)),
                y.sum().backward(),
                a.grad,
            )[2]
        )(*(lambda a: (a, m.linalg.inv(a)))(_spd(m))),
        "eigh_hooks_removed_and_twice": _eigh_hooks_twice,
        **{
            f"{name}_double_backward_hook": _hook_in_double_backward(make, True)
            for name, make in {
                "inv": lambda m, a: m.linalg.inv(a),
                "eigh": lambda m, a: m.linalg.eigh(a)[0],
                "cholesky": lambda m, a: m.linalg.cholesky(a),
                "det": lambda m, a: m.linalg.det(a),
                "solve": lambda m, a: m.linalg.solve(a, m.ones(3, 2, dtype=m.float64)),
            }.items()
        },
    }
)


def test_linalg_node_hooks_match_torch(spec: str) -> None:
    # (torch:cpu computes them whole, where the hooks changed; numpy runs every other one)
    same_each(FUSED_PROGRAMS if spec != "numpy" else dict(list(FUSED_PROGRAMS.items())[::2]), spec)


# -- 978c1ef: batched products and F.linear recorded as torch's ---------------------------------


def _product(make: Callable[[Any], tuple]) -> Program:
    """The product's node three levels down, what its pre-hook and hook see (shapes), and
    the operands' gradients: ``make`` gives (product, operand, ...)."""

    def program(m: Any) -> Any:
        out, *operands = make(m)
        seen: list = []
        out.grad_fn.register_prehook(lambda go: seen.append(("pre", [_shape(g) for g in go])))
        out.grad_fn.register_hook(lambda gi, go: seen.append([_shape(g) for g in gi]))
        (out * out).sum().backward()
        return walk(out.grad_fn), seen, [t.grad for t in operands if t.is_leaf]

    return program


def _two(m: Any, a: Any, b: Any, op: Any = None) -> tuple:
    return (op or m.matmul)(a, b), a, b


def _linear(m: Any, x: Any, w: Any, b: Any = None) -> tuple:
    return (m.nn.functional.linear(x, w, b), x, w) + (() if b is None else (b,))


#: Multiples of 1/4: their float32 products and gradients here are exact.
_QUARTERS = (np.arange(24) % 5 - 2) / 4

PRODUCTS: dict[str, Program] = {
    name: _product(make)
    for name, make in {
        "batch_by_matrix_only_matrix_grad": lambda m: _two(
            m, _data(m, 2, 3, 4, grad=False), _data(m, 4, 5, seed=1)
        ),
        "batch_by_matrix_only_batch_grad": lambda m: _two(
            m, _data(m, 2, 3, 4), _data(m, 4, 5, seed=1, grad=False)
        ),
        "batch_by_batch_of_one": lambda m: _two(m, _data(m, 2, 3, 4), _data(m, 1, 4, 5, seed=1)),
        "empty_batch_by_matrix": lambda m: _two(m, _data(m, 0, 3, 4), _data(m, 4, 5, seed=1)),
        "batch_without_rows": lambda m: _two(m, _data(m, 2, 0, 4), _data(m, 4, 5, seed=1)),
        "batch_by_transposed_matrix": lambda m: _two(
            m, _data(m, 2, 3, 4), _data(m, 5, 4, seed=1).t()
        ),
        "bmm_of_transposed_batch": lambda m: _two(
            m, _data(m, 2, 4, 3).transpose(1, 2), _data(m, 2, 4, 5, seed=1), m.bmm
        ),
        "vector_by_matrix": lambda m: _two(m, _data(m, 4), _data(m, 4, 5, seed=1)),
        "mv": lambda m: _two(m, _data(m, 3, 4), _data(m, 4, seed=1), m.mv),
        "vdot": lambda m: _two(m, _data(m, 4), _data(m, 4, seed=1), m.vdot),
        "float32_batch_by_matrix": lambda m: _two(
            m,
            m.tensor(_QUARTERS.reshape(2, 3, 4), dtype=m.float32, requires_grad=True),
            m.tensor(_QUARTERS[:20].reshape(4, 5), dtype=m.float32, requires_grad=True),
        ),
        "addmm": lambda m: (lambda a, b, c: (m.addmm(a, b, c), a, b, c))(
            _data(m, 5, seed=2), _data(m, 3, 4), _data(m, 5, 4, seed=1).t()
        ),
        "linear_3d_with_bias": lambda m: _linear(
            m, _data(m, 2, 3, 4), _data(m, 5, 4, seed=1), _data(m, 5, seed=2)
        ),
        "linear_1d_with_bias": lambda m: _linear(
            m, _data(m, 4), _data(m, 5, 4, seed=1), _data(m, 5, seed=2)
        ),
        "linear_4d_with_bias": lambda m: _linear(
            m, _data(m, 2, 2, 3, 4), _data(m, 5, 4, seed=1), _data(m, 5, seed=2)
        ),
        "linear_only_bias_grad": lambda m: (
            lambda b: (
                m.nn.functional.linear(
                    _data(m, 2, 3, 4, grad=False), _data(m, 5, 4, seed=1, grad=False), b
                ),
                b,
            )
        )(_data(m, 5, seed=2)),
        "linear_only_input_grad": lambda m: (
            lambda x: (
                m.nn.functional.linear(
                    x, _data(m, 5, 4, seed=1, grad=False), _data(m, 5, seed=2, grad=False)
                ),
                x,
            )
        )(_data(m, 2, 3, 4)),
        "linear_empty_batch": lambda m: _linear(
            m, _data(m, 0, 3, 4), _data(m, 5, 4, seed=1), _data(m, 5, seed=2)
        ),
        "linear_transposed_weight": lambda m: _linear(
            m, _data(m, 2, 3, 4), _data(m, 4, 5, seed=1).t(), _data(m, 5, seed=2)
        ),
    }.items()
}
PRODUCTS.update(
    {
        "linear_2d_prehook": lambda m: (
            lambda x, o: (
                o.grad_fn.register_prehook(lambda go: (go[0] * 2,)),
                o.sum().backward(),
                x.grad,
            )[2]
        )(
            *(
                lambda x: (
                    x,
                    m.nn.functional.linear(x, _data(m, 5, 4, seed=1), _data(m, 5, seed=2)),
                )
            )(_data(m, 3, 4))
        ),
        "linear_bias_of_other_dtype": lambda m: m.nn.functional.linear(
            _data(m, 2, 3, 4), _data(m, 5, 4, seed=1), _data(m, 5, seed=2, dtype=m.float32)
        ),
        "zero_inner_size_without_grad": lambda m: m.matmul(
            _data(m, 2, 3, 0, grad=False), _data(m, 0, 5, grad=False)
        ),
        "linear_2d_zero_inner_size_without_grad": lambda m: m.nn.functional.linear(
            _data(m, 3, 0, grad=False), _data(m, 5, 0, grad=False), _data(m, 5, seed=2, grad=False)
        ),
        "module_linear_3d_graph": lambda m: walk(
            m.nn.Linear(4, 5).double()(_data(m, 2, 3, 4)).grad_fn
        ),
    }
)


def test_batched_products_match_torch(spec: str) -> None:
    same_each(PRODUCTS, spec)


# -- 978c1ef: sparse gradients of embedding(sparse=True) ----------------------------------------

_WEIGHT = np.arange(18, dtype=np.float64).reshape(6, 3) / 7 - 1


def _embedding(m: Any, indices: tuple = (3, 1, 3), hook: Any = None, dtype: Any = None) -> Any:
    """A sparse=True embedding of fixed weights after the backward of one lookup."""
    e = m.nn.Embedding(6, 3, sparse=True).double()
    with m.no_grad():
        e.weight.copy_(m.tensor(_WEIGHT))
    if dtype is not None:
        e = e.to(dtype)
    if hook is not None:
        e.weight.register_hook(hook)
    rows = e(m.tensor(list(indices), dtype=m.int64))
    (rows * m.tensor([1.0, -2.0, 3.0], dtype=e.weight.dtype)).sum().backward()
    return e


def _grad(m: Any, **kw: Any) -> Any:
    return _embedding(m, **kw).weight.grad


def _kind(t: Any) -> Any:
    """A tensor's layout name, is_sparse, and its values densely."""
    return str(t.layout).split(".")[-1], t.is_sparse, t.to_dense() if t.is_sparse else t


def _stepped(m: Any, name: str, **kw: Any) -> Any:
    """A sparse=True embedding's weights after two steps of optimizer ``name``."""
    e = m.nn.Embedding(6, 3, sparse=True).double()
    with m.no_grad():
        e.weight.copy_(m.tensor(_WEIGHT))
    opt = getattr(m.optim, name)(e.parameters(), **kw)
    for indices in ([3, 1, 3], [0, 3]):
        opt.zero_grad()
        e(m.tensor(indices)).pow(2).sum().backward()
        opt.step()
    return e.weight


SPARSE: dict[str, Program] = {
    "coalesce_of_coalesced_is_itself": lambda m: (lambda g: g.coalesce() is g)(_grad(m).coalesce()),
    "clone_keeps_coalescing": lambda m: (
        _grad(m).clone().is_coalesced(),
        _grad(m).coalesce().clone().is_coalesced(),
    ),
    "product_of_two": lambda m: (lambda g: (_kind(g * g), (g * g).is_coalesced()))(_grad(m)),
    "mul_in_place": lambda m: (lambda g: (g.mul_(2), _kind(g))[1])(_grad(m)),
    "add_in_place_of_sparse": lambda m: (lambda g: (g.add_(g), _kind(g))[1])(_grad(m)),
    "zero_in_place": lambda m: (lambda g: (g.zero_(), _kind(g))[1])(_grad(m)),
    "observing_hook": lambda m: (lambda g: (_kind(g), g.is_coalesced()))(
        _grad(m, hook=lambda g: None)
    ),
    "what_a_hook_sees": lambda m: (
        lambda seen: (
            _embedding(m, hook=lambda g: seen.append((_kind(g), g.is_coalesced()))),
            seen,
        )[1]
    )([]),
    "autograd_grad": lambda m: (
        lambda e: (lambda g: (_kind(g), g.is_coalesced()))(
            m.autograd.grad(e(m.tensor([3, 1, 3])).sum(), e.weight)[0]
        )
    )(m.nn.Embedding(6, 3, sparse=True).double()),
    "float32_weights": lambda m: (lambda g: (_kind(g), g.dtype))(_grad(m, dtype=m.float32)),
    "attributes": lambda m: (lambda g: (g.shape, g.dtype, g.requires_grad, g.is_leaf))(_grad(m)),
    "empty_lookup": lambda m: (lambda g: (_kind(g), g.is_coalesced()))(_grad(m, indices=())),
    "cpu": lambda m: _kind(_grad(m).cpu()),
    "to_dense": lambda m: _kind(_grad(m).to_dense()),
    "sum_over_rows": lambda m: _kind(_grad(m).sum(0)),
    "bag_sum": lambda m: (
        lambda w: (
            m.nn.functional.embedding_bag(m.tensor([1, 2, 1, 4]), w, m.tensor([0, 2]), sparse=True)
            .sum()
            .backward(),
            _kind(w.grad),
            w.grad.is_coalesced(),
        )[1:]
    )(m.ones(6, 3, dtype=m.float64, requires_grad=True)),
    "bag_mean_2d": lambda m: (
        lambda w: (
            m.nn.functional.embedding_bag(m.tensor([[1, 2], [1, 4]]), w, mode="mean", sparse=True)
            .sum()
            .backward(),
            _kind(w.grad),
        )[1]
    )(m.ones(6, 3, dtype=m.float64, requires_grad=True)),
    "max_norm": lambda m: (
        lambda w: (
            m.nn.functional.embedding(m.tensor([1, 2, 1]), w, max_norm=1.0, sparse=True)
            .sum()
            .backward(),
            _kind(w.grad),
            w,
        )[1:]
    )(m.tensor(_WEIGHT * 3, requires_grad=True)),
    "dense_then_sparse_accumulated": lambda m: (
        lambda w: (
            (w * 2).sum().backward(),
            m.nn.functional.embedding(m.tensor([1]), w, sparse=True).sum().backward(),
            _kind(w.grad),
        )[2]
    )(m.ones(6, 3, dtype=m.float64, requires_grad=True)),
    "sgd": lambda m: _stepped(m, "SGD", lr=0.1),
    "sgd_maximize": lambda m: _stepped(m, "SGD", lr=0.1, maximize=True),
    "sgd_nesterov": lambda m: _stepped(m, "SGD", lr=0.1, momentum=0.9, nesterov=True),
    "adagrad": lambda m: _stepped(m, "Adagrad", lr=0.1),
    "adagrad_maximize": lambda m: _stepped(m, "Adagrad", lr=0.1, maximize=True),
    "sparse_adam_maximize": lambda m: _stepped(m, "SparseAdam", lr=0.1, maximize=True),
    "sparse_adam_bad_betas": lambda m: _stepped(m, "SparseAdam", lr=0.1, betas=(1.0, 0.9)),
    "rprop_weight_decay_keyword": lambda m: _stepped(m, "Rprop", lr=0.1, weight_decay=0.1),
}


def test_sparse_gradients_match_torch() -> None:
    same_each(SPARSE, "numpy")


# -- 7aca5a7 / 978c1ef: class-loss targets, probability targets ---------------------------------

_LOGITS = np.random.default_rng(2).standard_normal((3, 4))
_PROBS = np.abs(np.random.default_rng(3).standard_normal((3, 4)))
_PROBS /= _PROBS.sum(1, keepdims=True)


def _loss(fn: str, x: Any, target: Any, backward: bool = True, **kw: Any) -> Program:
    """The loss ``fn`` of logits ``x`` (values) and ``target`` (m -> tensor), its node's
    name and the logits' gradient (``backward``)."""

    def program(m: Any) -> Any:
        logits = m.tensor(x, dtype=m.float64, requires_grad=True)
        given = dict(kw)
        if "weight" in given:  # (made per library)
            given["weight"] = m.tensor([1.0, 2.0, 3.0, 4.0], dtype=m.float64)
        out = getattr(m.nn.functional, fn)(logits, target(m), **given)
        name = None if out.grad_fn is None else out.grad_fn.name()
        if backward:
            out.sum().backward()
        return out, name, logits.grad

    return program


def _classes(values: Any, dtype: str = "int64") -> Callable[[Any], Any]:
    return lambda m: m.tensor(values, dtype=getattr(m, dtype))


def _probabilities(values: Any, dtype: str = "float64") -> Callable[[Any], Any]:
    return lambda m: m.tensor(values, dtype=getattr(m, dtype))


ONE, BATCH = _LOGITS[0], _LOGITS
LOSSES: dict[str, Program] = {
    "ce_C_0d": _loss("cross_entropy", ONE, _classes(2)),
    "ce_C_two_targets": _loss("cross_entropy", ONE, _classes([2, 1])),
    "ce_C_no_target": _loss("cross_entropy", ONE, _classes([])),
    "ce_C_1x1_target": _loss("cross_entropy", ONE, _classes([[2]])),
    "ce_C_0d_ignored": _loss("cross_entropy", ONE, _classes(2), ignore_index=2),
    "ce_C_1_smoothing": _loss("cross_entropy", ONE, _classes([2]), label_smoothing=0.1),
    "ce_C_0d_smoothing": _loss("cross_entropy", ONE, _classes(2), label_smoothing=0.1),
    "ce_C_1_out_of_range": _loss("cross_entropy", ONE, _classes([7])),
    "ce_C_bool_target": _loss("cross_entropy", ONE, _classes([True], "bool")),
    "ce_C_probabilities": _loss("cross_entropy", ONE, _probabilities(_PROBS[0])),
    "ce_C_probabilities_none": _loss(
        "cross_entropy", ONE, _probabilities(_PROBS[0]), reduction="none"
    ),
    "ce_C_probabilities_smoothing_weight": _loss(
        "cross_entropy", ONE, _probabilities(_PROBS[0]), label_smoothing=0.2, weight="w"
    ),
    "ce_C_probabilities_1xC": _loss("cross_entropy", ONE, _probabilities(_PROBS[:1])),
    "ce_C_float32_probabilities": _loss("cross_entropy", ONE, _probabilities(_PROBS[0], "float32")),
    "ce_NC_float32_probabilities": _loss("cross_entropy", BATCH, _probabilities(_PROBS, "float32")),
    "ce_NC_integer_probability_shape": _loss("cross_entropy", BATCH, _classes(_PROBS)),
    "ce_NC_probabilities_of_other_classes": _loss(
        "cross_entropy", BATCH, _probabilities(_PROBS[:, :3])
    ),
    "ce_NC_probabilities_of_other_batch": _loss("cross_entropy", BATCH, _probabilities(_PROBS[:2])),
    "ce_NC_other_batch": _loss("cross_entropy", BATCH, _classes([1, 2])),
    "ce_NC_0d_target": _loss("cross_entropy", BATCH, _classes(1)),
    "ce_NC_2d_target": _loss("cross_entropy", BATCH, _classes([[1], [2], [0]])),
    "ce_NCd_other_batch": _loss(
        "cross_entropy", _LOGITS.reshape(2, 3, 2)[:, :2], _classes([[1, 0], [0, 1], [1, 1]])
    ),
    "ce_NCd_other_d": _loss("cross_entropy", _LOGITS.reshape(2, 3, 2), _classes([[1], [0]])),
    "ce_NC_float_class_indices": _loss("cross_entropy", BATCH, _probabilities([1.0, 2.0, 0.0])),
    "ce_0d_input": _loss("cross_entropy", 1.0, _classes(0)),
    "ce_empty_batch": _loss("cross_entropy", np.zeros((0, 4)), _classes(np.zeros(0, int))),
    "ce_empty_batch_probabilities": _loss(
        "cross_entropy", np.zeros((0, 4)), _probabilities(np.zeros((0, 4)))
    ),
    "ce_int32_targets": _loss("cross_entropy", BATCH, _classes([1, 2, 0], "int32")),
    "ce_uint8_targets": _loss("cross_entropy", BATCH, _classes([1, 2, 0], "uint8")),
    "nll_C_0d": _loss("nll_loss", ONE, _classes(2)),
    "nll_C_two_targets": _loss("nll_loss", ONE, _classes([2, 1])),
    "nll_C_0d_none": _loss("nll_loss", ONE, _classes(2), reduction="none"),
    "nll_C_1x1_target": _loss("nll_loss", ONE, _classes([[2]])),
    "nll_NC_other_batch": _loss("nll_loss", BATCH, _classes([1, 2, 0, 1])),
    "nll_NC_0d_target": _loss("nll_loss", BATCH, _classes(1)),
    "nll_C_float_target": _loss("nll_loss", ONE, _probabilities([2.0])),
    "nll_0d_input": _loss("nll_loss", 1.0, _classes(0)),
    "nll_C_probability_shape": _loss("nll_loss", ONE, _probabilities(_PROBS[0])),
    "multi_margin_C_1": _loss("multi_margin_loss", ONE, _classes([2])),
    "multi_margin_NC_other_batch": _loss("multi_margin_loss", BATCH, _classes([2, 1])),
}
# A (C,) input with a (1,) target: torch's forward takes it as a batch of one, and its backward
# raises ("size mismatch"), where tw's gives the gradient; compared in forward only.
for _fn in ("cross_entropy", "nll_loss"):
    for _name, _kw in {
        "mean": {},
        "none": {"reduction": "none"},
        "sum": {"reduction": "sum"},
        "weight": {"weight": "w"},
        "ignored": {"ignore_index": 2},
        "other_ignored": {"ignore_index": 1},
    }.items():
        LOSSES[f"{_fn}_C_1_{_name}_forward"] = _loss(_fn, ONE, _classes([2]), False, **_kw)


def _probability_hook(x: Any, target: Any) -> Program:
    def program(m: Any) -> Any:
        logits = m.tensor(x, dtype=m.float64, requires_grad=True)
        out = m.nn.functional.cross_entropy(logits, m.tensor(target, dtype=m.float64))
        seen: list = []
        out.grad_fn.register_hook(lambda gi, go: seen.append([_shape(g) for g in gi]))
        out.backward()
        return seen, walk(out.grad_fn), logits.grad

    return program


LOSSES.update(
    {
        "ce_probabilities_hook": _probability_hook(BATCH, _PROBS),
        "ce_C_probabilities_hook": _probability_hook(ONE, _PROBS[0]),
        "ce_probabilities_double_backward": _second(
            lambda m, x: m.nn.functional.cross_entropy(
                x, m.tensor(_PROBS, dtype=m.float64), label_smoothing=0.1
            ),
            lambda m: m.tensor(_LOGITS, dtype=m.float64, requires_grad=True),
        ),
        "module_ce_C_1": lambda m: (lambda o: (o, o.grad_fn.name()))(
            m.nn.CrossEntropyLoss()(m.tensor(ONE, dtype=m.float64), m.tensor([3]))
        ),
        "module_nll_C_1_none": lambda m: (lambda o: (o, o.grad_fn))(
            m.nn.NLLLoss(reduction="none")(m.tensor(ONE, dtype=m.float64), m.tensor([3]))
        ),
    }
)


LOSSES.update(
    {
        "ce_C_0d_probability": _loss("cross_entropy", ONE, _probabilities(0.5), False),
        "ce_C_integer_target_of_C": _loss("cross_entropy", ONE, _classes([0, 1, 2, 3]), False),
        "ce_C_two_probabilities": _loss("cross_entropy", ONE, _probabilities([0.5, 0.5]), False),
        "ce_C_one_probability": _loss("cross_entropy", ONE, _probabilities([1.0]), False),
        "ce_C_1xC_probabilities_smoothing": _loss(
            "cross_entropy", ONE, _probabilities([[0.25] * 4]), False, label_smoothing=0.1
        ),
        "ce_C_1_smoothing_ignored": _loss(
            "cross_entropy", ONE, _classes([2]), False, label_smoothing=0.1, ignore_index=2
        ),
        "ce_C_0d_smoothing_weight": _loss(
            "cross_entropy", ONE, _classes(2), label_smoothing=0.1, weight="w"
        ),
        "ce_NC_one_target": _loss("cross_entropy", BATCH, _classes([1]), False),
        "ce_1C_one_target": _loss("cross_entropy", BATCH[:1], _classes([1])),
        "ce_1C_0d_target": _loss("cross_entropy", BATCH[:1], _classes(1), False),
        "ce_NC_probabilities_ignore_index": _loss(
            "cross_entropy", BATCH, _probabilities(np.full((3, 4), 0.25)), False, ignore_index=1
        ),
        "nll_C_integer_target_of_C": _loss("nll_loss", ONE, _classes([0, 1, 2, 3]), False),
        "nll_1C_0d_target": _loss("nll_loss", BATCH[:1], _classes(1), False),
        "nll_NCd_other_batch": _loss(
            "nll_loss", np.zeros((2, 4, 3)), _classes(np.zeros((3, 3), int)), False
        ),
        "nll_NCd_0d_target": _loss("nll_loss", np.zeros((2, 4, 3)), _classes(0), False),
    }
)


def test_class_losses_match_torch(spec: str) -> None:
    same_each(LOSSES, spec)


# -- 4b16839: MHA's 2-D attn_mask kept 2-D ------------------------------------------------------

_E, _HEADS, _L, _S, _N = 8, 2, 3, 5, 2
_MHA_RNG = np.random.default_rng(4)
_Q, _K, _V = (_MHA_RNG.standard_normal((n, _N, _E)) for n in (_L, _S, _S))
_KB, _VB = _MHA_RNG.standard_normal((_N, _S, 6)), _MHA_RNG.standard_normal((_N, _S, 4))
_BOOL_MASK = _MHA_RNG.random((_L, _S)) < 0.3
_BOOL_MASK[:, 0] = False
_FLOAT_MASK = _MHA_RNG.standard_normal((_L, _S))
_PADDING = np.zeros((_N, _S), bool)
_PADDING[1, -2:] = True
_ROW_MASKED = _BOOL_MASK.copy()
_ROW_MASKED[1] = True  # (a query that sees no key: NaN rows)
_ALL_PADDED = _PADDING.copy()
_ALL_PADDED[1] = True


def _mha_state(**kw: Any) -> dict:
    torch.manual_seed(0)
    made = torch.nn.MultiheadAttention(_E, _HEADS, dtype=torch.float64, **kw)
    return {k: v.detach().numpy().copy() for k, v in made.state_dict().items()}


_MHA_STATES = {False: _mha_state(), True: _mha_state(batch_first=True, kdim=6, vdim=4)}


def _mha(
    mask: str | None = None,
    padding: str | None = None,
    need: bool = True,
    batch_first: bool = False,
    train: bool = True,
    unbatched: bool = False,
    per_head: bool = False,
    **kw: Any,
) -> Program:
    """MHA's output, weights and gradients (in training) with an (L, S) ``mask`` ('bool',
    'float' or 'causal'; ``per_head``: expanded to (N * heads, L, S)) and a ``padding`` mask;
    ``batch_first`` with kdim/vdim of their own."""

    def program(m: Any) -> Any:
        extra = {"batch_first": True, "kdim": 6, "vdim": 4} if batch_first else {}
        mha = m.nn.MultiheadAttention(_E, _HEADS, dtype=m.float64, **extra).train(train)
        mha.load_state_dict({k: m.tensor(v) for k, v in _MHA_STATES[batch_first].items()})
        arrays = (_Q.transpose(1, 0, 2), _KB, _VB) if batch_first else (_Q, _K, _V)
        q, k, v = (m.tensor(a.copy(), requires_grad=train) for a in arrays)
        if unbatched:
            q, k, v = q[:, 0], k[:, 0], v[:, 0]
        made = {
            None: None,
            "bool": lambda: m.tensor(_BOOL_MASK),
            "float": lambda: m.tensor(_FLOAT_MASK),
            "causal": lambda: m.tensor(np.triu(np.full((_L, _S), -np.inf), 1)),
            "row_masked": lambda: m.tensor(_ROW_MASKED),
        }[mask]
        attn_mask = None if made is None else made()
        if per_head:
            attn_mask = attn_mask.unsqueeze(0).expand(_N * _HEADS, _L, _S)
        pad = {
            None: None,
            "bool": _PADDING,
            "float": np.where(_PADDING, -1e9, 0.0),
            "all": _ALL_PADDED,
        }[padding]
        if pad is not None:
            pad = m.tensor(pad[0] if unbatched else pad)
        with m.set_grad_enabled(train):
            out, weights = mha(
                q, k, v, key_padding_mask=pad, need_weights=need, attn_mask=attn_mask, **kw
            )
        if not train:
            return out, weights
        (out.pow(2).sum() + (0 if weights is None else weights.sum())).backward()
        first = mha.q_proj_weight if batch_first else mha.in_proj_weight
        return out, weights, q.grad, k.grad, v.grad, first.grad

    return program


MHA: dict[str, Program] = {
    f"mask_{mask}_padding_{padding}_weights_{need}": _mha(mask, padding, need)
    for mask in (None, "bool", "float")
    for padding in (None, "bool", "float")
    for need in (True, False)
}
MHA.update(
    {
        "weights_per_head": _mha("bool", "bool", average_attn_weights=False),
        "is_causal_with_mask": _mha("causal", need=False, is_causal=True),
        "is_causal_with_mask_weights": _mha("causal", is_causal=True),
        "is_causal_without_mask": _mha(need=False, is_causal=True),
        "unbatched_bool_mask": _mha("bool", unbatched=True),
        "unbatched_float_mask_padding": _mha("float", "bool", need=False, unbatched=True),
        "eval_bool_masks": _mha("bool", "bool", train=False),
        "eval_float_mask": _mha("float", need=False, train=False),
        "eval_padding_only": _mha(padding="bool", need=False, train=False),
        "batch_first_kdim_vdim": _mha("bool", "bool", batch_first=True),
        "batch_first_float_mask": _mha("float", need=False, batch_first=True),
        "eval_batch_first": _mha("bool", need=False, batch_first=True, train=False),
        "per_head_bool_mask": _mha("bool", need=False, per_head=True),
        "per_head_float_mask_padding": _mha("float", "float", per_head=True),
        "row_masked": _mha("row_masked"),
        "row_masked_without_weights": _mha("row_masked", need=False),
        "eval_row_masked": _mha("row_masked", need=False, train=False),
        "every_key_padded": _mha(padding="all", need=False),
    }
)


def _mha_bad_mask(shape: tuple, dtype: str = "float64") -> Program:
    def program(m: Any) -> Any:
        mha = m.nn.MultiheadAttention(_E, _HEADS, dtype=m.float64)
        q, k, v = (m.tensor(a) for a in (_Q, _K, _V))
        return mha(q, k, v, attn_mask=m.zeros(*shape, dtype=getattr(m, dtype)))[0].shape

    return program


MHA.update(
    {
        f"mask_of_shape_{shape}": _mha_bad_mask(shape)
        for shape in [(_S, _L), (1, _L, _S), (_L * 2, _S), (_N * _HEADS + 1, _L, _S)]
    }
)
MHA["integer_mask"] = _mha_bad_mask((_L, _S), "int64")


def test_mha_masks_match_torch(spec: str) -> None:
    # (torch:cpu runs them through torch's fused attention, where a 2-D mask broadcasts;
    # numpy, the core's decomposition of the same code, runs every third)
    same_each(MHA if spec != "numpy" else dict(list(MHA.items())[::3]), spec)


# -- 4b16839: the torch plugin's recurrent kernel on non-contiguous operands --------------------

_SIZE, _HIDDEN, _STEPS, _BATCH = 3, 4, 5, 2
_SEQUENCE = np.random.default_rng(9).standard_normal((_BATCH, _STEPS, _SIZE))
_STATE = np.random.default_rng(10).standard_normal((_BATCH, 4, _HIDDEN))


def _rnn_state(kind: str, **kw: Any) -> dict:
    torch.manual_seed(1)
    made = getattr(torch.nn, kind)(_SIZE, _HIDDEN, num_layers=2, dtype=torch.float64, **kw)
    return {k: v.detach().numpy().copy() for k, v in made.state_dict().items()}


_RNN_CONFIGS = [
    (kind, bi, bf)
    for kind in ("LSTM", "GRU", "RNN")
    for bi in (False, True)
    for bf in (False, True)
]
_RNN_STATES = {c: _rnn_state(c[0], bidirectional=c[1], batch_first=c[2]) for c in _RNN_CONFIGS}


def _recurrent(
    config: tuple, strided_state: bool = False, packed: bool = False, grad: bool = True
) -> Program:
    """A 2-layer recurrent module's outputs and gradients on a non-contiguous sequence (a
    transposed view: (T, N, I) of an (N, T, I) array, or (N, T, I) of a (T, N, I) one), with
    a transposed initial state (``strided_state``) and as a packed sequence (``packed``)."""
    kind, bidirectional, batch_first = config

    def program(m: Any) -> Any:
        rnn = getattr(m.nn, kind)(
            _SIZE,
            _HIDDEN,
            num_layers=2,
            bidirectional=bidirectional,
            batch_first=batch_first,
            dtype=m.float64,
        )
        rnn.load_state_dict({k: m.tensor(v) for k, v in _RNN_STATES[config].items()})
        stored = _SEQUENCE.transpose(1, 0, 2) if batch_first else _SEQUENCE
        base = m.tensor(stored.copy(), requires_grad=grad)
        x = base.transpose(0, 1)
        layers = 4 if bidirectional else 2
        state = m.tensor(_STATE[:, :layers].copy(), requires_grad=grad)
        hx = None
        if strided_state:
            h = state.transpose(0, 1)
            hx = (h, h * 0.5) if kind == "LSTM" else h
        if packed:
            x = m.nn.utils.rnn.pack_padded_sequence(x, m.tensor([5, 3]), batch_first=batch_first)
        with m.set_grad_enabled(grad):
            out, last = rnn(x, hx)
        if packed:
            out = m.nn.utils.rnn.pad_packed_sequence(out, batch_first=batch_first)[0]
        last = last[0] + last[1] if kind == "LSTM" else last
        if not grad:
            return out, last
        (out.pow(2).sum() + last.sum()).backward()
        return out, last, base.grad, rnn.weight_hh_l0.grad, state.grad

    return program


RECURRENT: dict[str, Program] = {}
for _config in _RNN_CONFIGS:
    _id = "{}_bidirectional_{}_batch_first_{}".format(*_config)
    RECURRENT[f"{_id}_strided_state"] = _recurrent(_config, strided_state=True)
    RECURRENT[f"{_id}_packed"] = _recurrent(_config, packed=True, strided_state=_config[1])
    if _config[2]:  # (batch_first: the layout torch's kernel reads without a copy either way)
        RECURRENT[f"{_id}_no_grad"] = _recurrent(_config, strided_state=True, grad=False)


def test_recurrent_modules_on_strided_operands_match_torch(spec: str) -> None:
    # (the torch plugin's kernel is what changed: numpy, whose reference is slower, runs a few)
    chosen = RECURRENT if spec != "numpy" else dict(list(RECURRENT.items())[::6])
    same_each(chosen, spec)


# -- 5b511d1: probs and logits of Bernoulli-like distributions ----------------------------------

_P, _LG = [0.2, 0.7, 1e-9, 1.0], [-1.5, 0.3, 30.0, -40.0]


def _dist(name: str, given: str, *args: Any, **kw: Any) -> Callable[[Any, Any], Any]:
    """(m, parameter) -> distribution ``name`` of ``args`` with ``given`` = the parameter."""
    return lambda m, p: getattr(m.distributions, name)(*args, **{given: p}, **kw)


def _read(make: Callable[[Any, Any], Any], read: Callable[[Any, Any], Any], values: Any) -> Program:
    return _grad_of(lambda m, x: read(m, make(m, x)), values)


def _class_weights(m: Any) -> Any:
    return m.arange(4.0, dtype=m.float64)


DISTRIBUTIONS: dict[str, Program] = {
    "bernoulli_logits_of_probs": _read(_dist("Bernoulli", "probs"), lambda m, d: d.logits, _P),
    "bernoulli_probs_of_logits": _read(_dist("Bernoulli", "logits"), lambda m, d: d.probs, _LG),
    "bernoulli_log_prob": _read(
        _dist("Bernoulli", "probs"),
        lambda m, d: d.log_prob(m.tensor([1.0, 0.0, 0.0, 1.0], dtype=m.float64)),
        _P,
    ),
    "bernoulli_entropy": _read(_dist("Bernoulli", "logits"), lambda m, d: d.entropy(), _LG),
    "bernoulli_float32": _read(
        lambda m, p: m.distributions.Bernoulli(probs=p.float()), lambda m, d: d.logits, _P
    ),
    "bernoulli_cached": lambda m: (
        lambda d: (
            d.logits is d.logits,
            d.probs is d.probs,
            sorted(set(vars(d)) & {"probs", "logits"}),
        )
    )(m.distributions.Bernoulli(probs=m.tensor(_P, dtype=m.float64))),
    "bernoulli_expand_from_logits": lambda m: (lambda e: (e.probs, e.param_shape))(
        m.distributions.Bernoulli(logits=m.tensor(_LG, dtype=m.float64)).expand((2, 4))
    ),
    "bernoulli_both": lambda m: m.distributions.Bernoulli(probs=m.tensor(_P), logits=m.tensor(_LG)),
    "bernoulli_neither": lambda m: m.distributions.Bernoulli(),
    "bernoulli_number": lambda m: (lambda d: (d.probs, d.logits, d.param_shape, d.batch_shape))(
        m.distributions.Bernoulli(0.3)
    ),
    "bernoulli_validated": lambda m: m.distributions.Bernoulli(
        probs=m.tensor([1.5]), validate_args=True
    ),
    "bernoulli_nan_logits_validated": lambda m: m.distributions.Bernoulli(
        logits=m.tensor([float("nan")]), validate_args=True
    ),
    "bernoulli_param_shape_of_logits": lambda m: (lambda d: (d.param_shape, d.probs.shape))(
        m.distributions.Bernoulli(logits=m.tensor([[0.0, 1.0]]))
    ),
    "binomial_probs": _read(
        lambda m, p: m.distributions.Binomial(m.tensor([[3.0], [5.0]]), probs=p),
        lambda m, d: d.logits + d.mean + d.variance,
        [0.2, 0.7, 0.5, 0.4],
    ),
    "binomial_shapes": lambda m: (
        lambda d: (d.param_shape, d.batch_shape, d.total_count, d.total_count.dtype)
    )(m.distributions.Binomial(m.tensor([[3], [5]]), probs=m.tensor(_P, dtype=m.float64))),
    "binomial_integer_count": lambda m: (lambda d: (d.param_shape, d.total_count, d.logits))(
        m.distributions.Binomial(4, logits=m.tensor(_LG, dtype=m.float64))
    ),
    "binomial_log_prob": _read(
        _dist("Binomial", "logits", 4),
        lambda m, d: d.log_prob(m.tensor([1.0, 4.0, 0.0, 2.0], dtype=m.float64)),
        _LG,
    ),
    "binomial_expand": lambda m: (lambda e: (e.total_count, e.probs, e.param_shape))(
        m.distributions.Binomial(
            m.tensor([2.0, 3.0, 4.0, 5.0]), probs=m.tensor([0.1, 0.2, 0.3, 0.4])
        ).expand((3, 4))
    ),
    "binomial_expand_after_lazy_probs": lambda m: (
        lambda d: (d.probs, (lambda e: (e.probs, e.logits, e.param_shape))(d.expand((2, 2))))[1]
    )(m.distributions.Binomial(m.tensor([3.0, 4.0]), logits=m.tensor([0.5, -0.5]))),
    "binomial_both": lambda m: m.distributions.Binomial(
        3, probs=m.tensor(_P), logits=m.tensor(_LG)
    ),
    "binomial_dtypes": lambda m: (lambda d: (d.total_count.dtype, d.probs.dtype))(
        m.distributions.Binomial(m.tensor([3.0], dtype=m.float64), probs=m.tensor([0.5]))
    ),
    "categorical_probs": _read(
        _dist("Categorical", "probs"),
        lambda m, d: d.probs * _class_weights(m),
        [0.1, 0.2, 0.3, 0.9],
    ),
    "categorical_logits": _read(
        _dist("Categorical", "logits"),
        lambda m, d: d.logits * _class_weights(m),
        [1.0, 2.0, -1.0, 0.5],
    ),
    "categorical_logits_of_probs": _read(
        _dist("Categorical", "probs"),
        lambda m, d: d.logits * _class_weights(m),
        [0.1, 0.2, 0.3, 0.9],
    ),
    "categorical_probs_of_logits": _read(
        _dist("Categorical", "logits"),
        lambda m, d: d.probs * _class_weights(m),
        [1.0, 2.0, -1.0, 0.5],
    ),
    "categorical_zero_probability": _read(
        _dist("Categorical", "probs"), lambda m, d: d.logits.clamp(min=-100), [0.0, 0.2, 0.3, 0.5]
    ),
    "categorical_entropy_zero_probability": _read(
        _dist("Categorical", "probs"), lambda m, d: d.entropy(), [0.0, 0.2, 0.3, 0.5]
    ),
    "categorical_shapes": lambda m: (
        lambda d: (d.param_shape, d.batch_shape, d.event_shape, d.expand((3, 2)).probs.shape)
    )(m.distributions.Categorical(logits=m.tensor([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]))),
    "categorical_both": lambda m: m.distributions.Categorical(
        probs=m.tensor([0.5, 0.5]), logits=m.tensor([0.0, 0.0])
    ),
    "categorical_0d": lambda m: m.distributions.Categorical(probs=m.tensor(1.0)),
    "categorical_log_prob": _read(
        _dist("Categorical", "logits"),
        lambda m, d: d.log_prob(m.tensor([0, 3, 2])),
        [1.0, 2.0, -1.0, 0.5],
    ),
    "one_hot_categorical": _read(
        _dist("OneHotCategorical", "logits"),
        lambda m, d: d.probs * _class_weights(m),
        [1.0, 2.0, -1.0, 0.5],
    ),
    "geometric_logits_of_probs": _read(
        _dist("Geometric", "probs"), lambda m, d: d.logits, [0.2, 0.7, 0.5, 1.0]
    ),
    "geometric_expand_after_lazy_probs": lambda m: (
        lambda d: (d.probs, (lambda e: (e.probs, e.logits, e.batch_shape))(d.expand((3, 2))))[1]
    )(m.distributions.Geometric(logits=m.tensor([0.5, -0.5], dtype=m.float64))),
    "negative_binomial_logits": _read(
        _dist("NegativeBinomial", "logits", 3.0), lambda m, d: d.mean + d.probs, _LG[:2]
    ),
    "negative_binomial_shapes": lambda m: (lambda d: (d.param_shape, d.logits, d.total_count))(
        m.distributions.NegativeBinomial(m.tensor([2.0, 3.0]), probs=m.tensor([[0.1], [0.2]]))
    ),
    "continuous_bernoulli_probs": _read(
        _dist("ContinuousBernoulli", "probs"), lambda m, d: d.mean + d.logits, [0.2, 0.7, 0.5, 0.9]
    ),
    "continuous_bernoulli_logits": _read(
        _dist("ContinuousBernoulli", "logits"), lambda m, d: d.probs, _LG
    ),
    "continuous_bernoulli_validated": lambda m: m.distributions.ContinuousBernoulli(
        probs=m.tensor([1.2]), validate_args=True
    ),
    "continuous_bernoulli_infinite_logits_validated": lambda m: (
        m.distributions.ContinuousBernoulli(
            logits=m.tensor([float("inf")]), validate_args=True
        ).mean
    ),
    "continuous_bernoulli_clamped": lambda m: (lambda d: (d.probs, d.logits, d.param_shape))(
        m.distributions.ContinuousBernoulli(probs=m.tensor([0.0, 1.0], dtype=m.float64))
    ),
    "continuous_bernoulli_expand": lambda m: (lambda e: (e.probs, e.logits, e.mean, e._lims))(
        m.distributions.ContinuousBernoulli(probs=m.tensor([0.2, 0.499], dtype=m.float64)).expand(
            (2, 2)
        )
    ),
    "relaxed_bernoulli": _read(
        lambda m, p: m.distributions.RelaxedBernoulli(m.tensor(0.5, dtype=m.float64), probs=p),
        lambda m, d: d.logits,
        [0.2, 0.7],
    ),
    "relaxed_bernoulli_shapes": lambda m: (lambda d: (d.batch_shape, d.temperature, d.probs))(
        m.distributions.RelaxedBernoulli(m.tensor([0.5, 1.0]), logits=m.tensor([[0.0], [1.0]]))
    ),
}


def test_probs_or_logits_match_torch(spec: str) -> None:
    same_each(DISTRIBUTIONS, spec)


# -- defects found -------------------------------------------------------------------------------


def _defect(reason: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)


def test_qr_r_mode_node_like_torch(spec: str) -> None:
    def program(m: Any) -> Any:
        q, r = m.linalg.qr(_data(m, 4, 3), mode="r")
        return q.shape, q.requires_grad, r.grad_fn.name(), q.grad_fn is r.grad_fn

    same(program, spec)


def test_matrix_times_vector_node_like_torch(spec: str) -> None:
    same_each(
        {
            "2d_by_1d": _product(lambda m: _two(m, _data(m, 3, 4), _data(m, 4, seed=1))),
            "3d_by_1d": lambda m: walk(m.matmul(_data(m, 2, 3, 4), _data(m, 4, seed=1)).grad_fn),
            "3d_no_grad_by_1d": lambda m: walk(
                m.matmul(_data(m, 2, 3, 4, grad=False), _data(m, 4, seed=1)).grad_fn
            ),
        },
        spec,
    )


def test_dot_node_hook_like_torch(spec: str) -> None:
    same_each(
        {
            "dot": _product(lambda m: _two(m, _data(m, 4), _data(m, 4, seed=1), m.dot)),
            "matmul": _product(lambda m: _two(m, _data(m, 4), _data(m, 4, seed=1))),
        },
        spec,
    )


def test_linear_of_matrix_node_hook_like_torch(spec: str) -> None:
    same_each(
        {
            "functional": _product(
                lambda m: _linear(m, _data(m, 3, 4), _data(m, 5, 4, seed=1), _data(m, 5, seed=2))
            ),
            # (quarters: exact in float32, where random values round apart in the last bit)
            "float32": _product(
                lambda m: _linear(
                    m,
                    m.tensor(_QUARTERS[:12].reshape(3, 4), dtype=m.float32, requires_grad=True),
                    m.tensor(_QUARTERS[:20].reshape(5, 4), dtype=m.float32, requires_grad=True),
                    m.tensor(_QUARTERS[:5], dtype=m.float32, requires_grad=True),
                )
            ),
        },
        spec,
    )


def test_matrix_times_batch_graph_like_torch(spec: str) -> None:
    same_each(
        {
            "matrix_by_batch": _product(
                lambda m: _two(m, _data(m, 3, 4), _data(m, 2, 4, 5, seed=1))
            ),
            "only_matrix_grad": _product(
                lambda m: _two(m, _data(m, 3, 4), _data(m, 2, 4, 5, seed=1, grad=False))
            ),
            "batch_of_one_by_batch": _product(
                lambda m: _two(m, _data(m, 1, 3, 4), _data(m, 2, 4, 5, seed=1))
            ),
        },
        spec,
    )


def test_vector_times_batch_graph_like_torch(spec: str) -> None:
    same(_product(lambda m: _two(m, _data(m, 4), _data(m, 2, 4, 5, seed=1))), spec)


def test_products_of_zero_inner_size_with_grad_like_torch(spec: str) -> None:
    def summed(make: Callable[[Any], tuple]) -> Program:
        def program(m: Any) -> Any:
            out, *operands = make(m)
            out.sum().backward()
            return out, [t.grad for t in operands]

        return program

    same_each(
        {
            "batch_by_matrix": summed(lambda m: _two(m, _data(m, 2, 3, 0), _data(m, 0, 5))),
            "batch_by_vector": summed(lambda m: _two(m, _data(m, 2, 3, 0), _data(m, 0))),
            "linear": summed(lambda m: _linear(m, _data(m, 2, 3, 0), _data(m, 5, 0))),
        },
        spec,
    )


@pytest.mark.parametrize(
    "case",
    [
        "3d_no_grad",
        "2d_no_grad",
    ],
)
def test_linear_with_bias_of_zero_in_features_numpy(case: str) -> None:
    def program(m: Any) -> Any:
        x = _data(m, 2, 3, 0, grad=False) if case == "3d_no_grad" else _data(m, 3, 0, grad=False)
        return m.nn.functional.linear(x, _data(m, 5, 0, grad=False), _data(m, 5, grad=False))

    same(program, "numpy")


def test_linear_with_bias_of_zero_in_features_backward_torch() -> None:
    def program(m: Any) -> Any:
        x, w, b = _data(m, 3, 0), _data(m, 5, 0), _data(m, 5, seed=2)
        m.nn.functional.linear(x, w, b).sum().backward()
        return x.grad, w.grad, b.grad

    same(program, "torch:cpu")


def test_linear_weight_transpose_name_like_torch(spec: str) -> None:
    same_each(
        {
            "vector_without_bias": lambda m: walk(
                m.nn.functional.linear(_data(m, 4), _data(m, 5, 4, seed=1)).grad_fn
            ),
            "bias_of_two_dimensions": lambda m: walk(
                m.nn.functional.linear(
                    _data(m, 2, 3, 4), _data(m, 5, 4, seed=1), _data(m, 3, 5, seed=2)
                ).grad_fn
            ),
        },
        spec,
    )


@_defect(
    "SILENT (names): the rows of a non-contiguous batch that a folded product reshapes are a "
    "ViewBackward0; torch's reshape records ReshapeAliasBackward0 where it can view them (a "
    "permuted batch) and UnsafeViewBackward0 of CloneBackward0 where it copies (F.linear of a "
    "transposed input; also Tensor.reshape's copy, which lacks the CloneBackward0). Cause: "
    "ops/linalg.py _folded (mv.reshape) and ops/movement.py reshape's copy. Fix: name the "
    "reshape's node as torch's: ReshapeAliasBackward0 for a strided view, "
    "UnsafeViewBackward0 over CloneBackward0 for a copy"
)
def test_reshape_of_strided_rows_names_like_torch(spec: str) -> None:
    same_each(
        {
            "permuted_batch_by_matrix": lambda m: walk(
                m.matmul(_data(m, 4, 2, 3).permute(1, 2, 0), _data(m, 4, 5, seed=1)).grad_fn, 4
            ),
            "linear_of_transposed_input": lambda m: walk(
                m.nn.functional.linear(
                    _data(m, 3, 2, 4).transpose(0, 1), _data(m, 5, 4, seed=1), _data(m, 5)
                ).grad_fn,
                4,
            ),
            "reshape_copy": lambda m: walk(
                _data(m, 3, 2, 4).transpose(0, 1).reshape(6, 4).grad_fn, 3
            ),
        },
        spec,
    )


@_defect(
    "SILENT (names, two levels down): BmmBackward0 of a product of two 3-D batches (also "
    "matrix_power of a batch) reaches the operands directly; torch's bmm takes each batch "
    "expanded and viewed (ViewBackward0 of ExpandBackward0), even where the batch sizes "
    "already agree. Cause: ops/linalg.py _folded's two-batch branch. Fix: the one the "
    "four-dimensional-batch xfail in tests/autograd_extras/test_linalg_hooks_session23.py "
    "proposes (expand both batches, reshape each to 3-D, view a labelled bmm back). Left: "
    "tried in session 24, the four extra nodes cost 12-35 us more per recorded 3-D @ 3-D "
    "product (attention's) on numpy and torch:cpu, 8-50x the 1 us allowed"
)
def test_two_batches_graph_like_torch(spec: str) -> None:
    same_each(
        {
            "matmul": lambda m: walk(
                m.matmul(_data(m, 2, 3, 4), _data(m, 2, 4, 5, seed=1)).grad_fn, 4
            ),
            "batches_of_one": lambda m: walk(
                m.matmul(_data(m, 1, 3, 4), _data(m, 1, 4, 5, seed=1)).grad_fn, 4
            ),
            "matrix_power_2": lambda m: walk(
                m.linalg.matrix_power(_data(m, 2, 3, 3), 2).grad_fn, 4
            ),
        },
        spec,
    )


def test_copy_backwards_like_torch(spec: str) -> None:
    def copied(m: Any) -> Any:
        y = m.zeros(3, dtype=m.float64)
        y.copy_(_data(m, 3))
        return y.grad_fn.name(), type(y.grad_fn).__name__

    same_each(
        {
            "matrix_power_0": _hooked(
                lambda m: (lambda a: (m.linalg.matrix_power(a, 0), a))(_data(m, 3, 3))
            ),
            "copy_": copied,
        },
        spec,
    )


def test_legacy_and_composite_linalg_nodes_like_torch(spec: str) -> None:
    same_each(
        {
            "cholesky": _hooked(lambda m: (lambda a: (m.cholesky(a), a))(_spd(m))),
            "triangular_solve": _hooked(
                lambda m: (lambda a, b: (m.triangular_solve(b, a)[0], a, b))(
                    _triangle(m, True), _data(m, 3, 2, seed=1)
                )
            ),
            "lstsq": _hooked(
                lambda m: (lambda a, b: (m.linalg.lstsq(a, b).solution, a, b))(
                    _data(m, 4, 3), _data(m, 4, 2, seed=1)
                )
            ),
            "cross": _hooked(
                lambda m: (lambda a, b: (m.linalg.cross(a, b), a, b))(
                    _data(m, 2, 3), _data(m, 2, 3, seed=1)
                )
            ),
        },
        spec,
    )


def test_unary_ops_of_sparse_gradient_stay_sparse() -> None:
    same_each(
        {
            "pow": lambda m: _kind(_grad(m).pow(2)),
            "abs": lambda m: _kind(_grad(m).abs()),
            "sqrt": lambda m: _kind(_grad(m).abs().sqrt()),
            "sign": lambda m: _kind(_grad(m).sign()),
            "square": lambda m: _kind(_grad(m).square()),
        },
        "numpy",
    )


def test_refusals_on_sparse_gradients_like_torch() -> None:
    same_each(
        {
            "divided_by_dense": lambda m: _grad(m) / m.full((6, 3), 2.0, dtype=m.float64),
            "add_dense_in_place": lambda m: _kind(_grad(m).add_(m.ones(6, 3, dtype=m.float64))),
            "hook_returns_dense": lambda m: _kind(_grad(m, hook=lambda g: g.to_dense())),
        },
        "numpy",
    )


def test_sparse_gradient_entries_like_torch() -> None:
    same_each(
        {
            "nnz": lambda m: _grad(m)._nnz(),
            "indices": lambda m: _grad(m)._indices(),
            "values": lambda m: _grad(m)._values(),
            "coalesced_indices": lambda m: _grad(m).coalesce().indices(),
            "coalesced_values": lambda m: _grad(m).coalesce().values(),
            "uncoalesced_indices": lambda m: _grad(m).indices(),
            "dims": lambda m: (_grad(m).sparse_dim(), _grad(m).dense_dim()),
        },
        "numpy",
    )


def test_optimizers_refuse_sparse_gradients_like_torch() -> None:
    names = ("Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "Adadelta", "ASGD")
    programs = {n: partial(_stepped, name=n, lr=0.1) for n in names}
    programs["SGD_weight_decay"] = lambda m: _stepped(m, "SGD", lr=0.1, weight_decay=0.1)
    programs["Adagrad_weight_decay"] = lambda m: _stepped(m, "Adagrad", lr=0.1, weight_decay=0.1)
    same_each(programs, "numpy")


def test_fused_node_hook_in_double_backward_torch() -> None:
    same(_hook_in_double_backward(lambda m, a: m.linalg.inv(a), False), "torch:cpu")


def test_copies_of_sparse_gradient_stay_sparse() -> None:
    def saved(m: Any) -> Any:
        buffer = io.BytesIO()
        m.save(_grad(m), buffer)
        buffer.seek(0)
        return _kind(m.load(buffer))

    same_each(
        {
            "data": lambda m: _kind(_grad(m).data),
            "deepcopy": lambda m: (lambda g: (_kind(g), g.is_coalesced()))(copy.deepcopy(_grad(m))),
            "save_load": saved,
        },
        "numpy",
    )
