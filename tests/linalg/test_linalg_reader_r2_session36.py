"""Reader r2, session 36: a linalg input rebound for one backward leaves other records alone;
what inv/cholesky and sign pack under saved_tensors_hooks, against torch 2.13."""

from __future__ import annotations

import pytest
from snippet_outcomes import same

A0 = [[2.0, 0.5, 0.1], [0.3, 3.0, 0.2], [0.1, 0.4, 1.5]]


@pytest.mark.parametrize("fn", ["pinv", "matrix_exp", "lstsq"])
def test_rebind_leaves_an_alias_call_alone(fn: str) -> None:
    def program(m):
        a = m.tensor(A0, dtype=m.float64, requires_grad=True)
        b = a.detach().requires_grad_()  # (the same array on tw's torch:cpu)
        call = {
            "pinv": lambda t: m.linalg.pinv(t),
            "matrix_exp": lambda t: m.linalg.matrix_exp(t),
            "lstsq": lambda t: m.linalg.lstsq(t, m.ones(3, 2, dtype=m.float64)).solution,
        }[fn]
        y_b = call(b).sum()
        y_a = call(a).sum()
        a.data = a.data * 2
        y_a.backward()  # (rebinds a's input: must leave b's call reading b)
        y_b.backward()
        return b.grad  # (a.grad: wave 1's own tests)

    same(program, "torch:cpu")


def _packed(m, op):
    seen = []

    def pack(t):
        seen.append(t.detach().clone())  # (its values: which tensor it is)
        return t

    a = m.tensor(A0, dtype=m.float64, requires_grad=True)
    with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        op(m, a)
    return tuple(seen)


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
@pytest.mark.parametrize("fn", ["inv", "inv_ex", "cholesky", "cholesky_ex"])
def test_inv_cholesky_pack_the_result_alone(spec: str, fn: str) -> None:
    same(
        lambda m: _packed(m, lambda m, a: getattr(m.linalg, fn)(a @ a.mT if "chol" in fn else a)),
        spec,
    )


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_sign_packs_nothing(spec: str) -> None:
    def program(m):
        x = m.tensor([-1.5, 0.5, 2.0], dtype=m.float64, requires_grad=True)
        with m.autograd.graph.saved_tensors_hooks(lambda t: t * 1, lambda t: t):
            y = x.abs()
            (g,) = m.autograd.grad(y.sum(), x, create_graph=True)
        return g, _packed(m, lambda m, a: a.sign())

    same(program, spec)
