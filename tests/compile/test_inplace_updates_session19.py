"""tw.compile on torch:cpu writes a step's in-place updates (an optimizer's parameters and
state) into the arrays they replace, as PyTorch's optimizers do, where nothing else holds
those arrays: a clone of a parameter (which shares its array until either changes), an
alias or NumPy view of it, a view whose clone shares its memory keep what eager steps give
them. torch.compile is stood in for by the traced graph run as compiled code runs it (grad
mode off), so that no inductor compilation (seconds) is needed."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver import nn
from tensorweaver_torch.compile import _Traced


@pytest.fixture(autouse=True)
def _no_inductor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch, "compile", lambda graph, **options: torch.no_grad()(graph))


def _weights() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s) for s in ((5, 4), (5,), (3, 5), (3,))]


def _tw_step() -> tuple[Any, list[Any]]:
    """A float64 MLP step with SGD (momentum: state updated in place too) on torch:cpu."""
    with tw.device("torch:cpu"):
        model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3)).double()
        with tw.no_grad():
            for p, w in zip(model.parameters(), _weights()):
                p.copy_(tw.tensor(w))
        x = tw.tensor(np.random.default_rng(1).standard_normal((6, 4)))
    opt = tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step() -> Any:
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    return step, list(model.parameters())


def _torch_params(steps: int) -> list[np.ndarray]:
    """The parameters after ``steps`` of the same step in PyTorch."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    model = model.double()
    with torch.no_grad():
        for p, w in zip(model.parameters(), _weights()):
            p.copy_(torch.from_numpy(w))
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((6, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
    return [p.detach().numpy() for p in model.parameters()]


def _compiled_steps(steps: int) -> tuple[Any, list[Any]]:
    """The step compiled and run ``steps`` times, its graph then run by the compiled form
    (not the replay, which the hook's timing trials might pick) from there on."""
    step, params = _tw_step()
    compiled = tw.compile(step)
    for _ in range(steps):
        compiled()
    (graph,) = compiled._cache.values()
    compute = graph.run.__globals__["compute"]
    compute.chosen = compute.compiled
    return compiled, params


def _assert_like_torch(params: list[Any], steps: int) -> None:
    for p, want in zip(params, _torch_params(steps)):
        np.testing.assert_allclose(np.asarray(p.detach()), want, rtol=1e-12, atol=1e-14)


def test_parameters_and_optimizer_state_are_updated_in_place() -> None:
    compiled, params = _compiled_steps(6)
    arrays = [weakref.ref(p.native) for p in params]  # (a reference would keep it apart)
    for _ in range(3):
        compiled()
    assert all(p.native is a() for p, a in zip(params, arrays))  # no new arrays
    _assert_like_torch(params, 9)


def test_a_clone_held_by_the_user_keeps_its_values() -> None:
    compiled, params = _compiled_steps(6)
    clones = [p.clone() for p in params]  # shares the parameter's array until it changes
    before = [np.asarray(p.detach()) for p in params]
    compiled()
    for c, b in zip(clones, before):
        np.testing.assert_array_equal(np.asarray(c.detach()), b)
    compiled()  # and a parameter nothing else holds any more is updated in place again
    _assert_like_torch(params, 8)


def test_a_view_and_a_clone_of_a_view_behave_as_in_torch() -> None:
    compiled, params = _compiled_steps(6)
    view, transposed = params[0].view(-1), params[0].T
    kept = transposed.clone()  # shares the memory of the parameter's array
    before = np.asarray(kept.detach())
    compiled()
    np.testing.assert_array_equal(np.asarray(kept.detach()), before)
    np.testing.assert_array_equal(
        np.asarray(view.detach()), np.asarray(params[0].detach()).reshape(-1)
    )
    np.testing.assert_array_equal(np.asarray(transposed.detach()), np.asarray(params[0].detach()).T)
    _assert_like_torch(params, 7)


def test_a_numpy_view_of_a_parameter_sees_the_update_as_in_torch() -> None:
    compiled, params = _compiled_steps(6)
    shared = params[2].detach().numpy()
    version = params[2]._version
    compiled()
    np.testing.assert_array_equal(shared, np.asarray(params[2].detach()))
    assert params[2]._version == version + 1  # one in-place change, as eagerly
    _assert_like_torch(params, 7)


def _update(p: torch.Tensor, g: torch.Tensor) -> tuple:
    return (p - 0.5 * g,)


def test_the_torch_hook_writes_into_an_input_only_where_no_view_shares_its_memory() -> None:
    traced = _Traced(_update, None, donated=[(0, 0)])
    p, g = torch.ones(3, dtype=torch.float64), torch.full((3,), 2.0, dtype=torch.float64)
    view = p[1:]  # holds p's memory: the update must not reach it
    (first,) = traced(p, g)
    assert first is not p and torch.equal(view, torch.ones(2, dtype=torch.float64))
    del view
    (second,) = traced(p, g)
    assert second is p  # written in place
    torch.testing.assert_close(p, torch.zeros(3, dtype=torch.float64), rtol=0, atol=0)


def test_the_torch_hook_leaves_an_input_alone_that_an_output_shares() -> None:
    def update_and_view(p: torch.Tensor, g: torch.Tensor) -> tuple:
        return p - 0.5 * g, p.view(3)

    traced = _Traced(update_and_view, None, donated=[(0, 0)])
    p, g = torch.ones(3, dtype=torch.float64), torch.full((3,), 2.0, dtype=torch.float64)
    new, same = traced(p, g)
    assert new is not p and torch.equal(same, torch.ones(3, dtype=torch.float64))
