"""binary_cross_entropy refuses what PyTorch refuses: probabilities or targets outside [0, 1]
(NaN included) and a target dtype unlike the input's, with RuntimeError; with logits, targets
are not checked, as in PyTorch. (Class-index targets out of range: tests/tensor/
test_index_checks.py.)"""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

P = np.array([[0.2, 0.7, 0.5], [0.9, 0.05, 0.4]])
T = np.array([[0.0, 1.0, 0.3], [1.0, 0.0, 0.8]])


def both(fn, *arrays):
    """``fn(F, *tensors)`` on torch, then tw: the built-in error class each raises."""
    classes = []
    for F, m in ((torch.nn.functional, torch), (tw.nn.functional, tw)):
        with pytest.raises(Exception) as error:
            fn(F, *(m.tensor(a) for a in arrays))
        classes.append(next(c for c in type(error.value).__mro__ if c.__module__ == "builtins"))
    return classes, str(error.value)


def bce(F, p, t, weight=None, reduction="mean"):
    return F.binary_cross_entropy(p, t, weight=weight, reduction=reduction)


def with_bad(array: np.ndarray, value: float) -> np.ndarray:
    out = array.copy()
    out[1, 2] = value
    return out


@pytest.mark.parametrize("value", [1.5, -0.1, math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("which", ["input", "target"])
@pytest.mark.parametrize("reduction", ["mean", "none"])
class TestBinaryCrossEntropyRange:
    def test_raises_like_torch(self, backend, which, value, reduction):
        p, t = (with_bad(P, value), T) if which == "input" else (P, with_bad(T, value))
        (theirs, ours), message = both(lambda F, p, t: bce(F, p, t, reduction=reduction), p, t)
        assert ours is theirs is RuntimeError
        assert f"all elements of {which} should be between 0 and 1" in message, message

    def test_raises_with_weight_and_gradient_like_torch(self, backend, which, value, reduction):
        p, t = (with_bad(P, value), T) if which == "input" else (P, with_bad(T, value))

        def call(F, p, t, w):
            return bce(F, p.requires_grad_(), t, weight=w, reduction=reduction)

        (theirs, ours), message = both(call, p, t, np.ones(3))
        assert ours is theirs is RuntimeError
        assert which in message, message


@pytest.mark.parametrize("dtypes", [("float64", "float32"), ("float32", "float64")])
def test_binary_cross_entropy_refuses_a_target_dtype_unlike_the_input_like_torch(backend, dtypes):
    (theirs, ours), message = both(bce, P.astype(dtypes[0]), T.astype(dtypes[1]))
    assert ours is theirs is RuntimeError
    assert dtypes[0] in message and dtypes[1] in message, message


def test_binary_cross_entropy_checks_on_cunumeric():
    with entered("cunumeric"):
        with pytest.raises(RuntimeError, match="target should be between 0 and 1"):
            tw.nn.functional.binary_cross_entropy(tw.tensor(P), tw.tensor(with_bad(T, 1.5)))
        with pytest.raises(RuntimeError, match="input should be between 0 and 1"):
            tw.nn.functional.binary_cross_entropy(tw.tensor(with_bad(P, math.nan)), tw.tensor(T))


@pytest.mark.parametrize(
    "call",
    [
        lambda F, x, t, w: F.cross_entropy(x, t, label_smoothing=0.1),
        lambda F, x, t, w: F.cross_entropy(x, t, weight=w),
        lambda F, x, t, w: F.nll_loss(x, t),
        lambda F, x, t, w: F.nll_loss(x, t, weight=w),
    ],
)
def test_targets_on_another_device_are_a_device_error(call) -> None:
    # They reached torch's gather with a NumPy array: TypeError "argument 'index' must be
    # Tensor, not numpy.ndarray"; PyTorch raises its same-device RuntimeError.
    x = tw.randn(4, 5, device="torch:cpu", requires_grad=True)
    target = tw.tensor([1, 0, 3, 2], device="numpy")
    with pytest.raises(RuntimeError, match="one device"):
        call(tw.nn.functional, x, target, tw.ones(5, device="torch:cpu"))
