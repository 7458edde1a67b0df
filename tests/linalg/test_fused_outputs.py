"""A whole linalg function with several differentiable outputs (eigh's eigenvalues and
eigenvectors, svd's U, S and Vh, ...) on torch: one graph node for the call, whose backward
runs once with the gradients of all outputs (None for an unused one). Gradients equal
PyTorch's in float64, with any subset of the outputs used, run twice with ``retain_graph``,
differentiated twice, through hooks, and without the backend's primitive for it; and the
direct call of torch's node gives what torch's engine gives."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from linalg_reference import matrices, spd

S, A, TALL = spd((2, 4, 4)), matrices((2, 4, 4)), matrices((2, 5, 3))

#: name -> (the function on a library, its input): every function with several outputs.
CASES: dict[str, tuple[Callable[[Any, Any], tuple], np.ndarray]] = {
    "eigh": (lambda m, a: tuple(m.linalg.eigh(a)), S),
    "svd": (lambda m, a: tuple(m.linalg.svd(a, full_matrices=False)), TALL),
    "qr": (lambda m, a: tuple(m.linalg.qr(a)), TALL),
    "lu": (lambda m, a: tuple(m.linalg.lu(a))[1:], A),
}


def _weights(out: Any, i: int) -> np.ndarray:
    return np.random.default_rng(i).standard_normal(tuple(out.shape))


def _grads(m: Any, name: str, used: tuple, hook: bool = False) -> np.ndarray:
    fn, array = CASES[name]
    a = m.tensor(array, requires_grad=True)
    outs = fn(m, a)
    if hook:
        outs[0].register_hook(lambda g: g * 3)
    total = sum((outs[i] * m.tensor(_weights(outs[i], i))).sum() for i in used)
    total.backward()
    return np.asarray(a.grad.detach())


def _subsets(name: str) -> list[tuple]:
    n = 3 if name == "svd" else 2
    return [(i,) for i in range(n)] + [tuple(range(n))]


@pytest.mark.parametrize("name,used", [(name, used) for name in CASES for used in _subsets(name)])
def test_gradients_like_torch(name: str, used: tuple) -> None:
    with tw.device("torch:cpu"):
        ours = _grads(tw, name, used)
    np.testing.assert_allclose(ours, _grads(torch, name, used), rtol=1e-10, atol=1e-12)


def test_one_node_and_one_backward_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    with tw.device("torch:cpu"):
        backend_class = type(tw.tensor(S).backend)
        for method in ("fused_linalg_backward", "fused_linalg_outputs_backward"):
            original = getattr(backend_class, method)

            def counted(self: Any, *args: Any, _original: Any = original, _m: str = method) -> Any:
                calls.append(_m)
                return _original(self, *args)

            monkeypatch.setattr(backend_class, method, counted)
        a = tw.tensor(S, requires_grad=True)
        values, vectors = tw.linalg.eigh(a)
        assert values._node.parents == vectors._node.parents
        assert values.grad_fn.name() == vectors.grad_fn.name() == "LinalgEighBackward0"
        (values.sum() + vectors.sum()).backward()
    assert calls == ["fused_linalg_outputs_backward"]


def test_without_the_backends_primitive_one_node_per_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tensorweaver_torch.linalg import LinearAlgebra

    monkeypatch.delattr(LinearAlgebra, "fused_linalg_outputs_backward")
    with tw.device("torch:cpu"):
        values, vectors = tw.linalg.eigh(tw.tensor(S, requires_grad=True))
        # (still one node for the call: its rule sums each output's fused backward)
        assert values.grad_fn is vectors.grad_fn
        for name in CASES:
            ours = _grads(tw, name, _subsets(name)[-1])
            np.testing.assert_allclose(ours, _grads(torch, name, _subsets(name)[-1]), rtol=1e-10)


def test_retain_graph_runs_the_backward_twice() -> None:
    with tw.device("torch:cpu"):
        a = tw.tensor(S, requires_grad=True)
        outs = tw.linalg.eigh(a)
        total = sum((out * tw.tensor(_weights(out, i))).sum() for i, out in enumerate(outs))
        total.backward(retain_graph=True)
        once = np.asarray(a.grad).copy()
        total.backward()
        np.testing.assert_allclose(np.asarray(a.grad), 2 * once, rtol=1e-12)
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            total.backward()
    np.testing.assert_allclose(once, _grads(torch, "eigh", (0, 1)), rtol=1e-10)


def test_hooks_and_retained_gradients_of_the_outputs() -> None:
    with tw.device("torch:cpu"):
        ours = _grads(tw, "svd", (0, 1, 2), hook=True)
        a = tw.tensor(S, requires_grad=True)
        values, vectors = tw.linalg.eigh(a)
        values.retain_grad()
        (values * 2).sum().backward()
        np.testing.assert_array_equal(np.asarray(values.grad), np.full((2, 4), 2.0))
        # As in PyTorch, that freed the call's node for the other output too.
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            vectors.sum().backward()
        (g,) = tw.autograd.grad(tw.linalg.eigh(a)[1].sum(), [a])
    np.testing.assert_allclose(ours, _grads(torch, "svd", (0, 1, 2), hook=True), rtol=1e-10)
    t = torch.tensor(S, requires_grad=True)
    (expected,) = torch.autograd.grad(torch.linalg.eigh(t)[1].sum(), [t])
    np.testing.assert_allclose(np.asarray(g), expected.numpy(), rtol=1e-10)


@pytest.mark.parametrize("name", ["eigh", "qr"])
def test_double_backward_like_torch(name: str) -> None:
    fn, array = CASES[name]

    def second(m: Any) -> np.ndarray:
        a = m.tensor(array, requires_grad=True)
        outs = fn(m, a)
        total = sum((outs[i] * m.tensor(_weights(outs[i], i))).sum() for i in range(2))
        (g,) = m.autograd.grad(total, [a], create_graph=True)
        (g * m.tensor(_weights(g, 5))).sum().backward()
        return np.asarray(a.grad.detach())

    with tw.device("torch:cpu"):
        ours = second(tw)
    np.testing.assert_allclose(ours, second(torch), rtol=1e-8, atol=1e-10)


def _solve_grads(m: Any, need: tuple) -> list:
    a, b = (m.tensor(x, requires_grad=r) for x, r in zip((A, matrices((2, 4, 3), 1)), need))
    (m.linalg.solve(a, b) * m.tensor(_weights(b, 0))).sum().backward()
    return [None if t.grad is None else np.asarray(t.grad.detach()) for t in (a, b)]


@pytest.mark.parametrize("need", [(True, False), (False, True), (True, True)])
def test_only_the_inputs_that_need_a_gradient(need: tuple) -> None:
    with tw.device("torch:cpu"):
        ours = _solve_grads(tw, need)
    for mine, theirs in zip(ours, _solve_grads(torch, need)):
        assert (mine is None) == (theirs is None)
        if mine is not None:
            np.testing.assert_allclose(mine, theirs, rtol=1e-10)


@pytest.mark.parametrize("name", list(CASES))
def test_the_direct_node_call_gives_the_engines_gradients(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tensorweaver_torch import linalg as torch_linalg

    used = _subsets(name)[-1]
    with tw.device("torch:cpu"):
        direct = _grads(tw, name, used)
        monkeypatch.setattr(torch_linalg, "_call_node", lambda *args: None)
        engine = _grads(tw, name, used)
    np.testing.assert_array_equal(direct, engine)


def test_a_graph_that_is_not_one_callable_node_runs_the_engine() -> None:
    from tensorweaver_torch.linalg import _call_node

    class Doubled(torch.autograd.Function):  # its node cannot be called from Python
        @staticmethod
        def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
            return g * 2

    leaf = torch.tensor(A).requires_grad_()
    g = torch.ones_like(leaf)
    assert _call_node((Doubled.apply(leaf),), [leaf], (0,), (g,), (True,)) is None
    two_nodes = torch.linalg.inv(leaf).mT  # the transpose's node, then inv's
    assert _call_node((two_nodes,), [leaf], (0,), (g,), (True,)) is None
    one_node = torch.linalg.inv(leaf)
    (direct,) = _call_node((one_node,), [leaf], (0,), (g,), (True,))
    assert not direct.requires_grad and torch.is_grad_enabled()  # recorded nothing
    torch.testing.assert_close(direct, torch.autograd.grad(one_node, leaf, g)[0], rtol=0, atol=0)
