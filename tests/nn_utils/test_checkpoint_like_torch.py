"""``tw.utils.checkpoint`` against ``torch.utils.checkpoint`` 2.13 on torch:cpu (whose
stream is PyTorch's): outputs, gradients and dropout masks equal to PyTorch's with and
without checkpointing, the random stream left where PyTorch leaves it, the warning without
``use_reentrant``, and the arguments each variant checks."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

X = np.random.RandomState(0).randn(3, 4)


def block(m: Any) -> Any:
    layer = m.nn.Linear(4, 4).double()
    with m.no_grad():
        layer.weight.copy_(m.tensor(np.random.RandomState(1).randn(4, 4)))
        layer.bias.zero_()
    return layer, m.nn.Dropout(0.5)


def run(m: Any, mode: Any, **kwargs: Any) -> list:
    """Output, input and weight gradients and the next draw of a dropout block, checkpointed
    with ``use_reentrant=mode`` (``"off"``: not checkpointed)."""
    m.manual_seed(3)
    layer, dropout = block(m)
    x = m.tensor(X, requires_grad=True)

    def fn(t: Any, scale: Any) -> Any:
        return dropout(layer(t * scale)).tanh(), t.sum()

    scale = m.tensor(2.0, dtype=m.float64)
    if mode == "off":
        out, s = fn(x, scale)
    else:
        out, s = m.utils.checkpoint.checkpoint(fn, x, scale, use_reentrant=mode, **kwargs)
    (out.pow(2).sum() + s).backward()
    values = [out, x.grad, layer.weight.grad, m.rand(2)]
    return [np.asarray(v.detach()) if m is tw else v.detach().numpy() for v in values]


@pytest.mark.parametrize("mode", ["off", True, False])
def test_outputs_gradients_and_masks_like_torch(mode: Any) -> None:
    with entered("torch:cpu"):
        expected, got = run(torch, mode), run(tw, mode)
        plain = run(tw, "off")
    for g, e, p in zip(got, expected, plain):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(g, p, rtol=1e-12, atol=1e-14)


def caught(call: Any) -> list:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            call()
        except Exception as exc:  # noqa: BLE001 - the class is the result compared
            return [type(exc)]
    return sorted(w.category.__name__ for w in seen)


CALLS: dict[str, Any] = {
    "no use_reentrant": lambda m, x: m.utils.checkpoint.checkpoint(lambda t: t.exp(), x),
    "sequential no use_reentrant": lambda m, x: m.utils.checkpoint.checkpoint_sequential(
        m.nn.Sequential(m.nn.Tanh()), 1, x
    ),
    "reentrant bad determinism_check": lambda m, x: m.utils.checkpoint.checkpoint(
        lambda t: t.exp(), x, use_reentrant=True, determinism_check="bogus"
    ),
    "non-reentrant bad determinism_check": lambda m, x: m.utils.checkpoint.checkpoint(
        lambda t: t.exp(), x, use_reentrant=False, determinism_check="bogus"
    ),
    "reentrant kwargs": lambda m, x: m.utils.checkpoint.checkpoint(
        lambda t, s=1: t * s, x, s=2, use_reentrant=True
    ),
    "reentrant context_fn": lambda m, x: m.utils.checkpoint.checkpoint(
        lambda t: t, x, use_reentrant=True, context_fn=lambda: (None, None)
    ),
    "reentrant no input needs grad": lambda m, x: m.utils.checkpoint.checkpoint(
        lambda t: t.exp(), x.detach(), use_reentrant=True
    ),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_warnings_and_errors_like_torch(name: str) -> None:
    """(``reentrant bad determinism_check`` raised before: PyTorch's reentrant variant does
    not look at it.)"""
    expected = caught(lambda: CALLS[name](torch, torch.ones(2, requires_grad=True)))
    assert caught(lambda: CALLS[name](tw, tw.ones(2, requires_grad=True))) == expected


@pytest.mark.parametrize("mode", [True, False])
def test_sequential_like_torch(mode: bool) -> None:
    results = []
    for m in (torch, tw):
        net = m.nn.Sequential(
            m.nn.Linear(4, 5), m.nn.Tanh(), m.nn.Linear(5, 3), m.nn.ReLU(), m.nn.Linear(3, 2)
        ).double()
        rs = np.random.RandomState(1)
        with m.no_grad():
            for p in net.parameters():
                p.copy_(m.tensor(rs.randn(*p.shape)))
        x = m.tensor(X, requires_grad=True)
        out = m.utils.checkpoint.checkpoint_sequential(net, 2, x, use_reentrant=mode)
        out.sum().backward()
        grads = [x.grad, net[0].weight.grad, net[4].bias.grad]
        results.append([np.asarray(v.detach().double()) for v in (out, *grads)])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("mode", [True, False])
def test_non_tensor_outputs_and_inputs(mode: bool) -> None:
    for m in (torch, tw):
        x = m.tensor(X, requires_grad=True)
        out = m.utils.checkpoint.checkpoint(
            lambda t, k: (t.exp().sum(), k, None, "s"), x, 3, use_reentrant=mode
        )
        out[0].backward()
        assert out[1:] == (3, None, "s")
        np.testing.assert_allclose(np.asarray(x.grad.detach()), np.exp(X), rtol=1e-12)


def test_non_reentrant_in_place_on_an_input() -> None:
    """(Raised before: the function ran on a leaf copy of the input.)"""
    x = tw.ones(2, requires_grad=True)
    out = tw.utils.checkpoint.checkpoint(lambda t: t.mul_(2), x.clone(), use_reentrant=False)
    out.sum().backward()
    np.testing.assert_array_equal(np.asarray(x.grad), [2.0, 2.0])


def _no_preserve(m: Any, mode: bool) -> list:
    x = m.tensor(X, requires_grad=True)
    out = m.utils.checkpoint.checkpoint(
        lambda t: m.nn.functional.dropout(t, 0.5) * t,
        x,
        use_reentrant=mode,
        preserve_rng_state=False,
    )
    out.sum().backward()
    return [out, x.grad, m.rand(3)]


def _batch_norm(m: Any, mode: bool) -> list:
    norm = m.nn.BatchNorm1d(4).double()
    x = m.tensor(X, requires_grad=True)
    out = m.utils.checkpoint.checkpoint(norm, x, use_reentrant=mode)
    out.pow(3).sum().backward()
    return [out, x.grad, norm.running_mean, norm.running_var, norm.weight.grad]


def _input_without_grad(m: Any, mode: bool) -> list:
    x, y = m.tensor(X, requires_grad=True), m.tensor(X * 2)
    m.utils.checkpoint.checkpoint(lambda a, b: (a * b).sum(), x, y, use_reentrant=mode).backward()
    return [x.grad, m.zeros(1) if y.grad is None else y.grad]


SCENARIOS = {"no preserve": _no_preserve, "batch norm": _batch_norm}
SCENARIOS["input without grad"] = _input_without_grad


@pytest.mark.parametrize("mode", [True, False])
@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenarios_like_torch(name: str, mode: bool) -> None:
    """Values, gradients, running statistics and the stream after, on torch:cpu."""
    with entered("torch:cpu"):
        results = []
        for m in (torch, tw):
            m.manual_seed(0)
            results.append([np.asarray(v.detach().double()) for v in SCENARIOS[name](m, mode)])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)


def test_non_reentrant_detached_output_does_not_require_grad() -> None:
    """(Failed before: the forward ran without grad, and every float output required it.)"""
    x = tw.ones(2, requires_grad=True)
    out = tw.utils.checkpoint.checkpoint(
        lambda t: (t.exp(), t.detach() * 2), x, use_reentrant=False
    )
    assert out[0].requires_grad and not out[1].requires_grad


HELPERS: dict[str, Any] = {
    "CheckpointFunction": lambda m, x, y: m.utils.checkpoint.CheckpointFunction.apply(
        lambda a, b: (a * b * 3).sum(), True, x, y
    ),
    "detach_variable": lambda m, x, y: [
        (t.requires_grad, t.is_leaf, t is x) if isinstance(t, m.Tensor) else t
        for t in m.utils.checkpoint.detach_variable((x, 3, y))
    ],
    "detach_variable list": lambda m, x, y: m.utils.checkpoint.detach_variable([x]),
    "check_backward_validity": lambda m, x, y: m.utils.checkpoint.check_backward_validity([y, 3]),
    "check_backward_validity fine": lambda m, x, y: m.utils.checkpoint.check_backward_validity([x]),
}


def helper_outcome(m: Any, name: str) -> tuple:
    """(warning classes, value or exception class) of helper ``name`` in library ``m``."""
    # small integers: sums exact whatever the order
    whole = np.arange(12.0).reshape(3, 4)
    x, y = m.tensor(whole, requires_grad=True), m.tensor(whole - 5)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            value = HELPERS[name](m, x, y)
        except Exception as exc:  # noqa: BLE001 - the class is the result compared
            value = type(exc)
    if isinstance(value, m.Tensor):
        value.backward()
        value = (np.asarray(value.detach()).tolist(), np.asarray(x.grad).tolist())
    return sorted(w.category.__name__ for w in seen), value


@pytest.mark.parametrize("name", list(HELPERS))
def test_public_helpers_like_torch(name: str) -> None:
    """The helpers in PyTorch's ``__all__`` that older code calls (missing before)."""
    assert helper_outcome(tw, name) == helper_outcome(torch, name)
