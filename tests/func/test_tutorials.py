"""PyTorch's torch.func tutorials, run with tw and with torch on the same weights and data:
per-sample gradients (vmap of grad of functional_call) checked against torch.func and a
loop of ordinary backward passes; model ensembling (stack_module_state and vmap); and
functional_call / stack_module_state on their own, with PyTorch's errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import tensorweaver as tw
import torch
from func_twins import arrays, assert_tree_like, raises_like_torch


def _cnn(m):
    class SmallCNN(m.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = m.nn.Conv2d(1, 2, 3)
            self.fc = m.nn.Linear(2 * 4 * 4, 3)

        def forward(self, x):
            x = m.nn.functional.relu(self.conv(x)).flatten(1)
            return m.nn.functional.log_softmax(self.fc(x), dim=1)

    return SmallCNN()


def _mlp(m):
    return m.nn.Sequential(m.nn.Linear(4, 5), m.nn.ReLU(), m.nn.Linear(5, 2))


def _twin(theirs, ours):
    """``ours`` with the weights of the torch module ``theirs``."""
    ours.load_state_dict({k: tw.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours


def _per_sample_grads(m, model, data, targets):
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch, targets = sample.unsqueeze(0), target.unsqueeze(0)
        predictions = m.func.functional_call(model, (params, buffers), (batch,))
        return m.nn.functional.nll_loss(predictions, targets)

    per_sample = m.func.vmap(m.func.grad(compute_loss), in_dims=(None, None, 0, 0))
    return per_sample(params, buffers, data, targets)


def test_per_sample_gradients(backend):
    theirs = _cnn(torch).double()
    ours = _twin(theirs, _cnn(tw))
    (data,) = arrays((5, 1, 6, 6))
    targets = np.array([0, 2, 1, 1, 0])
    got = _per_sample_grads(tw, ours, tw.tensor(data), tw.tensor(targets))
    expected = _per_sample_grads(torch, theirs, torch.tensor(data), torch.tensor(targets))
    assert_tree_like(got, expected)
    # the tutorial's check: one ordinary backward pass per sample
    for i in range(len(data)):
        ours.zero_grad()
        loss = tw.nn.functional.nll_loss(
            ours(tw.tensor(data[i : i + 1])), tw.tensor(targets[i : i + 1])
        )
        loss.backward()
        for name, p in ours.named_parameters():
            np.testing.assert_allclose(
                np.asarray(got[name][i]), np.asarray(p.grad), rtol=1e-9, atol=1e-12
            )


def _ensemble(m, models, data):
    params, buffers = m.func.stack_module_state(models)
    base = copy.deepcopy(models[0])

    def fmodel(params, buffers, x):
        return m.func.functional_call(base, (params, buffers), (x,))

    different = m.func.vmap(fmodel, in_dims=(0, 0, 0))(params, buffers, data[: len(models)])
    same = m.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, data[0])
    return params, buffers, different, same


def test_model_ensembling(backend):
    theirs = [_mlp(torch).double() for _ in range(3)]
    ours = [_twin(t, _mlp(tw)) for t in theirs]
    (data,) = arrays((3, 6, 4))
    got = _ensemble(tw, ours, tw.tensor(data))
    assert_tree_like(got, _ensemble(torch, theirs, torch.tensor(data)))
    for i, model in enumerate(ours):  # the tutorial's check against a loop over the models
        np.testing.assert_allclose(
            np.asarray(got[2][i].detach()), np.asarray(model(tw.tensor(data[i])).detach())
        )
    # the stacked parameters are new leaves: an optimizer can train the whole ensemble
    loss = got[3].square().sum()
    loss.backward()
    assert got[0]["0.weight"].grad.shape == (3, 5, 4)


def test_stack_module_state_buffers_and_errors(backend):
    theirs = [torch.nn.BatchNorm1d(3).double() for _ in range(2)]
    ours = [_twin(t, tw.nn.BatchNorm1d(3)) for t in theirs]
    assert_tree_like(tw.func.stack_module_state(ours), torch.func.stack_module_state(theirs))
    theirs[1].eval()
    ours[1].eval()
    with pytest.raises(RuntimeError, match="training/eval"):
        torch.func.stack_module_state(theirs)
    with pytest.raises(RuntimeError, match="training/eval"):
        tw.func.stack_module_state(ours)
    for m in (torch, tw):
        with pytest.raises(RuntimeError):
            m.func.stack_module_state([])
        with pytest.raises(RuntimeError):
            m.func.stack_module_state([m.nn.Linear(2, 2), m.nn.Conv1d(2, 2, 1)])


def test_functional_call_dict_sequences(backend):
    theirs = torch.nn.Linear(3, 2).double()
    ours = _twin(theirs, tw.nn.Linear(3, 2))
    w, b, x = arrays((2, 3), (2,), (4, 3))

    def build(m, model):
        def run(w, b, x):
            one = m.func.functional_call(model, {"weight": w, "bias": b}, x)
            two = m.func.functional_call(model, ({"weight": w}, {"bias": b}), (x,))
            return one, two

        return run

    assert_tree_like(
        build(tw, ours)(*(tw.tensor(a) for a in (w, b, x))),
        build(torch, theirs)(*(torch.tensor(a) for a in (w, b, x))),
    )
    raises_like_torch(
        lambda m: (
            lambda w: m.func.functional_call(
                ours if m is tw else theirs, ({"weight": w}, {"weight": w}), (w,)
            )
        ),
        w,
    )
    raises_like_torch(
        lambda m: lambda w: m.func.functional_call(ours if m is tw else theirs, 3, (w,)), w
    )
    raises_like_torch(
        lambda m: lambda w: m.func.functional_call(ours if m is tw else theirs, [3], (w,)), w
    )


def test_meta_learning_gradient_through_functional_call(backend):
    # MAML's inner step: the outer gradient flows through an inner gradient step
    theirs = _mlp(torch).double()
    ours = _twin(theirs, _mlp(tw))
    x, y = arrays((6, 4), (6, 2))

    def outer(m, model):
        def inner_loss(params, x, y):
            return (m.func.functional_call(model, params, (x,)) - y).square().mean()

        def outer_loss(params, x, y):
            grads = m.func.grad(inner_loss)(params, x, y)
            adapted = {k: p - 0.1 * grads[k] for k, p in params.items()}
            return inner_loss(adapted, x, y)

        params = {k: v.detach() for k, v in model.named_parameters()}
        return m.func.grad_and_value(outer_loss)(params, m.tensor(x), m.tensor(y))

    assert_tree_like(outer(tw, ours), outer(torch, theirs))


def test_ensemble_training_gradients(backend):
    # one gradient per ensemble member: vmap over the stacked parameters of grad of the loss
    theirs = [_mlp(torch).double() for _ in range(2)]
    ours = [_twin(t, _mlp(tw)) for t in theirs]
    x, y = arrays((6, 4), (6, 2))

    def build(m, models):
        params, buffers = m.func.stack_module_state(models)
        base = copy.deepcopy(models[0])

        def loss(p, b, x, y):
            return (m.func.functional_call(base, (p, b), (x,)) - y).square().mean()

        grads = m.func.vmap(m.func.grad_and_value(loss), in_dims=(0, 0, None, None))
        return grads(params, buffers, m.tensor(x), m.tensor(y))

    assert_tree_like(build(tw, ours), build(torch, theirs))
