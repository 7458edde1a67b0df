"""Anomaly mode: off by default; when on, a NaN gradient raises where PyTorch's does, with
its message, and an error in backward warns with the stack of the forward call."""

from __future__ import annotations

import warnings

import pytest
import tensorweaver as tw
import torch


class Boom(tw.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise ValueError("boom in backward")


# (function of two tensors, values of a, values of b): each makes NaN in one backward rule.
NAN_CASES = {
    "sqrt at 0": (lambda a, b: (a.sqrt() * 0).sum() + b.sum(), [0.0, 1.0], [1.0, 2.0]),
    "deeper in the graph": (lambda a, b: ((a * b).sqrt() * 0).exp().sum(), [0.0, 1.0], [0.0, 2.0]),
    "second input of div": (lambda a, b: (a / b).sum(), [0.0, 1.0], [0.0, 2.0]),
    "log at 0 times 0": (lambda a, b: (a.log() * b).sum(), [0.0, 1.0], [0.0, 1.0]),
}


def _run(lib, case, **anomaly):
    """Forward and backward of ``case`` with ``lib``, in anomaly mode: (error, warnings)."""
    func, a, b = NAN_CASES[case]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autograd.set_detect_anomaly(True, **anomaly):
            x = lib.tensor(a, dtype=lib.float64, requires_grad=True)
            y = lib.tensor(b, dtype=lib.float64, requires_grad=True)
            loss = func(x, y)
            try:
                loss.backward()
            except RuntimeError as error:
                return error, [str(w.message) for w in caught]
    return None, [str(w.message) for w in caught]


@pytest.mark.parametrize("case", NAN_CASES)
def test_nan_raises_where_and_as_torch_does(backend, case):
    ours, our_warnings = _run(tw, case)
    theirs, their_warnings = _run(torch, case)
    assert ours is not None and theirs is not None
    assert str(ours) == str(theirs)
    assert str(ours).startswith("Function '") and "returned nan values in its" in str(ours)
    # Both warn with the forward call that made the failing node.
    header = f"Error detected in {str(theirs).split(chr(39))[1]}. Traceback of forward call"
    assert any(m.startswith(header) for m in their_warnings)
    assert any(m.startswith(header) and "loss = func(x, y)" in m for m in our_warnings)


@pytest.mark.parametrize("case", ["sqrt at 0", "second input of div"])
def test_check_nan_false_lets_nan_through_as_torch(backend, case):
    ours, _ = _run(tw, case, check_nan=False)
    theirs, _ = _run(torch, case, check_nan=False)
    assert ours is None and theirs is None


def test_off_by_default_nan_flows_silently(backend):
    assert not tw.autograd.is_anomaly_enabled()
    assert tw.autograd.is_anomaly_check_nan_enabled()
    x = tw.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (x.sqrt() * 0).sum().backward()
    assert x.grad.isnan().tolist() == [True, False]


def test_error_in_backward_warns_with_forward_stack(backend):
    with tw.autograd.set_detect_anomaly(True):
        x = tw.tensor([1.0, 2.0], requires_grad=True)
        out = Boom.apply(x).sum()  # the line the warning must show
        with pytest.warns(UserWarning) as caught, pytest.raises(ValueError, match="boom"):
            out.backward()
    messages = [str(w.message) for w in caught if "Error detected" in str(w.message)]
    assert len(messages) == 1
    message = messages[0]
    assert message.startswith(
        "Error detected in BoomBackward. Traceback of forward call that caused the error:\n"
    )
    assert __file__ in message and "out = Boom.apply(x).sum()" in message
    assert "tensorweaver" not in message.split("caused the error:")[1]  # the caller's frames


def test_nodes_made_before_anomaly_mode_have_no_stack(backend):
    x = tw.tensor([1.0], requires_grad=True)
    out = Boom.apply(x).sum()
    with tw.autograd.set_detect_anomaly(True):
        with pytest.warns(UserWarning, match="No forward pass information available"):
            with pytest.raises(ValueError):
                out.backward()


def test_mode_switches_as_in_pytorch(backend):
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        scope = tw.autograd.detect_anomaly(check_nan=False)
    assert not tw.autograd.is_anomaly_enabled()  # detect_anomaly acts on entering
    with scope:
        assert tw.autograd.is_anomaly_enabled()
        assert not tw.autograd.is_anomaly_check_nan_enabled()
    assert not tw.autograd.is_anomaly_enabled() and tw.autograd.is_anomaly_check_nan_enabled()
    tw.autograd.set_detect_anomaly(True)  # a plain call switches at once
    assert tw.autograd.is_anomaly_enabled()
    with tw.autograd.set_detect_anomaly(False):
        assert not tw.autograd.is_anomaly_enabled()
    assert tw.autograd.is_anomaly_enabled()  # restored on exit
    tw.autograd.set_detect_anomaly(False)
    assert not tw.autograd.is_anomaly_enabled()


def test_nodes_made_after_anomaly_mode_are_not_recorded(backend):
    with tw.autograd.set_detect_anomaly(True):
        pass
    x = tw.tensor([1.0], requires_grad=True)
    out = Boom.apply(x).sum()
    with tw.autograd.set_detect_anomaly(True):
        with pytest.warns(UserWarning, match="No forward pass information available"):
            with pytest.raises(ValueError):
                out.backward()


def test_create_graph_backward_checks_too(backend):
    x = tw.tensor([0.0, 1.0], requires_grad=True)
    with tw.autograd.set_detect_anomaly(True):
        y = x.sqrt() * 0
        with pytest.warns(UserWarning, match="Error detected in SqrtBackward0"):
            with pytest.raises(RuntimeError, match="'SqrtBackward0' returned nan values"):
                tw.autograd.grad(y.sum(), x, create_graph=True)
