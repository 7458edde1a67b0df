"""``tw.optim.swa_utils`` (AveragedModel, SWALR, update_bn, the avg functions) against
``torch.optim.swa_utils``: the same model weights in both, the same sequence of updates, and
the averaged parameters, buffers, counts and learning rates compared in float64."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver.optim import swa_utils

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def tw_float64() -> Iterator[None]:
    """float64 by default, as the folder sets torch: ``1 / (n_averaged + 1)`` of an int64
    count is a tensor of the default dtype in both libraries."""
    previous = tw.get_default_dtype()
    tw.set_default_dtype(tw.float64)
    try:
        yield
    finally:
        tw.set_default_dtype(previous)


def _model(lib: Any) -> Any:
    """Linear + BatchNorm1d + Linear, with float64 weights fixed by index."""
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    model = model.double()
    with lib.no_grad():
        for k, p in enumerate(model.parameters()):
            values = np.sin(np.arange(p.numel()) + 3.0 * k).reshape(tuple(p.shape))
            p.copy_(lib.tensor(values, dtype=lib.float64))
    return model


def _inputs(lib: Any, count: int) -> list:
    rng = np.random.default_rng(0)
    return [lib.tensor(rng.normal(size=(5, 3))) for _ in range(count)]


def _state(model: Any) -> dict[str, np.ndarray]:
    return {k: np.asarray(v.detach().cpu().tolist()) for k, v in model.state_dict().items()}


def _train_and_average(lib: Any, make_averaged: Callable[[Any, Any], Any]) -> dict:
    """Three SGD steps on the model (its BatchNorm statistics move too), folding the
    weights into the averaged model after each; the averaged model's state dict."""
    model = _model(lib)
    averaged = make_averaged(lib, model)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.1)
    for x in _inputs(lib, 3):
        optimizer.zero_grad()
        model(x).square().mean().backward()
        optimizer.step()
        averaged.update_parameters(model)
    return _state(averaged)


AVERAGES = {
    "swa": lambda lib, m: lib.optim.swa_utils.AveragedModel(m),
    "swa-buffers": lambda lib, m: lib.optim.swa_utils.AveragedModel(m, use_buffers=True),
    "ema-multi": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, multi_avg_fn=lib.optim.swa_utils.get_ema_multi_avg_fn(0.8), use_buffers=True
    ),
    "ema-per-tensor": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, avg_fn=lib.optim.swa_utils.get_ema_avg_fn(0.7)
    ),
    "swa-multi": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, multi_avg_fn=lib.optim.swa_utils.get_swa_multi_avg_fn()
    ),
    "custom-avg-fn": lambda lib, m: lib.optim.swa_utils.AveragedModel(
        m, avg_fn=lambda avg, cur, n: 0.5 * avg + 0.5 * cur + 0.01 * n
    ),
}


@pytest.mark.parametrize("kind", AVERAGES)
def test_averaged_model_matches_torch(backend: str, kind: str) -> None:
    got = _train_and_average(tw, AVERAGES[kind])
    expected = _train_and_average(torch, AVERAGES[kind])
    assert got.keys() == expected.keys()
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-12, atol=1e-14, err_msg=key)


def test_averaged_model_forward_and_count(backend: str) -> None:
    model = _model(tw).eval()
    averaged = swa_utils.AveragedModel(model)
    assert int(averaged.n_averaged) == 0 and averaged.n_averaged.dtype == tw.int64
    averaged.update_parameters(model)
    averaged.update_parameters(model)
    assert int(averaged.n_averaged) == 2
    x = _inputs(tw, 1)[0]
    np.testing.assert_allclose(averaged.eval()(x).tolist(), model(x).tolist(), rtol=1e-12)
    # the average is a copy: changing the model leaves it alone
    with tw.no_grad():
        next(model.parameters()).add_(1.0)
    assert not tw.equal(next(averaged.parameters()), next(model.parameters()))


def test_update_bn_matches_torch(backend: str) -> None:
    def recomputed(lib: Any) -> dict:
        model = _model(lib)
        loader = [(x, lib.zeros(5)) for x in _inputs(lib, 4)]  # (input, target) batches
        model.eval()
        lib.optim.swa_utils.update_bn(loader, model)
        assert not model.training  # the mode is restored
        assert model[1].momentum == 0.1
        return _state(model)

    got, expected = recomputed(tw), recomputed(torch)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-12, atol=1e-14, err_msg=key)


@pytest.mark.parametrize(
    ("swa_lr", "anneal_epochs", "strategy"),
    [(0.05, 3, "cos"), ([0.05, 0.2], 4, "linear"), (0.01, 0, "cos")],
)
def test_swalr_matches_torch(swa_lr: Any, anneal_epochs: int, strategy: str) -> None:
    def lrs(lib: Any) -> list:
        a, b = lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(3))
        optimizer = lib.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.3}], lr=1.0)
        scheduler = lib.optim.swa_utils.SWALR(
            optimizer, swa_lr=swa_lr, anneal_epochs=anneal_epochs, anneal_strategy=strategy
        )
        seen = []
        for epoch in range(7):
            optimizer.step()
            scheduler.step()
            seen.append(scheduler.get_last_lr())
            if epoch == 2:  # a state-dict round trip halfway
                state = scheduler.state_dict()
                assert "anneal_func" not in state
                scheduler.load_state_dict(state)
        return seen

    np.testing.assert_allclose(lrs(tw), lrs(torch), rtol=1e-15)


def test_errors_match_torch() -> None:
    model = tw.nn.Linear(2, 2)
    with pytest.raises(AssertionError, match="avg_fn or multi_avg_fn"):
        swa_utils.AveragedModel(
            model, avg_fn=swa_utils.get_swa_avg_fn(), multi_avg_fn=swa_utils.get_swa_multi_avg_fn()
        )
    with pytest.raises(ValueError, match="decay"):
        swa_utils.get_ema_multi_avg_fn(1.5)
    optimizer = tw.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy"):
        swa_utils.SWALR(optimizer, 0.01, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs"):
        swa_utils.SWALR(optimizer, 0.01, anneal_epochs=-1)
