"""saved_tensors_hooks on the index tensors of ops whose node remakes its index from them
(``ops.index.Remade``: ``x[i]``, ``take``, ``masked_select``, ``embedding``): backward reads
what unpack returns for each, as torch 2.13's does (:mod:`snippet_outcomes`); and eig's
gradient at repeated eigenvalues (linalg/eig_gradient.py), finite for the eigenvalues alone."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from snippet_outcomes import leaf, same_each
from tw_backends import FAST


@pytest.fixture(params=FAST)
def spec(request: pytest.FixtureRequest) -> str:
    return request.param


def _through_hooks(call: Callable[[Any, Any], Any], unpack: Callable[[Any, Any], Any]) -> Callable:
    """x's gradient through ``call`` when unpack gives ``unpack(m, t)`` for each integer or
    bool tensor saved (floats unchanged); each output element weighted apart."""

    def program(m: Any) -> Any:
        x = leaf(m, 4, 3)

        def hook(t: Any) -> Any:
            return t if t.dtype.is_floating_point else unpack(m, t)

        with m.autograd.graph.saved_tensors_hooks(lambda t: t, hook):
            y = call(m, x)
        (y * m.arange(1.0, y.numel() + 1, dtype=m.float64).reshape(y.shape)).sum().backward()
        return x.grad

    return program


def _shifted(m: Any, t: Any) -> Any:
    """An integer index one on (wrapped into [0, 2]), a mask reversed."""
    return t.flip(0) if t.dtype == m.bool else (t + 1) % 3


UNPACKED = {
    "getitem_two_tensors": lambda m, x: x[m.tensor([2, 0]), m.tensor([1, 1])],
    "getitem_tensor_and_slice": lambda m, x: x[1:, m.tensor([0, 2])],
    "getitem_tensor_and_int": lambda m, x: x[m.tensor([2, 0, 0]), 1],
    "getitem_int32": lambda m, x: x[m.tensor([2, 0], dtype=m.int32)],
    "getitem_mask": lambda m, x: x[m.tensor([True, False, True, False])],
    "take": lambda m, x: m.take(x, m.tensor([1, 5, 7])),
    "masked_select": lambda m, x: x.masked_select(m.tensor([[True], [False], [True], [True]])),
    "embedding": lambda m, x: m.nn.functional.embedding(m.tensor([2, 0, 2]), x),
}


def test_remade_index_nodes_read_the_unpacked_index(spec: str) -> None:
    same_each({k: _through_hooks(c, _shifted) for k, c in UNPACKED.items()}, spec)


def _changed_after_packing(call: Callable[[Any, Any, Any], Any], copy: bool) -> Callable:
    """x's gradient when the index changes in place after it was packed: torch reads what
    unpack gives (the tensor as changed, or the copy packed before), checking no version."""

    def program(m: Any) -> Any:
        x = leaf(m, 4, 3)
        index = m.tensor([2, 0])
        pack = (lambda t: t.clone()) if copy else (lambda t: t)
        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = call(m, x, index)
        with m.no_grad():
            index.add_(1)
        (y * m.arange(1.0, y.numel() + 1, dtype=m.float64).reshape(y.shape)).sum().backward()
        return x.grad

    return program


CHANGED = {
    "take": lambda m, x, i: m.take(x, i),
    "getitem_columns": lambda m, x, i: x[:, i],
}


def test_remade_index_changed_after_packing(spec: str) -> None:
    same_each(
        {
            f"{k}_{copy}": _changed_after_packing(c, copy)
            for k, c in CHANGED.items()
            for copy in (0, 1)
        },
        spec,
    )


@pytest.mark.parametrize(
    "spec_",
    [
        "numpy",
        pytest.param(
            "torch:cpu",
            marks=pytest.mark.xfail(
                strict=True,
                reason="SILENT (an error where torch succeeds): embedding's index changed in "
                "place after saved_tensors_hooks packed it: backward raises the in-place "
                "error where torch reads what unpack gives. Cause: on torch:cpu embedding is "
                "one fused node (nn/functional/sparse.py) whose inputs hold the index, and "
                "autograd/engine.py _check_versions checks every input that "
                "gradients.READS_INPUT does not exempt (op 'fused': none). Fix: in "
                "autograd/gradients.py READS_INPUT, a 'fused' entry that exempts the input "
                "slot a Resaved remakes (ops/composite.py Resaved.slot) where the node's "
                "operands were packed (autograd/graph.py PACKED_OPERANDS).",
            ),
        ),
    ],
)
def test_embedding_index_changed_after_packing(spec_: str) -> None:
    program = _changed_after_packing(lambda m, x, i: m.nn.functional.embedding(i, x), True)
    same_each({"embedding": program}, spec_)


def _repeated(m: Any) -> Any:
    rows = [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 1.0]]
    return m.tensor(rows, dtype=m.float64, requires_grad=True)


EIG_REPEATED = {
    # eigenvalues alone: torch's eigvals shortcut, finite at repeated eigenvalues
    "values_only": lambda m, r: r.eigenvalues.real.pow(2).sum(),
    "eigvals": None,
    # a gradient through the vectors divides by the zero gaps: NaN, as torch's
    "values_and_vectors": lambda m, r: r.eigenvalues.real.sum() + r.eigenvectors.abs().sum(),
}


def _eig_grad(loss: Callable[[Any, Any], Any] | None) -> Callable:
    def program(m: Any) -> Any:
        a = _repeated(m)
        if loss is None:
            return m.autograd.grad(m.linalg.eigvals(a).real.sum(), a)
        return m.autograd.grad(loss(m, m.linalg.eig(a)), a)

    return program


def test_eig_gradient_at_repeated_eigenvalues(spec: str) -> None:
    same_each({k: _eig_grad(f) for k, f in EIG_REPEATED.items()}, spec)


RESHAPED = {
    "getitem_2d_index": lambda m, x: x[m.tensor([[2, 0], [1, 1]])],
    "getitem_2d_columns": lambda m, x: x[:, m.tensor([[2, 0]])],
    "embedding_2d_input": lambda m, x: m.nn.functional.embedding(m.tensor([[2, 0]]), x),
}


@pytest.mark.xfail(
    strict=True,
    reason="SILENT (the gradient goes where the given index says): with an index of 2+ dims "
    "(x[i] for a 2-d i, embedding of a 2-d input) the unpack hook's result for the saved index "
    "is dropped. Cause: the take node that remakes its index (ops/index.py _advanced, "
    "nn/functional/sparse.py embedding) is followed by a reshape, whose node is the one "
    "labelled IndexBackward0/EmbeddingBackward0 and noted with the index (autograd/node.py "
    "saves_integer_input), so autograd/graph.py unpack_operands runs on the reshape node and "
    "the take node reads its kept index. Fix: note the index on the take node (its output "
    "relabelled, the reshape's node a view of it), or have unpack_operands hand the unpacked "
    "index down to the take node (the reshape node's only parent).",
)
def test_reshaped_index_nodes_read_the_unpacked_index(spec: str) -> None:
    same_each({k: _through_hooks(c, _shifted) for k, c in RESHAPED.items()}, spec)
