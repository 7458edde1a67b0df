"""Node hooks and ``next_functions`` as PyTorch 2.13's, case by case, with only the import
changed (twenty-first session, second wave).

Before: ``a.add(b, alpha=2)`` recorded ``add(a, mul(b, 2))`` (its hook saw b * 2's gradient,
its second backward raised, a complex alpha's gradient was not conjugated); nodes with a
Python-scalar operand (xlogy, remainder, copysign, pow...) listed it in ``next_functions``
and their hooks; ``remainder`` of two tensors was RemainderBackward0; composites listed their
last primitive's inputs in ``next_functions``; addcmul/addcdiv and batch/group norm with a
weight refused hooks; einsum's last view saw another shape than torch's.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered


@pytest.fixture(params=[*FAST, pytest.param("cunumeric", marks=pytest.mark.cunumeric)])
def spec(request: pytest.FixtureRequest) -> str:
    return request.param


def _seen(op: Callable[[Any, Any, Any], Any], replace: bool, edges: bool) -> Callable[[Any], Any]:
    """What a post-hook on ``op``'s node sees (the grad_inputs' shapes and values), the
    node's name and (with ``edges``) next_functions' names, and the leaves' gradients after
    the pass (with ``replace``, the hook returns every grad_input times 3)."""

    def program(m: Any) -> Any:
        a = m.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=m.float64, requires_grad=True)
        b = m.tensor([[1.0, 2.0, -0.5], [0.3, -0.2, 0.9]], dtype=m.float64, requires_grad=True)
        out = op(m, a, b)
        seen: list = []

        def hook(gi: tuple, go: tuple) -> Any:
            seen.append([None if g is None else _plain(g) for g in gi])
            return tuple(None if g is None else g * 3 for g in gi) if replace else None

        out.grad_fn.register_hook(hook)
        nexts = [None if f is None else f.name() for f, _ in out.grad_fn.next_functions]
        nexts = nexts if edges else None
        weights = m.arange(1.0, out.numel() + 1.0, dtype=m.float64).reshape(out.shape)
        (out * weights).sum().backward()
        grads = [None if t.grad is None else _plain(t.grad) for t in (a, b)]
        return out.grad_fn.name(), nexts, seen, grads

    return program


def _plain(t: Any) -> tuple:
    return tuple(t.shape), np.round(np.asarray(t.detach().tolist(), dtype=complex), 9).tolist()


def _same(program: Callable[[Any], Any], spec: str) -> None:
    want = program(torch)
    with entered(spec):
        assert program(tw) == want


def _f(m: Any) -> Any:
    return m.nn.functional


#: name -> op(m, a, b) of the two (2, 3) leaves a and b.
CASES: dict[str, Callable[[Any, Any, Any], Any]] = {
    "add_alpha": lambda m, a, b: a.add(b, alpha=2),
    "sub_alpha": lambda m, a, b: m.sub(a, b, alpha=-0.5),
    "sub_alpha_of_0d": lambda m, a, b: m.sub(m.tensor(1.5, dtype=m.float64), a, alpha=2),
    "sub_of_0d": lambda m, a, b: m.sub(m.tensor(1.5, dtype=m.float64), a),
    "xlogy_number_other": lambda m, a, b: m.xlogy(a, 2.0),
    "xlogy_number_self": lambda m, a, b: m.xlogy(2.0, b),
    "xlog1py_number_other": lambda m, a, b: m.special.xlog1py(a, 2.0),
    "remainder_number": lambda m, a, b: m.remainder(a, 0.7),
    "remainder_tensors": lambda m, a, b: m.remainder(a, b),
    "fmod_number": lambda m, a, b: m.fmod(a, 0.7),
    "copysign_number": lambda m, a, b: m.copysign(a, 2.0),
    "zeta_number_x": lambda m, a, b: m.special.zeta(2.0, b.abs() + 1),
    "pow_number_exponent": lambda m, a, b: m.pow(b.abs(), 2.5),
    "where": lambda m, a, b: m.where(a > 0, a, b),
    "gelu": lambda m, a, b: _f(m).gelu(a * 1),
    "addcmul": lambda m, a, b: m.addcmul(a, b, a * 1, value=0.5),
    "addcdiv": lambda m, a, b: m.addcdiv(a, b, a * 1 + 3),
    "normalize": lambda m, a, b: _f(m).normalize(a),
    "batch_norm": lambda m, a, b: _f(m).batch_norm(a, None, None, training=True),
    "batch_norm_affine": lambda m, a, b: _f(m).batch_norm(a, None, None, b[0], b[1], True),
    "group_norm_affine": lambda m, a, b: _f(m).group_norm(
        a.reshape(1, 2, 3), 1, b[0, :2], b[1, :2]
    ),
    "einsum_ij_ij_i": lambda m, a, b: m.einsum("ij,ij->i", a, b),
    "einsum_ij_kj_ki": lambda m, a, b: m.einsum("ij,kj->ki", a, b),
    "einsum_three": lambda m, a, b: m.einsum("ij,kj,kl->il", a, b, b * 1),
    "einsum_all_summed": lambda m, a, b: m.einsum("ij,kl->", a, b),
}


#: Cases whose hook also replaces what it sees (each a different way the engine runs it).
REPLACED = ("add_alpha", "xlogy_number_self", "addcmul", "group_norm_affine", "einsum_three")


@pytest.mark.parametrize(
    ("case", "replace"), [(c, False) for c in CASES] + [(c, True) for c in REPLACED]
)
def test_node_hook_and_edges_like_torch(spec: str, case: str, replace: bool) -> None:
    if spec == "cunumeric" and (replace or not case.startswith(("add", "xlogy", "einsum_ij_ij"))):
        pytest.skip("a few cheap cases on cuPyNumeric")
    # (einsum's last view is torch's, the nodes before it are not: a permute there)
    edges = not case.startswith("einsum")
    _same(_seen(CASES[case], replace, edges), spec)


def test_composite_next_functions_like_torch(spec: str) -> None:
    def program(m: Any) -> Any:
        a = m.tensor([0.5, -1.0], dtype=m.float64, requires_grad=True)
        return [f.name() for f, _ in _f(m).gelu(a).grad_fn.next_functions]

    _same(program, spec)


@pytest.mark.parametrize("stats", [True, False], ids=["input_stats", "running_stats"])
def test_instance_norm_hook_sees_its_last_view_like_torch(stats: bool) -> None:
    """On NumPy, whose instance norm is the decomposition (a fused one, as on the torch
    backend, refuses the hook: its node is one step of torch's op)."""

    def op(m: Any, a: Any, b: Any) -> Any:
        running = (
            (None, None) if stats else (m.zeros(2, dtype=m.float64), m.ones(2, dtype=m.float64))
        )
        return _f(m).instance_norm(a.reshape(1, 2, 3), *running, b[0, :2], b[1, :2], stats)

    # (torch's view is of its batch norm's node: next_functions differ in name only)
    _same(_seen(op, replace=True, edges=False), "numpy")


@pytest.mark.parametrize("name", ["add", "sub"])
def test_complex_alpha_gradient_and_second_backward_like_torch(spec: str, name: str) -> None:
    def program(m: Any) -> Any:
        a = m.tensor([1.0 + 1j, 2.0], requires_grad=True)
        b = m.tensor([0.5 - 1j, -2.0j], requires_grad=True)
        y = getattr(m, name)(a, b, alpha=2j)
        loss = (y * m.tensor([1 + 2j, 3 - 1j])).real.sum()
        loss.backward(retain_graph=True)
        loss.backward()  # (the node saves only the number alpha, as torch's)
        return _plain(a.grad), _plain(b.grad)

    _same(program, spec)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_alpha_gradient_like_torch(spec: str, dtype: str) -> None:
    rng = np.random.default_rng(0)
    x, v, w = rng.normal(size=(4, 40)), rng.normal(size=40), rng.normal(size=(4, 40))

    def program(m: Any) -> Any:
        half = getattr(m, dtype)
        a = m.tensor(x, dtype=half, requires_grad=True)
        b = m.tensor(v, dtype=half, requires_grad=True)
        (a.sub(b, alpha=0.1) * m.tensor(w, dtype=half)).sum().backward()
        return a.grad.float().tolist(), b.grad.float().tolist()

    if spec != "torch:cpu" and dtype == "bfloat16":
        pytest.skip("NumPy and cuPyNumeric have no bfloat16")
    _same(program, spec)
