"""PyTorch's autograd names that ported programs use: ``Variable``, the modules
``gradcheck``/``functional``/``grad_mode``/``anomaly_mode``, and the function/module pair
named ``gradcheck``."""

from __future__ import annotations

import importlib
import warnings

import pytest
import tensorweaver as tw
import torch


def test_variable_returns_a_detached_tensor(backend):
    x = tw.tensor([1.0, 2.0])
    for lib, base in ((tw, x), (torch, torch.tensor([1.0, 2.0]))):
        v = lib.autograd.Variable(base, requires_grad=True)
        assert type(v) is type(base) and v is not base
        assert v.requires_grad and v.is_leaf and not base.requires_grad
        assert isinstance(base, lib.autograd.Variable)
        assert not isinstance(3, lib.autograd.Variable)
        assert not lib.autograd.Variable(base).requires_grad
    y = tw.tensor([1.0, 2.0], requires_grad=True) * 3
    v = tw.autograd.Variable(y)
    assert v.grad_fn is None and not v.requires_grad and v.tolist() == [3.0, 6.0]
    v = tw.autograd.Variable(x, True)  # positional requires_grad, as in old programs
    (v * v).sum().backward()
    assert v.grad.tolist() == [2.0, 4.0]


def test_variable_errors_and_defaults_as_in_pytorch(backend):
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        tw.autograd.Variable([1.0, 2.0])
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        torch.autograd.Variable([1.0, 2.0])
    assert tuple(tw.autograd.Variable().shape) == tuple(torch.autograd.Variable().shape) == (0,)
    with pytest.warns(UserWarning, match="volatile was removed"):
        tw.autograd.Variable(tw.tensor([1.0]), volatile=True)


@pytest.mark.parametrize(
    "module, names",
    [
        ("autograd.gradcheck", ["gradcheck", "gradgradcheck", "GradcheckError"]),
        ("autograd.functional", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"]),
        ("autograd.grad_mode", ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"]),
        ("autograd.anomaly_mode", ["detect_anomaly", "set_detect_anomaly"]),
    ],
)
def test_submodules_import_like_torch(module, names):
    ours = importlib.import_module(f"tensorweaver.{module}")
    theirs = importlib.import_module(f"torch.{module}")
    for name in names:
        assert hasattr(theirs, name)  # the name really is PyTorch's
        assert getattr(ours, name) is not None


def test_gradcheck_is_the_function_and_the_module():
    from tensorweaver.autograd.gradcheck import gradcheck as from_module

    assert tw.autograd.gradcheck is from_module and callable(tw.autograd.gradcheck)
    assert (
        tw.autograd.gradgradcheck
        is importlib.import_module("tensorweaver.autograd.gradcheck").gradgradcheck
    )
    assert issubclass(tw.autograd.GradcheckError, RuntimeError)
    assert callable(torch.autograd.gradcheck)  # PyTorch arranges it the same way


def test_grad_mode_no_grad_from_the_module(backend):
    from tensorweaver.autograd.grad_mode import no_grad

    x = tw.tensor([1.0], requires_grad=True)
    with no_grad():
        assert not (x * 2).requires_grad
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tw.autograd.grad_mode.enable_grad is tw.enable_grad
