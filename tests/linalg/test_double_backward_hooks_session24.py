"""A hook on a linalg call's node under double backward, as PyTorch 2.13 runs it: where
torch's gradient formula reads the call's output, the second backward passes the call's
node again (its hook runs twice). Each case: what the hook saw (whether each call's first
input gradient required grad) and A's gradient after grad(f(A).sum(), create_graph=True)
and a backward of the gradient's squared norm."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

Make = Callable[[Any, Any], Any]


def _spd(m: Any) -> Any:
    r = np.random.default_rng(0).standard_normal((3, 3))
    return m.tensor(r @ r.T + 3 * np.eye(3), dtype=m.float64, requires_grad=True)


def _seen_and_grad(m: Any, make: Make) -> tuple[list, np.ndarray]:
    a = _spd(m)
    y = make(m, a)
    seen: list = []
    y.grad_fn.register_hook(lambda gi, go: seen.append(gi[0].requires_grad))
    (g,) = m.autograd.grad(y.sum(), a, create_graph=True)
    g.pow(2).sum().backward()
    return seen, np.asarray(a.grad)


def _check(make: Make, spec: str) -> None:
    want_seen, want_grad = _seen_and_grad(torch, make)
    with entered(spec):
        got_seen, got_grad = _seen_and_grad(tw, make)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-9, atol=1e-12)
    assert got_seen == want_seen


INVERSES: dict[str, Make] = {
    "inv": lambda m, a: m.linalg.inv(a),
    "inv_ex": lambda m, a: m.linalg.inv_ex(a)[0],
    "inverse": lambda m, a: m.inverse(a),
}


@pytest.mark.parametrize("name", list(INVERSES))
@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_inverse_node_hook_in_double_backward_like_torch(name: str, spec: str) -> None:
    _check(INVERSES[name], spec)


_LEFT = (
    "SILENT (torch:cpu): the fused node's create_graph gradient is the core's decomposition "
    "recomputed on the inputs (linalg/fused_backward.py _through_reference, or one_node.py's "
    "_LinalgCall for several outputs), so a second backward never reaches the call's node "
    "and its hook runs once where torch's runs twice. Fix: give the call torch's formula on "
    "its own outputs (fused_or_reference's rule=, as solvers.py _inv_from_output)"
)

OTHERS: dict[str, Make] = {
    "cholesky": lambda m, a: m.linalg.cholesky(a),
    "pinv": lambda m, a: m.linalg.pinv(a),
}
#: Given torch's formula on their own outputs in session 34 (linalg/determinants.py
#: _det_from_output, linalg/solvers.py _SOLVE_RULES).
FORMULAS: dict[str, Make] = {
    "det": lambda m, a: m.linalg.det(a),
    "solve": lambda m, a: m.linalg.solve(a, m.ones(3, 2, dtype=m.float64)),
}


@pytest.mark.parametrize(
    "name",
    [
        "cholesky",  # (its factor's rule since session 36: linalg/fused_backward.py)
        pytest.param(
            "pinv", marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=_LEFT)
        ),
    ],
)
def test_other_fused_node_hooks_in_double_backward_torch(name: str) -> None:
    _check(OTHERS[name], "torch:cpu")


@pytest.mark.parametrize("name", list(FORMULAS))
def test_formula_node_hooks_in_double_backward_torch(name: str) -> None:
    _check(FORMULAS[name], "torch:cpu")


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_eigvalsh_node_hook_in_double_backward_like_torch(spec: str) -> None:
    """eigvalsh with a graph is eigh's node, whose formula runs on its outputs (session 32;
    before, torch:cpu's create_graph gradient was the decomposition recomputed)."""
    _check(lambda m, a: m.linalg.eigvalsh(a), spec)
