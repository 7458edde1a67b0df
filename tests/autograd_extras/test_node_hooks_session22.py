"""Node hooks and ``next_functions`` of composite ops with optional operands, as torch 2.13's
(twenty-second session), with only the import changed, in float64.

Before: a node hook on ``F.layer_norm(x, shape, weight=None, bias=b)`` saw ``(gx, gb)``, the
bias's gradient in the weight's slot (the fused path dropped the absent operand; torch's hook
sees ``(gx, None, gb)``); a convolution without a bias saw two gradients, one with a bias
refused the hook; group/batch norm's ``next_functions`` were their last primitive's inputs
(``MulBackward0``, ``ViewBackward0``) where torch's node lists (input, weight, bias), None for
an absent one; a ``tw.compile`` replay's result listed those inner nodes too; a fused
linear listed (input, weight, bias) where torch's AddmmBackward0 has (bias, input,
TBackward0 of the weight); on the core's decompositions (cuPyNumeric) a hook on linear's
AddmmBackward0 saw (input, weight, bias) and one on cross-entropy's NllLossBackward0 the
logits' gradient, where torch's see (bias, input, weight.t()) and the log-probabilities'.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver.compiler import CompileWarning
from tensorweaver.ops.fusion import reference_only
from tw_backends import entered


def _data(m: Any, *shape: int, seed: int) -> Any:
    values = np.random.default_rng(seed).standard_normal(shape)
    return m.tensor(values, dtype=m.float64, requires_grad=True)


#: ``(m, x, w, b) -> output``: x is (2, 3, 4); w and b have 4 elements (3 for a channel's).
CASES: dict[str, Callable[..., Any]] = {
    "layer_norm_bias_only": lambda m, x, w, b: m.nn.functional.layer_norm(x, (4,), None, b),
    "layer_norm_weight_only": lambda m, x, w, b: m.nn.functional.layer_norm(x, (4,), w, None),
    "layer_norm_plain": lambda m, x, w, b: m.nn.functional.layer_norm(x, (4,)),
    "layer_norm_affine": lambda m, x, w, b: m.nn.functional.layer_norm(x, (4,), w, b),
    "group_norm_weight_only": lambda m, x, w, b: m.nn.functional.group_norm(x, 1, w[:3]),
    "group_norm_affine": lambda m, x, w, b: m.nn.functional.group_norm(x, 3, w[:3], b[:3]),
    "batch_norm_weight_only": lambda m, x, w, b: m.nn.functional.batch_norm(
        x, None, None, w[:3], None, True
    ),
    "batch_norm_bias_only": lambda m, x, w, b: m.nn.functional.batch_norm(
        x, None, None, None, b[:3], True
    ),
    "conv1d_without_bias": lambda m, x, w, b: m.nn.functional.conv1d(x, _kernel(w)),
    "conv1d_with_bias": lambda m, x, w, b: m.nn.functional.conv1d(x, _kernel(w), b[:2]),
    "conv2d_without_bias": lambda m, x, w, b: m.nn.functional.conv2d(
        x.unsqueeze(0), w.reshape(1, 1, 2, 2).repeat(2, 2, 1, 1)
    ),
    "bce_with_logits_no_weight": lambda m, x, w, b: (
        m.nn.functional.binary_cross_entropy_with_logits(x, (x.detach() * 0.5).sigmoid())
    ),
}


def _kernel(w: Any) -> Any:
    """A (2, 3, 2) convolution kernel made of ``w`` (its gradient reaches w)."""
    return w.reshape(2, 1, 2).repeat(1, 3, 1)


def _seen(case: str, replace: bool) -> Callable[[Any], Any]:
    """What a hook on the op's node sees (one entry per grad_input: None, or its shape and
    values), its next_functions' names, and the leaves' gradients after backward (with
    ``replace``, the hook returns every grad_input times 3)."""

    def program(m: Any) -> Any:
        x, w, b = _data(m, 2, 3, 4, seed=0), _data(m, 4, seed=1), _data(m, 4, seed=2)
        out = CASES[case](m, x, w, b)
        seen: list = []

        def hook(grad_inputs: tuple, grad_outputs: tuple) -> Any:
            seen.append([None if g is None else _plain(g) for g in grad_inputs])
            if replace:
                return tuple(None if g is None else g * 3 for g in grad_inputs)
            return None

        fn = out.grad_fn
        fn.register_hook(hook)
        nexts = [None if f is None else f.name() for f, _ in fn.next_functions]
        weights = m.arange(1.0, out.numel() + 1.0, dtype=m.float64).reshape(out.shape)
        (out * weights).sum().backward()
        grads = [None if t.grad is None else _plain(t.grad) for t in (x, w, b)]
        return fn.name(), nexts, seen, grads

    return program


def _plain(t: Any) -> tuple:
    return tuple(t.shape), np.round(np.asarray(t.detach().tolist()), 9).tolist()


def _on_tw(program: Callable[[Any], Any], spec: str, reference: bool = False) -> Any:
    """``program(tw)`` on ``spec``; with ``reference``, on the core's decompositions (no
    fused kernels), as on cuPyNumeric."""
    with entered(spec), reference_only() if reference else contextlib.nullcontext():
        return program(tw)


def _same(program: Callable[[Any], Any], spec: str) -> None:
    assert _on_tw(program, spec) == program(torch)


@pytest.mark.parametrize("replace", [False, True], ids=["seen", "replaced"])
@pytest.mark.parametrize("case", list(CASES))
def test_hook_slots_and_next_functions_like_torch(spec: str, case: str, replace: bool) -> None:
    _same(_seen(case, replace), spec)


def test_layer_norm_bias_only_reference_path_like_torch() -> None:
    """The core's decomposition (no fused kernel) labels the same slots as a fused one."""
    program = _seen("layer_norm_bias_only", True)
    assert _on_tw(program, "numpy", reference=True) == program(torch)


def test_hook_of_wrong_length_names_every_slot(spec: str) -> None:
    """A hook that returns two gradients for layer norm's three slots: torch's error,
    counting the absent weight's slot."""

    def program(m: Any) -> str:
        x, b = _data(m, 2, 4, seed=0), _data(m, 4, seed=2)
        out = m.nn.functional.layer_norm(x, (4,), None, b)
        out.grad_fn.register_hook(lambda gi, go: (gi[0], gi[2]))
        with pytest.raises(RuntimeError) as caught:
            out.sum().backward()
        return str(caught.value).split("(")[-1]

    _same(program, spec)


def test_replayed_result_has_eager_next_functions(spec: str) -> None:
    """A compiled step's result made of a composite after the step's own backward: the
    replay's copy lists what eager's node lists (the composite's input's producer)."""

    def faces(compiled: bool) -> list:
        with entered(spec):
            w = tw.tensor([0.5, -1.0, 2.0], dtype=tw.float64, requires_grad=True)
            x = tw.tensor([1.0, 2.0, 3.0], dtype=tw.float64)

            def step() -> Any:
                loss = (x * w).exp().sum()
                loss.backward()
                return tw.nn.functional.gelu(loss)

            run = tw.compile(step, backend="tensorweaver") if compiled else step
            found = []
            with warnings.catch_warnings():
                warnings.simplefilter("error", CompileWarning)
                for _ in range(5):
                    fn = run().grad_fn
                    found.append((fn.name(), [f.name() for f, _ in fn.next_functions]))
            return found

    eager = faces(False)
    assert eager[0] == ("GeluBackward0", ["SumBackward0"])
    assert faces(True) == eager


@pytest.mark.parametrize(
    "op",
    [
        pytest.param(lambda m, a, b, c: m.addmm(c, a, b.T), id="addmm"),
        pytest.param(
            lambda m, a, b, c: m.nn.functional.linear(a.reshape(3, 2, 4), b),
            id="batched_linear_without_bias",
        ),
    ],
)
def test_product_node_hook_like_torch(spec: str, op: Callable[..., Any]) -> None:
    def program(m: Any) -> Any:
        a, b, c = _data(m, 6, 4, seed=0), _data(m, 5, 4, seed=1), _data(m, 6, 5, seed=2)
        out = op(m, a, b, c)
        seen: list = []
        out.grad_fn.register_hook(lambda gi, go: seen.append([_plain(g) for g in gi]))
        nexts = [f.name() for f, _ in out.grad_fn.next_functions]
        out.sum().backward()
        return nexts, seen

    _same(program, spec)


@pytest.mark.parametrize(
    ("reference", "weighted"),
    [
        (False, False),
        (True, False),
        (True, True),
    ],
    ids=["fused", "reference", "reference_weighted"],
)
def test_cross_entropy_node_hook_like_torch(reference: bool, weighted: bool) -> None:
    """On the core's decomposition (cuPyNumeric, reference_only) the hook used to see the
    logits' gradient where torch's sees the log-probabilities' (labelled with the logits)."""

    def program(m: Any) -> Any:
        x = _data(m, 4, 3, seed=0)
        t = m.tensor([0, 2, 1, 2])
        weight = m.tensor([0.5, 1.0, 2.0]).double() if weighted else None
        out = m.nn.functional.cross_entropy(x, t, weight=weight)
        seen: list = []
        out.grad_fn.register_hook(lambda gi, go: seen.append([_plain(g) for g in gi]))
        nexts = [f.name() for f, _ in out.grad_fn.next_functions]
        out.backward()
        return nexts, seen

    assert _on_tw(program, "numpy", reference) == program(torch)


def _tree(fn: Any) -> Any:
    """``fn``'s name and its next_functions' trees, down to the leaves."""
    return None if fn is None else [fn.name(), [_tree(f) for f, _ in fn.next_functions]]


@pytest.mark.parametrize("shape", [(4, 3), (3,), (2, 2, 3), (2, 0, 3)], ids=str)
@pytest.mark.parametrize("reference", [False, True], ids=["fused", "reference"])
def test_linear_graph_like_torch(spec: str, shape: tuple, reference: bool) -> None:
    """torch's addmm(bias, input rows, weight.t()), viewed back for a non-matrix input: the
    whole graph's names; on the decomposition also a hook on the addmm (its grad_inputs in
    torch's order, replaced), which the fused node refuses (one node for the whole op)."""

    def program(m: Any) -> Any:
        x, w, b = _data(m, *shape, seed=0), _data(m, 2, 3, seed=1), _data(m, 2, seed=2)
        out = m.nn.functional.linear(x, w, b)
        addmm = out.grad_fn if len(shape) == 2 else out.grad_fn.next_functions[0][0]
        seen: list = []

        def hook(grad_inputs: tuple, grad_outputs: tuple) -> tuple:
            seen.append([_plain(g) for g in grad_inputs])
            return tuple(g * 2 for g in grad_inputs)

        if reference:
            addmm.register_hook(hook)
        tree = _tree(out.grad_fn)
        (
            out * m.arange(1.0, out.numel() + 1.0, dtype=m.float64).reshape(out.shape)
        ).sum().backward()
        return tree, seen, [_plain(t.grad) for t in (x, w, b)]

    assert _on_tw(program, spec, reference) == program(torch)


@pytest.mark.parametrize(
    "shape",
    [
        (4, 3),
        (2, 3, 2),
        (2, 3, 2, 2),
        (2, 3, 2, 1, 2),
        (3,),
    ],
    ids=str,
)
def test_fused_cross_entropy_graph_like_torch(spec: str, shape: tuple) -> None:
    """torch's nll step over log_softmax (viewed as images for 3-D and 5-D logits), where
    the fused node listed the logits and the target."""

    def program(m: Any) -> Any:
        x = _data(m, *shape, seed=0)
        target = m.zeros(shape[:1] + shape[2:] if len(shape) > 1 else (), dtype=m.long)
        return _tree(m.nn.functional.cross_entropy(x, target).grad_fn)

    _same(program, spec)
