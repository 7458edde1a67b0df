"""Whole linalg functions as one backend call (``linalg_function``, on torch): the same values
and gradients as the core's own composition of the primitives (``reference_only``), one node
per call, no graph without grad; and ``tril``/``triu`` as primitives, with
the core's mask where a backend has none."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from linalg_reference import matrices, spd
from tensorweaver.ops.fusion import reference_only

A, S, B = matrices((2, 4, 4)), spd((2, 4, 4)), matrices((2, 4, 3), 1)
TALL, TAU = matrices((2, 5, 3)), np.random.default_rng(2).uniform(0.5, 1.5, (2, 3))

#: name -> (function of the tensors, its inputs): every function the torch backend computes
#: whole, in the argument variants the core handles differently.
CASES: dict[str, tuple[Callable[..., Any], tuple]] = {
    "cholesky": (lambda s: tw.linalg.cholesky(s), (S,)),
    "cholesky upper": (lambda s: tw.linalg.cholesky(s, upper=True), (S,)),
    "solve": (lambda a, b: tw.linalg.solve(a, b), (A, B)),
    "solve vector": (lambda a, b: tw.linalg.solve(a, b[..., 0]), (A, B)),
    "solve right": (lambda a, b: tw.linalg.solve(a, b.mT, left=False), (A, B)),
    "inv": (lambda a: tw.linalg.inv(a), (A,)),
    "det": (lambda a: tw.linalg.det(a), (A,)),
    "slogdet": (lambda a: tuple(tw.linalg.slogdet(a)), (A,)),
    "logdet": (lambda s: tw.logdet(s), (S,)),
    "eigh": (lambda s: tuple(tw.linalg.eigh(s, UPLO="U")), (S,)),
    "eigvalsh": (lambda s: tw.linalg.eigvalsh(s), (S,)),
    "svd": (lambda a: tuple(tw.linalg.svd(a, full_matrices=False)), (TALL,)),
    "svdvals": (lambda a: tw.linalg.svdvals(a), (TALL,)),
    "qr": (lambda a: tuple(tw.linalg.qr(a)), (TALL,)),
    "solve_triangular": (lambda a, b: tw.linalg.solve_triangular(a, b, upper=True), (A, B)),
    "solve_triangular unit right": (
        lambda a, b: tw.linalg.solve_triangular(
            a, b.mT, upper=False, left=False, unitriangular=True
        ),
        (A, B),
    ),
    "cholesky_solve": (lambda b, s: tw.cholesky_solve(b, tw.linalg.cholesky(s)), (B, S)),
    "lu_factor": (lambda a: tw.linalg.lu_factor(a).LU, (A,)),
    "lu": (lambda a: tuple(tw.linalg.lu(a)), (A,)),
    "lu_solve adjoint": (
        lambda a, b: tw.linalg.lu_solve(*tw.linalg.lu_factor(a), b, adjoint=True),
        (A, B),
    ),
    "householder_product": (lambda a, tau: tw.linalg.householder_product(a, tau), (TALL, TAU)),
    "pinv": (lambda a: tw.linalg.pinv(a, rtol=1e-3), (TALL,)),
    "matrix_exp": (lambda a: tw.linalg.matrix_exp(a / 4), (A,)),
}


def _run(fn: Callable[..., Any], arrays: tuple) -> tuple[list, list]:
    """The outputs and the gradients of a random weighting of the float ones."""
    leaves = [tw.tensor(a, requires_grad=True) for a in arrays]
    outs = fn(*leaves)
    outs = outs if isinstance(outs, tuple) else (outs,)
    total = 0
    for i, out in enumerate(outs):
        if out.requires_grad:
            weights = np.random.default_rng(i).standard_normal(tuple(out.shape))
            total = total + (out * tw.tensor(weights)).sum()
    total.backward()
    values = [np.asarray(out.detach()) for out in outs]
    return values, [np.asarray(t.grad) for t in leaves]


@pytest.mark.parametrize("name", list(CASES))
def test_fused_matches_the_core_composition(name: str) -> None:
    fn, arrays = CASES[name]
    with tw.device("torch:cpu"):
        fused = _run(fn, arrays)
        with reference_only():
            composed = _run(fn, arrays)
    for ours, theirs in zip(fused[0] + fused[1], composed[0] + composed[1]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["solve", "eigh", "qr"])
def test_fused_backward_without_torchs_private_engine_call(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where torch's node cannot be called directly, the replay uses torch's private engine
    # entry where it exists; a torch without it gets the public torch.autograd.grad, with
    # the same gradients.
    from tensorweaver_torch import linalg as torch_linalg

    fn, arrays = CASES[name]
    monkeypatch.setattr(torch_linalg, "_call_node", lambda *args: None)
    with tw.device("torch:cpu"):
        private = _run(fn, arrays)
        monkeypatch.setattr(torch_linalg, "_engine_run_backward", None)
        public = _run(fn, arrays)
    for ours, theirs in zip(private[1], public[1]):
        np.testing.assert_array_equal(ours, theirs)


def test_one_fused_node_per_call() -> None:
    with tw.device("torch:cpu"):
        a = tw.tensor(A, requires_grad=True)
        values, vectors = tw.linalg.eigh(a)
        factor, info = tw.linalg.cholesky_ex(tw.tensor(S, requires_grad=True))
        assert factor._node.op == "linalg_function" and not info.requires_grad
        # Several differentiable outputs: a node each, handing on to one node for the call
        # (PyTorch's one node: both outputs' grad_fn, linalg/one_node.py).
        assert values._node.op == vectors._node.op == "function"
        assert values._node is not vectors._node
        assert values._node.parents == vectors._node.parents
        assert values.grad_fn is vectors.grad_fn is values._node.parents[0].view
        with reference_only():
            assert tw.linalg.inv(a)._node.op != "linalg_function"
        with tw.no_grad():
            assert not tw.linalg.inv(a).requires_grad


def test_a_fused_backward_runs_twice_with_retain_graph() -> None:
    with tw.device("torch:cpu"):
        a = tw.tensor(A, requires_grad=True)
        y = tw.linalg.inv(a).sum()
        y.backward(retain_graph=True)
        once = np.asarray(a.grad).copy()
        y.backward()
        np.testing.assert_allclose(np.asarray(a.grad), 2 * once)
        t = torch.tensor(A, requires_grad=True)
        torch.linalg.inv(t).sum().backward()
        np.testing.assert_allclose(once, t.grad.numpy(), rtol=1e-10)


TRIANGLE_CASES = [(k, dtype) for k in (-5, -1, 0, 2, 6) for dtype in ("float64", "int64", "bool")]


def _triangles_like_torch(k: int, dtype: str) -> None:
    x = np.random.default_rng(0).standard_normal((2, 4, 5))
    for name in ("tril", "triu"):
        theirs = getattr(torch, name)(torch.tensor(x).to(getattr(torch, dtype)), k)
        ours = getattr(tw, name)(tw.tensor(x).to(getattr(tw, dtype)), k)
        assert ours.dtype is getattr(tw, dtype)
        np.testing.assert_array_equal(np.asarray(ours), theirs.numpy())
        if dtype == "float64":
            t, leaf = tw.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
            weights = np.random.default_rng(1).standard_normal(x.shape)
            (getattr(tw, name)(t, k) * tw.tensor(weights)).sum().backward()
            (getattr(torch, name)(leaf, k) * torch.tensor(weights)).sum().backward()
            np.testing.assert_array_equal(np.asarray(t.grad), leaf.grad.numpy())


@pytest.mark.cunumeric
@pytest.mark.parametrize("k", [-1, 0, 2])
def test_tril_triu_like_torch_cheap(backend: str, k: int) -> None:
    _triangles_like_torch(k, "float64")


@pytest.mark.parametrize(("k", "dtype"), TRIANGLE_CASES)
def test_tril_triu_like_torch(backend: str, k: int, dtype: str) -> None:
    _triangles_like_torch(k, dtype)


@pytest.mark.parametrize(("k", "dtype"), TRIANGLE_CASES)
def test_tril_triu_without_the_primitive(
    backend: str, k: int, dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backend without tril/triu gets the core's mask, with the same values."""
    native = tw.zeros(1).backend
    monkeypatch.setattr(native, "tril", None, raising=False)
    monkeypatch.setattr(native, "triu", None, raising=False)
    _triangles_like_torch(k, dtype)
