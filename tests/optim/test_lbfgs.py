"""LBFGS against ``torch.optim.LBFGS`` in float64: the same closure, the same trajectory.

Two problems: linear least squares over two parameters (a matrix and a bias), and the
Rosenbrock function, each with the fixed step and with the strong-Wolfe line search.
After every ``step(closure)`` the parameters, the returned loss and the evaluation and
iteration counts must agree with PyTorch's.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import optim
from tw_backends import FAST_UNLESS_ASKED, entered

torch = pytest.importorskip("torch")


@pytest.fixture(params=FAST_UNLESS_ASKED)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """The fast backends (cuPyNumeric too when asked): L-BFGS runs hundreds of small ops."""
    with entered(request.param) as spec:
        yield spec


RNG = np.random.default_rng(7)
X, Y = RNG.standard_normal((12, 3)), RNG.standard_normal((12, 2))
W0, B0 = RNG.standard_normal((3, 2)), RNG.standard_normal(2)


def _least_squares(lib: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    x, y = lib.tensor(X), lib.tensor(Y)
    params = [lib.tensor(W0, requires_grad=True), lib.tensor(B0, requires_grad=True)]
    return params, lambda p: ((x @ p[0] + p[1] - y) ** 2).sum()


def _rosenbrock(lib: Any) -> tuple[list[Any], Callable[[list[Any]], Any]]:
    params = [lib.tensor([-1.5, 2.0], dtype=lib.float64, requires_grad=True)]
    return params, lambda p: (1 - p[0][0]) ** 2 + 100 * (p[0][1] - p[0][0] ** 2) ** 2


PROBLEMS = {"least_squares": _least_squares, "rosenbrock": _rosenbrock}
CASES = [
    ("least_squares", {"lr": 0.05, "max_iter": 6}),
    ("least_squares", {"line_search_fn": "strong_wolfe", "history_size": 3}),
    ("rosenbrock", {"lr": 0.002, "max_iter": 10, "history_size": 4}),
    ("rosenbrock", {"line_search_fn": "strong_wolfe", "max_iter": 8}),
    ("rosenbrock", {"line_search_fn": "strong_wolfe", "max_iter": 30, "max_eval": 12}),
]
IDS = [f"{problem}-{i}" for i, (problem, _) in enumerate(CASES)]


def _setup(lib: Any, problem: str, kwargs: dict[str, Any]) -> tuple[list[Any], Any, Callable]:
    params, loss_fn = PROBLEMS[problem](lib)
    opt = (optim if lib is tw else torch.optim).LBFGS(params, **kwargs)

    def closure() -> Any:
        opt.zero_grad()
        loss = loss_fn(params)
        loss.backward()
        return loss

    return params, opt, closure


@pytest.mark.parametrize(("problem", "kwargs"), CASES, ids=IDS)
def test_trajectory_matches_torch(backend: str, problem: str, kwargs: dict[str, Any]) -> None:
    ours, opt, closure = _setup(tw, problem, kwargs)
    theirs, ref, ref_closure = _setup(torch, problem, kwargs)
    first = None
    for _ in range(4):
        loss, ref_loss = opt.step(closure), ref.step(ref_closure)
        assert loss.item() == pytest.approx(ref_loss.item(), rel=1e-10)
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-9)
        state, ref_state = opt.state[ours[0]], ref.state[theirs[0]]
        assert (state["func_evals"], state["n_iter"]) == (
            ref_state["func_evals"],
            ref_state["n_iter"],
        )
        first = loss.item() if first is None else first
    assert closure().item() < first  # it did optimise


def test_state_dict_round_trip_resumes_identically(backend: str, tmp_path: Path) -> None:
    kwargs = {"line_search_fn": "strong_wolfe", "max_iter": 4, "history_size": 3}
    ours, opt, closure = _setup(tw, "rosenbrock", kwargs)
    for _ in range(2):
        opt.step(closure)
    tw.save(opt.state_dict(), tmp_path / "lbfgs.safetensors")
    resumed, restored, resumed_closure = _setup(tw, "rosenbrock", {})
    with tw.no_grad():
        resumed[0].copy_(ours[0].detach())
    restored.load_state_dict(tw.load(tmp_path / "lbfgs.safetensors"))
    assert restored.param_groups[0]["history_size"] == 3
    history = restored.state[resumed[0]]["old_dirs"]
    assert history and all(h.device == backend and h.dtype is tw.float64 for h in history)
    for _ in range(2):
        assert opt.step(closure).item() == restored.step(resumed_closure).item()
        np.testing.assert_array_equal(ours[0].detach().numpy(), resumed[0].detach().numpy())


def test_signature_and_defaults_match_torch() -> None:
    ours, theirs = inspect.signature(optim.LBFGS), inspect.signature(torch.optim.LBFGS)
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == [
        (p.name, p.kind, p.default) for p in theirs.parameters.values()
    ]
    p, ref_p = tw.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    assert optim.LBFGS([p]).defaults == torch.optim.LBFGS([ref_p]).defaults


def test_bad_arguments_raise() -> None:
    a, b = tw.ones(2, requires_grad=True), tw.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="'backtracking'"):
        optim.LBFGS([a], line_search_fn="backtracking")
    with pytest.raises(ValueError, match="param group"):
        optim.LBFGS([{"params": [a]}, {"params": [b]}])
    with pytest.raises(ValueError, match="param group"):
        optim.LBFGS([a]).add_param_group({"params": [b]})
    with pytest.raises(RuntimeError, match="closure"):
        optim.LBFGS([a]).step(None)
