"""A replayed forward differentiated with ``create_graph=True`` gives a gradient that requires
grad, as eagerly: a forward without side effects differentiates twice with the eager values
(a gradient penalty through a compiled model), one that draws or writes raises at the second
backward, as ``torch.compile``'s does."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as F
import torch
from tensorweaver import nn

DEVICES = ["numpy", "torch:cpu"]
CALLS = 4  # two traces, then replays


def compile_fast(fn: object) -> tw.compiler.CompiledFunction:
    """The replay alone (no backend hook: torch's inductor costs seconds per graph)."""
    return tw.compile(fn, backend="tensorweaver")


def test_softmax_gradient_requires_grad_on_every_call() -> None:
    """The case of the strict xfail in tests/nn_functional/test_softmax_node_review.py: from
    the third call (the first replay) the gradient did not require grad."""
    compiled = tw.compile(lambda t: (F.softmax(t, 1) * tw.arange(4.0)).sum())
    value = np.random.default_rng(4).standard_normal((3, 4))
    for shift in range(CALLS):
        x = tw.tensor(value + shift, requires_grad=True)
        (g,) = tw.autograd.grad(compiled(x), x, create_graph=True)
        assert g.requires_grad, f"call {shift}"
        (h,) = tw.autograd.grad((g * g).sum(), x)
        xt = torch.tensor(value + shift, requires_grad=True)
        yt = (torch.softmax(xt, 1) * torch.arange(4.0)).sum()
        (gt,) = torch.autograd.grad(yt, xt, create_graph=True)
        (ht,) = torch.autograd.grad((gt * gt).sum(), xt)
        np.testing.assert_allclose(h.numpy(), ht.numpy(), rtol=1e-12, atol=1e-14)


def _twins(device: str) -> tuple[nn.Module, torch.nn.Module]:
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 1))
    ref = ref.double()
    with tw.device(device):
        model = nn.Sequential(nn.Linear(5, 7), nn.Tanh(), nn.Linear(7, 1)).double()
    with tw.no_grad():
        for p, q in zip(model.parameters(), ref.parameters()):
            p.copy_(tw.tensor(q.detach().numpy(), device=device))
    return model, ref


@pytest.mark.parametrize("device", DEVICES)
def test_gradient_penalty_through_a_compiled_model_matches_torch(device: str) -> None:
    """WGAN-GP's penalty: the input gradient's norm, differentiated to the parameters."""
    model, ref = _twins(device)
    compiled = compile_fast(model)
    rng = np.random.default_rng(1)
    for call in range(CALLS):
        value = rng.standard_normal((6, 5))
        x = tw.tensor(value, requires_grad=True, device=device)
        (g,) = tw.autograd.grad(compiled(x).sum(), x, create_graph=True)
        ((g.norm(dim=1) - 1) ** 2).mean().backward()
        xt = torch.tensor(value, requires_grad=True)
        (gt,) = torch.autograd.grad(ref(xt).sum(), xt, create_graph=True)
        ((gt.norm(dim=1) - 1) ** 2).mean().backward()
        for p, q in zip(model.parameters(), ref.parameters()):
            # (the input gradient does not depend on the last bias: None in both)
            assert (p.grad is None) == (q.grad is None), f"call {call}"
            if q.grad is not None:
                np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12)
            p.grad, q.grad = None, None
        np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
def test_first_order_replay_gradient_does_not_require_grad(device: str) -> None:
    """Without create_graph the recorded backward serves, and builds no graph."""
    model, _ = _twins(device)
    compiled = compile_fast(model)
    x = tw.tensor(np.ones((2, 5)), requires_grad=True, device=device)
    for _ in range(CALLS):
        (g,) = tw.autograd.grad(compiled(x).sum(), x)
        assert not g.requires_grad


@pytest.mark.parametrize("device", DEVICES)
def test_double_backward_through_a_replayed_dropout_forward_raises(device: str) -> None:
    """Running a forward that draws masks again would draw others: its gradient requires
    grad, and differentiating it raises, as torch.compile's does."""
    with tw.device(device):
        model = nn.Sequential(nn.Linear(5, 7), nn.Dropout(0.5), nn.Linear(7, 1)).double()
    compiled = compile_fast(model)
    tw.manual_seed(0)
    for call in range(CALLS):
        x = tw.tensor(np.ones((4, 5)), requires_grad=True, device=device)
        (g,) = tw.autograd.grad(compiled(x).sum(), x, create_graph=True)
        assert g.requires_grad, f"call {call}"
        if call >= 2:  # a replay
            with pytest.raises(RuntimeError, match="cannot be differentiated twice"):
                tw.autograd.grad((g * g).sum(), x)


def test_input_changed_in_place_before_a_create_graph_backward_raises() -> None:
    """Running the forward again on a parameter changed since would give another gradient
    silently; eagerly the version check raises."""
    model, _ = _twins("numpy")
    compiled = compile_fast(model)
    x = tw.tensor(np.ones((2, 5)), requires_grad=True)
    for _ in range(CALLS - 1):
        tw.autograd.grad(compiled(x).sum(), x, create_graph=True)
    out = compiled(x).sum()
    with tw.no_grad():
        model[0].weight.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tw.autograd.grad(out, x, create_graph=True)


def test_double_backward_through_a_replayed_pruned_forward_raises() -> None:
    """A forward whose pre-hook rebinds ``weight`` (pruning) is not run again either."""
    from tensorweaver.nn.utils import prune

    tw.manual_seed(0)
    m = nn.Linear(4, 3).double()
    prune.l1_unstructured(m, "weight", amount=0.5)
    compiled = compile_fast(m)
    for call in range(CALLS):
        x = tw.tensor(np.ones((2, 4)), requires_grad=True)
        out = compiled(x)
        (g,) = tw.autograd.grad((out * out).sum(), x, create_graph=True)
        assert g.requires_grad, f"call {call}"
        if call >= 2:  # a replay
            with pytest.raises(RuntimeError, match="cannot be differentiated twice"):
                tw.autograd.grad(g.sum(), x)
    assert len(compiled.graph_source()) == 1
