"""Two nodes of the word-LM Transformer's step made cheaper (issue 16), behaving as before
and as torch's: ``nll_loss`` by the backend's kernels records a node of the rule table
(``"nll_loss"``, not an autograd.Function's), and nn.MultiheadAttention's common call
cuts q, k, v from the packed projection under one node whose backward is one ``cat``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from snippet_outcomes import refused_in_place, same_each, walk
from tensorweaver.autograd.engine import _topological
from tensorweaver.nn.functional.multi_head_attention import _self_attention_heads
from tw_backends import entered

SPECS = ("numpy", "torch:cpu")
TARGET = [0, 4, 2, -100, 1, 3]


def _logp(m: Any) -> Any:
    x = np.random.default_rng(0).standard_normal((6, 5))
    return m.tensor(x, dtype=m.float64).log_softmax(1).detach().requires_grad_()


def _nll(m: Any, reduction: str, weighted: bool, ignore_index: int = -100) -> Any:
    x = _logp(m)
    weight = m.tensor([0.5, 1.0, 2.0, 1.5, 0.25], dtype=m.float64) if weighted else None
    target = m.tensor(TARGET)
    loss = m.nn.functional.nll_loss(
        x, target, weight, ignore_index=ignore_index, reduction=reduction
    )
    upstream = m.linspace(0.5, 2.0, loss.numel(), dtype=m.float64).reshape(loss.shape)
    upstream.requires_grad_()
    (g,) = m.autograd.grad(loss, x, upstream, create_graph=True)
    (second,) = m.autograd.grad((g * g).sum(), upstream)  # (double backward)
    return loss, g, second, walk(loss.grad_fn)


@pytest.mark.parametrize("spec", SPECS)
def test_nll_loss_records_a_rule_node(spec: str) -> None:
    with entered(spec):
        loss = tw.nn.functional.nll_loss(_logp(tw), tw.tensor(TARGET))
        assert loss._node.op == "nll_loss"  # (an autograd.Function's "function" node before)
        assert type(loss.grad_fn).__name__ == "NllLossBackward0"


@pytest.mark.parametrize("spec", SPECS)
def test_nll_loss_values_gradients_and_double_backward_like_torch(spec: str) -> None:
    programs = {
        f"{reduction} weighted={weighted} ignore={ignore}": (
            lambda m, r=reduction, w=weighted, i=ignore: _nll(m, r, w, i)
        )
        for reduction in ("mean", "sum", "none")
        for weighted in (False, True)
        for ignore in (-100, 2)
    }
    same_each(programs, spec, decimals=12)


def _changed_target(m: Any) -> Any:
    x, target = _logp(m), m.tensor(TARGET)
    loss = m.nn.functional.nll_loss(x, target)
    target[1] = 3
    return refused_in_place(loss.backward)


def _hooked(m: Any) -> Any:
    packed = []
    with m.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t.shape) or t, lambda t: t):
        x = _logp(m)
        loss = m.nn.functional.nll_loss(x, m.tensor(TARGET), reduction="sum")
    loss.backward()
    return len(packed), x.grad


def _no_grad(m: Any) -> Any:
    with m.no_grad():
        loss = m.nn.functional.nll_loss(_logp(m), m.tensor(TARGET))
    return loss, loss.requires_grad


@pytest.mark.parametrize("spec", SPECS)
def test_nll_loss_node_watches_targets_and_hooks_like_torch(spec: str) -> None:
    programs = {"changed target": _changed_target, "hooks": _hooked, "no_grad": _no_grad}
    same_each(programs, spec, decimals=12)


L, N, E, H = 5, 3, 8, 2


def _attention(spec: str) -> tuple:
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(E, H, dtype=torch.float64)
    with entered(spec):
        mine = tw.nn.MultiheadAttention(E, H, dtype=tw.float64)
        state = {k: tw.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()}
        mine.load_state_dict(state)
    return mine, theirs


@pytest.mark.parametrize("spec", SPECS)
def test_self_attention_joins_q_k_v_by_one_node(spec: str) -> None:
    mine, _ = _attention(spec)
    with entered(spec):
        x = tw.randn(L, N, E, dtype=tw.float64, requires_grad=True)
        out = mine(x, x, x, need_weights=False)[0]
        # in_proj, q/k/v's node and one per piece, the attention, its permute and reshape,
        # out_proj (the projection's reshape and permute, and a stack backward, made 11)
        assert len(_topological([out._node])) == 9


def _one_piece(m: Any, which: int) -> Any:
    """The gradients when only q, k or v is used, from the packed projection."""
    x = m.tensor(np.random.default_rng(1).standard_normal((L, N, E)), requires_grad=True)
    w = m.tensor(np.random.default_rng(2).standard_normal((3 * E, E)), requires_grad=True)
    b = m.tensor(np.random.default_rng(3).standard_normal(3 * E), requires_grad=True)
    if m is tw:
        piece = _self_attention_heads(x, w, b, H)[which]
    else:  # (torch's _in_projection_packed and head split)
        proj = m.nn.functional.linear(x, w, b).unflatten(-1, (3, E))
        piece = proj[:, :, which].reshape(L, N, H, E // H).permute(1, 2, 0, 3)
    weight = m.linspace(-1.0, 1.0, piece.numel(), dtype=m.float64).reshape(piece.shape)
    grads = m.autograd.grad((piece * weight).sum(), (x, w, b), create_graph=True)
    second = m.autograd.grad((grads[0] * grads[0]).sum(), (w,))
    return piece, grads, second


@pytest.mark.parametrize("spec", SPECS)
def test_q_k_v_node_gives_zeros_to_unused_pieces_like_torch(spec: str) -> None:
    programs = {f"piece {i}": (lambda m, i=i: _one_piece(m, i)) for i in range(3)}
    # (10 decimals: the second derivatives reach ~80, where NumPy's BLAS and torch's sum in
    # another order on some CPUs, a few ulps apart: AMD EPYC, session 31)
    same_each(programs, spec, decimals=10)
