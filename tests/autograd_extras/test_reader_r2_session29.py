"""Reader r2's findings (session 29), each a strict xfail compared with torch 2.13."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
from snippet_outcomes import same, walk

SPECS = ["numpy", "torch:cpu"]


def _leaf(m: Any, values: Any) -> Any:
    return m.tensor(values, dtype=m.float64, requires_grad=True)


@pytest.mark.parametrize("spec", SPECS)
def test_prod_keepdim_next_functions(spec: str) -> None:
    def program(m: Any) -> Any:
        x, y = _leaf(m, [1.0, 2.0]), _leaf(m, [[1.0, 2.0], [3.0, 4.0]])
        return (
            walk(x.prod(0, keepdim=True).grad_fn, 2),
            walk((y.prod(0, keepdim=True) * 2).grad_fn, 3),
        )

    same(program, spec)


@pytest.mark.parametrize("spec", SPECS)
def test_fused_linalg_create_graph_input_depending_on_another(spec: str) -> None:
    def program(m: Any) -> Any:
        x = _leaf(m, [[4.0, 1.0], [2.0, 3.0]])
        solved = m.linalg.solve(x, x.sum(-1, keepdim=True)).sum()
        triangular = m.linalg.solve_triangular(x.triu(), x, upper=True).sum()
        return [m.autograd.grad(y, x, create_graph=True)[0] for y in (solved, triangular)]

    same(program, spec)


def test_fit_clips_sparse_gradients_as_dense_ones() -> None:
    def trained(sparse: bool) -> list:
        tw.manual_seed(0)
        model = tw.nn.Sequential(
            tw.nn.Embedding(10, 4, sparse=sparse), tw.nn.Flatten(), tw.nn.Linear(8, 3)
        )
        with tw.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_(tw.arange(p.numel(), dtype=p.dtype).reshape(p.shape).sin() * (i + 1))
        x = tw.arange(32).reshape(16, 2) % 10
        y = tw.arange(16) % 3
        tw.fit(model, (x, y), optimizer="sgd", clip=0.5, batch_size=16, lr=0.1,
               progress=False, shuffle=False)  # fmt: skip
        return [p.detach().tolist() for p in model.parameters()]

    assert _close(trained(True), trained(False))


def _close(a: Any, b: Any) -> bool:
    return all(np.allclose(np.asarray(u), np.asarray(v)) for u, v in zip(a, b))


@pytest.mark.parametrize("spec", SPECS)
def test_solve_reads_a_data_written_result(spec: str) -> None:
    def program(m: Any) -> Any:
        a = _leaf(m, [[4.0, 1.0], [2.0, 3.0]])
        x = m.linalg.solve(a, m.ones(2, dtype=m.float64))
        x.data.mul_(2)
        x.sum().backward()
        return a.grad

    same(program, spec)


@pytest.mark.parametrize("spec", SPECS)
def test_prod_gradient_with_a_zero_and_an_infinity(spec: str) -> None:
    # PyTorch's prod_safe_zeros_backward (the product of the others: 0 * inf is NaN), and its
    # whole-tensor rule's 0 where two or more elements are 0 (first order only)
    inf = float("inf")
    rows = [[0.0, inf, 2.0], [0.0, 0.0, inf], [0.0, 0.0, 2.0], [0.0, inf, inf], [3.0, 0.0, 2.0]]

    def program(m: Any) -> Any:
        found = []
        for row in rows:
            x = _leaf(m, row)
            x.prod().backward()
            y = _leaf(m, [row, row[::-1]])
            y.prod(1).sum().backward()
            z = _leaf(m, row)
            (first,) = m.autograd.grad(z.prod(), z, create_graph=True)
            found += [x.grad, y.grad, first]
        return found

    same(program, spec)
