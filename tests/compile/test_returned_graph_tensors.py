"""A compiled function (no training step: it runs no backward) whose result the caller
backpropagates: on every call the results, and the gradients the caller's backward
accumulates, are the eager function's bit for bit, whatever it returns (one tensor, a
tuple, list or dict of them, a tensor and a Python number, an empty tuple, nothing)."""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import nn
from tensorweaver.compiler import CompileWarning

CALLS = 5  # traces, then replays
DEVICES = ["numpy", "torch:cpu"]

#: name -> (function of (module, w, x), whether the graph replays it)
FUNCTIONS: dict[str, tuple[Callable, bool]] = {
    "scalar": (lambda m, w, x: (w * 2.0).sum(), True),  # its backward saves no value
    "product": (lambda m, w, x: (w * w).sum(), True),
    "vector": (lambda m, w, x: w * 2.0, True),
    "matrix": (lambda m, w, x: (w * w).tanh() @ w.T, True),
    "slice": (lambda m, w, x: (w * 2.0)[1:], True),
    "module": (lambda m, w, x: m(x).tanh().sum(), True),
    "module_and_input": (lambda m, w, x: (m(x) * w[:2, :3]).exp().sum(), True),
    "empty_tuple": (lambda m, w, x: (), True),
    "nothing": (lambda m, w, x: None, True),
    "nothing_after_ops": (lambda m, w, x: (w * 2.0).sum() and None, True),
    "tuple": (lambda m, w, x: ((w * 2.0).sum(), (w * w).sum()), False),
    "one_tuple": (lambda m, w, x: ((w * 3.0).sum(),), False),
    "list": (lambda m, w, x: [(w * 2.0).sum(), w.exp()], False),
    "dict": (lambda m, w, x: {"a": (w * 2.0).sum(), "b": m(x).sin()}, False),
    "tensor_and_number": (lambda m, w, x: ((w * 2.0).sum(), 3.5), False),
}


def _leaves(value: Any) -> list:
    if type(value) in (tuple, list):
        return [leaf for item in value for leaf in _leaves(item)]
    if type(value) is dict:
        return [leaf for item in value.values() for leaf in _leaves(item)]
    return [value]


def _host(t: Any) -> Any:
    return None if t is None else np.asarray(t.detach()).copy()


def _calls(name: str, device: str, backend: str | None) -> tuple[list, Any]:
    """What the function returns and the gradients after each of CALLS calls and the
    caller's backward of every returned tensor that requires grad (a ramp as its output
    gradient, different per call); the compiled function, or None, eagerly."""
    tw.manual_seed(0)
    with tw.device(device):
        module = nn.Linear(4, 3).double()
    w = tw.randn(3, 4, dtype=tw.float64, device=device, requires_grad=True)
    x = tw.randn(2, 4, dtype=tw.float64, device=device)
    fn, _ = FUNCTIONS[name]
    compiled = None if backend == "eager" else tw.compile(fn, backend=backend)
    seen = []
    for i in range(CALLS):
        out = (compiled or fn)(module, w, x)
        for t in _leaves(out):
            if isinstance(t, tw.Tensor) and t.requires_grad:
                ramp = tw.arange(t.numel(), dtype=t.dtype, device=device).reshape(t.shape)
                t.backward(ramp * 0.37 + i + 1.5)
        seen.append(type(out).__name__)
        seen.append([_host(t) if isinstance(t, tw.Tensor) else t for t in _leaves(out)])
        seen.append([_host(p.grad) for p in (w, *module.parameters())])
    return seen, compiled


def _assert_same(got: list, want: list) -> None:
    assert len(got) == len(want)
    for a, b in zip(got, want):
        if isinstance(b, list):
            _assert_same(a, b)
        elif isinstance(b, np.ndarray):
            assert isinstance(a, np.ndarray) and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_results_and_gradients_as_eager(name: str, device: str) -> None:
    # The core's replay on both; NumPy's compile_graph hook too (torch's inductor may
    # round differently, see test_compile_graph.py).
    backend = "tensorweaver" if device == "torch:cpu" else None
    want, _ = _calls(name, device, "eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, compiled = _calls(name, device, backend)
    _assert_same(got, want)
    replayed = FUNCTIONS[name][1]
    if replayed:
        assert compiled.traces < CALLS  # the later calls replayed the graph
        assert not [w for w in caught if issubclass(w.category, CompileWarning)]
    else:  # several results to differentiate: eager, and it says so
        assert compiled.traces == 2
        assert any("several values that require grad" in str(w.message) for w in caught)


@pytest.mark.parametrize("device", DEVICES)
def test_issue_snippet_replays(device: str) -> None:
    """The reported snippet: a sum of an argument times a number, whose backward needs no
    value of the forward (the replay returned ``(,)``, a SyntaxError)."""
    w = tw.randn(3, 4, dtype=tw.float64, device=device, requires_grad=True)
    hc = tw.compile(lambda w: (w * 2.0).sum(), backend="tensorweaver")
    for i in range(4):
        out = hc(w)
        out.backward()
        np.testing.assert_array_equal(np.asarray(out.detach()), np.asarray(w.detach() * 2.0).sum())
        np.testing.assert_array_equal(np.asarray(w.grad), np.full((3, 4), 2.0 * (i + 1)))
    assert hc.traces == 3


@pytest.mark.parametrize("device", DEVICES)
def test_second_backward_and_grad_mode(device: str) -> None:
    """Through a replayed result: a backward with retain_graph=True then another,
    autograd.grad of a function of it, and calls under no_grad in between."""

    def calls(compiled: bool) -> list:
        tw.manual_seed(1)
        w = tw.randn(3, 4, dtype=tw.float64, device=device, requires_grad=True)
        f = lambda w: (w * w).tanh().sum()  # noqa: E731
        f = tw.compile(f, backend="tensorweaver") if compiled else f
        seen = []
        for i in range(6):
            if i % 3 == 2:
                with tw.no_grad():
                    out = f(w)
                seen.append(out.requires_grad)
            elif i % 3 == 1:
                out = f(w)
                seen.append(_host(tw.autograd.grad(out * out, [w])[0]))
            else:
                out = f(w)
                out.backward(retain_graph=True)
                (out * 3.0).backward()
            seen += [_host(out), _host(w.grad)]
        return seen

    _assert_same(calls(True), calls(False))
