"""Node hooks and graph shape as torch 2.13's, round 2 (twenty-second session), float64,
each program run on tensorweaver and on torch with only the module changed.

Before: a hook on var_mean/std_mean/aminmax's first output saw only that output's gradient
(SILENT: zeroing it left the other output's part in the input's gradient); lerp's hook was
refused (its label named only ``input``); addmm/addmv/addr/baddbmm/addbmm listed and hooked
(mat1, mat2, input) where torch has (input, mat1, mat2); a fused cross-entropy or instance
norm refused a node hook; an unbatched cross-entropy showed an extra
UnsqueezeBackward0; ``next_functions`` was empty once backward had run.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered


def _data(m: Any, *shape: int, seed: int) -> Any:
    values = np.random.default_rng(seed).standard_normal(shape)
    return m.tensor(values, dtype=m.float64, requires_grad=True)


def _plain(t: Any) -> Any:
    if t is None:
        return None
    return tuple(t.shape), np.round(np.asarray(t.detach().tolist()), 9).tolist()


def _same(program: Callable[[Any], Any], spec: str) -> None:
    with entered(spec):
        ours = program(tw)
    assert ours == program(torch)


def _tree(fn: Any) -> Any:
    return None if fn is None else [fn.name(), [_tree(f) for f, _ in fn.next_functions]]


TWO_OUTPUTS = {
    "var_mean": lambda m, x: m.var_mean(x, dim=1),
    "var_mean_all_keepdim": lambda m, x: m.var_mean(x, dim=(0, 1), keepdim=True),
    "std_mean": lambda m, x: m.std_mean(x, dim=0, correction=0),
    "aminmax": lambda m, x: m.aminmax(x, dim=1),
    "aminmax_all": lambda m, x: m.aminmax(x),
}


@pytest.mark.parametrize("replace", [False, True], ids=["seen", "replaced"])
@pytest.mark.parametrize("case", list(TWO_OUTPUTS))
def test_two_output_op_is_one_node_like_torch(spec: str, case: str, replace: bool) -> None:
    def program(m: Any) -> Any:
        x = _data(m, 3, 4, seed=0)
        first, second = TWO_OUTPUTS[case](m, x)
        seen: list = []

        def hook(grad_inputs: tuple, grad_outputs: tuple) -> Any:
            seen.append(([_plain(g) for g in grad_inputs], [_plain(g) for g in grad_outputs]))
            return tuple(g * 3 for g in grad_inputs) if replace else None

        first.grad_fn.register_hook(hook)
        (first * 2 + second).sum().backward()
        return first.grad_fn.name(), first.grad_fn is second.grad_fn, seen, _plain(x.grad)

    _same(program, spec)


@pytest.mark.parametrize("case", ["var_mean", "std_mean", "aminmax"])
def test_two_output_op_one_output_used_like_torch(case: str) -> None:
    """grad_outputs has None for the unused output; the other's gradient alone reaches x."""

    def program(m: Any) -> Any:
        x = _data(m, 3, 4, seed=1)
        first, second = TWO_OUTPUTS[case](m, x)
        seen: list = []
        first.grad_fn.register_prehook(lambda go: seen.append([g is None for g in go]))
        second.sum().backward()
        return seen, _plain(x.grad)

    _same(program, "numpy")


@pytest.mark.parametrize("case", ["var_mean", "std_mean", "aminmax"])
def test_two_output_op_double_backward_like_torch(case: str) -> None:
    def program(m: Any) -> Any:
        x = _data(m, 3, 4, seed=2)
        first, second = TWO_OUTPUTS[case](m, x)
        (g,) = m.autograd.grad((first * first * 3 + second * second).sum(), x, create_graph=True)
        (g * g).sum().backward()
        return _plain(x.grad)

    _same(program, "numpy")


def _outcome(run: Callable[[], Any]) -> Any:
    try:
        return run()
    except RuntimeError:
        return "RuntimeError"


@pytest.mark.parametrize("case", ["var_mean", "std_mean", "aminmax"])
def test_two_output_op_saved_input_like_torch(case: str) -> None:
    """Both save the input: changed in place before backward, or a second backward, raise."""

    def program(m: Any) -> Any:
        x = _data(m, 3, 4, seed=3)
        y = x * 1
        first, second = TWO_OUTPUTS[case](m, y)
        loss = (first + second).sum()
        loss.backward(retain_graph=True)
        again = _outcome(lambda: loss.backward())
        z = x * 1
        first, second = TWO_OUTPUTS[case](m, z)
        with m.no_grad():
            z.mul_(2)
        changed = _outcome(lambda: (first + second).sum().backward())
        return again, changed

    _same(program, "numpy")


LERPS = {
    "number": lambda m, a, b: m.lerp(a, b, 0.3),
    "number_far": lambda m, a, b: m.lerp(a, b, 0.8),
    "tensor": lambda m, a, b: m.lerp(a, b, (a * b).sigmoid()),
}


@pytest.mark.parametrize("case", list(LERPS))
def test_lerp_hook_sees_every_operand_like_torch(spec: str, case: str) -> None:
    def program(m: Any) -> Any:
        a, b = _data(m, 2, 3, seed=4), _data(m, 2, 3, seed=5)
        out = LERPS[case](m, a, b)
        seen: list = []

        def hook(grad_inputs: tuple, grad_outputs: tuple) -> tuple:
            seen.append([_plain(g) for g in grad_inputs])
            return tuple(None if g is None else g * 2 for g in grad_inputs)

        out.grad_fn.register_hook(hook)
        nexts = [None if f is None else f.name() for f, _ in out.grad_fn.next_functions]
        (out * out).sum().backward()
        return nexts, seen, _plain(a.grad), _plain(b.grad)

    _same(program, spec)


PRODUCTS = {
    "addmm": lambda m, i, p, q: m.addmm(i, p, q),
    "addmv": lambda m, i, p, q: m.addmv(i[0], p, q[:, 0]),
    "addr": lambda m, i, p, q: m.addr(i, p[:, 0], q[0]),
    "baddbmm": lambda m, i, p, q: m.baddbmm(i, p.unsqueeze(0), q.unsqueeze(0)),
    "addbmm": lambda m, i, p, q: m.addbmm(i, p.unsqueeze(0), q.unsqueeze(0)),
}


@pytest.mark.parametrize("case", list(PRODUCTS))
def test_accumulating_product_operands_in_torch_order(spec: str, case: str) -> None:
    def program(m: Any) -> Any:
        i, p, q = _data(m, 3, 3, seed=6), _data(m, 3, 2, seed=7), _data(m, 2, 3, seed=8)
        out = PRODUCTS[case](m, i.exp(), p.sin(), q.cos())  # (three distinct producers)
        seen: list = []

        def hook(grad_inputs: tuple, grad_outputs: tuple) -> tuple:
            seen.append([_plain(g) for g in grad_inputs])
            return (grad_inputs[0] * 5, *grad_inputs[1:])

        out.grad_fn.register_hook(hook)
        nexts = [f.name() for f, _ in out.grad_fn.next_functions]
        out.sum().backward()
        return nexts, seen, [_plain(t.grad) for t in (i, p, q)]

    _same(program, spec)


FUSED_LAST_STEPS = {
    "cross_entropy": lambda m, x: m.nn.functional.cross_entropy(x, m.tensor([2, 0, 1, 1])),
    "cross_entropy_ignored": lambda m, x: m.nn.functional.cross_entropy(
        x, m.tensor([2, 0, 1, 1]), ignore_index=0
    ),
    "cross_entropy_3d": lambda m, x: m.nn.functional.cross_entropy(
        x.reshape(2, 3, 2), m.tensor([[2, 0], [1, 1]])
    ),
    "cross_entropy_unbatched": lambda m, x: m.nn.functional.cross_entropy(x[0], m.tensor(1)),
    "instance_norm": lambda m, x: m.nn.functional.instance_norm(x.reshape(2, 2, 3)),
}


@pytest.mark.parametrize("replace", [False, True], ids=["seen", "replaced"])
@pytest.mark.parametrize("case", list(FUSED_LAST_STEPS))
def test_fused_op_hook_on_torch_s_last_step(spec: str, case: str, replace: bool) -> None:
    def program(m: Any) -> Any:
        x = _data(m, 4, 3, seed=9)
        out = FUSED_LAST_STEPS[case](m, x)
        seen: list = []

        def hook(grad_inputs: tuple, grad_outputs: tuple) -> Any:
            seen.append([_plain(g) for g in grad_inputs])
            return tuple(g * 3 for g in grad_inputs) if replace else None

        out.grad_fn.register_hook(hook)
        weights = m.arange(1.0, out.numel() + 1.0, dtype=m.float64).reshape(out.shape)
        (out * weights).sum().backward()
        return out.grad_fn.name(), seen, _plain(x.grad)

    _same(program, spec)


GRAPHS = {
    "mul": lambda m, a, b: a * b,
    "gelu": lambda m, a, b: m.nn.functional.gelu(a.exp()),
    "mse_loss": lambda m, a, b: m.nn.functional.mse_loss(a, b.sin()),
    "linear": lambda m, a, b: m.nn.functional.linear(a, b, b[0]),
    "linear_batched": lambda m, a, b: m.nn.functional.linear(a.reshape(3, 1, 3), b, b[1]),
    "cross_entropy": lambda m, a, b: m.nn.functional.cross_entropy(a, m.tensor([0, 2, 1])),
    "var_mean": lambda m, a, b: m.var_mean(a * b, 1)[1],
    "unbind": lambda m, a, b: a.unbind(0)[1],
    "lerp": lambda m, a, b: m.lerp(a, b, a.detach()),
}


@pytest.mark.parametrize("case", list(GRAPHS))
def test_next_functions_kept_after_backward(spec: str, case: str) -> None:
    def program(m: Any) -> Any:
        a, b = _data(m, 3, 3, seed=10), _data(m, 3, 3, seed=11)
        out = GRAPHS[case](m, a, b)
        before = _tree(out.grad_fn)
        out.sum().backward()
        return before, _tree(out.grad_fn)

    _same(program, spec)


def test_backward_frees_saved_tensors_but_keeps_the_graph() -> None:
    """As torch's: the intermediates a node saved go with backward; its edges stay."""
    # Objects made before are frozen: the collection walks only this test's (a whole
    # collection of a worker's heap late in the suite costs seconds).
    gc.freeze()
    try:
        x = tw.tensor(np.arange(6.0).reshape(2, 3), dtype=tw.float64, requires_grad=True)
        h = x.exp()
        g = h.sin()
        kept = weakref.ref(h), weakref.ref(g)
        out = (g * h).sum()
        del h, g
        out.backward()
        gc.collect()
    finally:
        gc.unfreeze()
    assert [k() for k in kept] == [None, None]
    assert _tree(out.grad_fn)[1][0][0] == "MulBackward0"
    with pytest.raises(RuntimeError):
        out.backward()
