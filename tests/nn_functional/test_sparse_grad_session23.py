"""The sparse gradient of ``embedding(sparse=True)`` as torch 2.13's: what keeps it sparse,
its layout, ``coalesce()``, ``to_dense()``; and copysign/fmod/remainder of inference tensors
(each program run on torch and on tensorweaver with only the import changed)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

_WEIGHT = np.arange(18, dtype=np.float64).reshape(6, 3) / 7 - 1


def _grad(m: Any, indices: list[int], hook: Callable | None = None) -> Any:
    """The gradient of an embedding's weight after a lookup of ``indices``."""
    e = m.nn.Embedding(6, 3, sparse=True).double()
    with m.no_grad():
        e.weight.copy_(m.tensor(_WEIGHT))
    if hook is not None:
        e.weight.register_hook(hook)
    (e(m.tensor(indices)) * m.tensor([1.0, -2.0, 3.0], dtype=m.float64)).sum().backward()
    return e.weight.grad


def _shown(r: Any, m: Any) -> Any:
    """``r`` comparable across the two: a tensor as its layout's name, dtype and values."""
    if isinstance(r, tuple):
        return tuple(_shown(x, m) for x in r)
    if not isinstance(r, m.Tensor):
        return r
    dense = r.to_dense() if r.is_sparse else r
    values = np.round(np.asarray(dense.detach().double().tolist()), 12)
    return str(r.layout).split(".")[-1], str(r.dtype).split(".")[-1], values.tolist()


def _same(program: Callable[[Any], Any]) -> None:
    def outcome(m: Any) -> Any:
        try:
            return _shown(program(m), m)
        except Exception as e:  # noqa: BLE001  (the class is the answer)
            return type(e).__name__

    assert outcome(tw) == outcome(torch)


def _dense(m: Any) -> Any:
    return m.tensor(_WEIGHT[:, ::-1].copy())


#: Results of a sparse gradient: torch keeps its layout sparse through each (or not).
RESULTS: dict[str, Callable[[Any, Any], Any]] = {
    "times_number": lambda m, g: g * 0.5,
    "number_times": lambda m, g: 3 * g,
    "times_dense": lambda m, g: g * _dense(m),
    "dense_times": lambda m, g: _dense(m) * g,
    "mul_method": lambda m, g: g.mul(m.tensor(2.0, dtype=m.float64)),
    "divided_by_number": lambda m, g: g / 4,
    "divided_by_0d": lambda m, g: g.div(m.tensor(2.0, dtype=m.float64), rounding_mode="floor"),
    "negated": lambda m, g: -g,
    "neg_method": lambda m, g: g.neg(),
    "sparse_sum": lambda m, g: g + g * 2,
    "sparse_difference": lambda m, g: g.sub(g * 3, alpha=2),
    "dense_plus_sparse": lambda m, g: _dense(m) + g,
    "clone": lambda m, g: g.clone(),
    "detach": lambda m, g: g.detach(),
    "to_float32": lambda m, g: g.to(m.float32),
    "float": lambda m, g: g.float(),
    "sum": lambda m, g: g.sum(),
    "coalesced": lambda m, g: (g.is_coalesced(), g.coalesce(), g.coalesce().is_coalesced()),
    "coalesced_kept": lambda m, g: (g.coalesce() * 2 + g.coalesce()).is_coalesced(),
    "coalesced_plus_not": lambda m, g: (g.coalesce() + g).is_coalesced(),
    "to_dense_dtype": lambda m, g: g.to_dense(m.float32),
}


@pytest.mark.parametrize("case", RESULTS)
def test_sparse_gradient_results_match_torch(case: str) -> None:
    _same(lambda m: RESULTS[case](m, _grad(m, [3, 1, 3])))


def test_to_dense_is_a_copy() -> None:
    def program(m: Any) -> Any:
        g = _grad(m, [3, 1, 3])
        dense = g.to_dense()
        dense[3] = 9.0
        return dense.is_sparse, g

    _same(program)


def test_hook_scaling_sparse_gradient_lets_sparse_adam_step() -> None:
    # A hook returning g * 0.5 on a sparse=True embedding: torch's SparseAdam steps.
    def program(m: Any) -> Any:
        e = m.nn.Embedding(6, 3, sparse=True).double()
        with m.no_grad():
            e.weight.copy_(m.tensor(_WEIGHT))
        e.weight.register_hook(lambda g: g * 0.5)
        opt = m.optim.SparseAdam(e.parameters(), lr=0.1)
        for indices in ([3, 1, 3], [0, 3]):
            opt.zero_grad()
            e(m.tensor(indices)).pow(2).sum().backward()
            opt.step()
        return e.weight.detach()

    _same(program)


def _inference(m: Any) -> tuple[Any, Any]:
    with m.inference_mode():
        x = m.tensor([1.0, -2.0, 3.0], requires_grad=True)
        plain = m.tensor([1.0, -1.0, 2.0])
    return x, plain


#: copysign/fmod/remainder of inference tensors (``xi``: one that requires grad; ``ni``: one
#: that does not) with normal ones (``n``; ``nr``: requires grad), outside inference mode.
INFERENCE: dict[str, Callable[[Any, Any, Any, Any, Any], Any]] = {
    "copysign_xi_n": lambda m, xi, ni, n, nr: m.copysign(xi, n),
    "copysign_xi_number": lambda m, xi, ni, n, nr: m.copysign(xi, 2.0),
    "copysign_ni_nr": lambda m, xi, ni, n, nr: m.copysign(ni, nr),
    "copysign_n_xi": lambda m, xi, ni, n, nr: m.copysign(n, xi),
    "fmod_xi_n": lambda m, xi, ni, n, nr: m.fmod(xi, n),
    "fmod_ni_nr": lambda m, xi, ni, n, nr: m.fmod(ni, nr),
    "fmod_n_xi": lambda m, xi, ni, n, nr: m.fmod(n, xi),
    "remainder_xi_number": lambda m, xi, ni, n, nr: m.remainder(xi, 1.5),
    "mod_xi_number": lambda m, xi, ni, n, nr: xi % 2.0,
}


@pytest.mark.parametrize("case", INFERENCE)
def test_inference_operands_match_torch(case: str) -> None:
    def program(m: Any) -> Any:
        xi, ni = _inference(m)
        n, nr = m.tensor([1.0, -1.0, 2.0]), m.tensor([1.0, -1.0, 2.0], requires_grad=True)
        y = INFERENCE[case](m, xi, ni, n, nr)
        return y.requires_grad, type(y.grad_fn).__name__

    _same(program)


def test_copysign_gives_other_a_zero_gradient() -> None:
    # torch records CopysignBackward0 when only ``other`` requires grad (its gradient: zeros)
    def program(m: Any) -> Any:
        other = m.tensor([[1.0], [-1.0]], dtype=m.float64, requires_grad=True)
        y = m.copysign(m.tensor([1.0, -2.0, 0.0], dtype=m.float64), other)
        y.sum().backward()
        return y.requires_grad, type(y.grad_fn).__name__, y, other.grad

    _same(program)


def _coalesced_after(m: Any, lookups: list[list[int]], one_pass: bool) -> Any:
    w = m.ones(6, 3, dtype=m.float64, requires_grad=True)
    looked = [
        m.nn.functional.embedding(m.tensor(i, dtype=m.int64), w, sparse=True).sum() for i in lookups
    ]
    if one_pass:
        sum(looked).backward()
    else:
        for loss in looked:
            loss.backward()
    return w.grad.is_coalesced(), w.grad


@pytest.mark.parametrize("lookups", [[[1]], [[1, 1]], [[]], [[4, 2]]], ids=str)
def test_lookup_gradient_coalesced_as_torch(lookups: list[list[int]]) -> None:
    # torch's gradient lists one entry per index looked up: coalesced where there is one
    _same(lambda m: _coalesced_after(m, lookups, True))


def test_padding_rows_are_no_entries() -> None:
    def program(m: Any) -> Any:
        F = m.nn.functional
        w = m.ones(6, 3, dtype=m.float64, requires_grad=True)
        F.embedding(m.tensor([2, 1, 2]), w, padding_idx=2, sparse=True).sum().backward()
        bag = m.ones(6, 3, dtype=m.float64, requires_grad=True)
        rows = F.embedding_bag(m.tensor([5, 0]), bag, m.tensor([0]), sparse=True, padding_idx=0)
        rows.sum().backward()
        return w.grad.is_coalesced(), bag.grad.is_coalesced()

    _same(program)


@pytest.mark.parametrize("option", ["sparse", "scale_grad_by_freq"])
def test_max_bags_refuse_sparse_and_frequency_scaling(option: str) -> None:
    def program(m: Any) -> Any:
        w = m.ones(6, 3, requires_grad=True)
        return m.nn.functional.embedding_bag(m.tensor([[1, 2]]), w, mode="max", **{option: True})

    _same(program)


@pytest.mark.parametrize("one_pass", [True, False], ids=["one_pass", "accumulated"])
def test_sum_of_one_index_lookups_is_uncoalesced(one_pass: bool) -> None:
    _same(lambda m: _coalesced_after(m, [[1], [2]], one_pass))


def test_sparse_coo_is_a_public_layout_as_torch() -> None:
    e = tw.nn.Embedding(5, 3, sparse=True)
    e(tw.tensor([1, 2])).sum().backward()
    assert e.weight.grad.layout is tw.sparse_coo
    assert e.weight.layout is tw.strided
    assert repr(tw.sparse_coo) == repr(torch.sparse_coo).replace("torch", "tensorweaver")
