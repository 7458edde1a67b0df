"""Loss layers against torch.nn (float64): values and gradients, every reduction."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import assert_close, check_layer, host
from tensorweaver import nn

rng = np.random.default_rng(0)
REDUCTIONS = ["mean", "sum", "none"]


def _check(name: str, input: np.ndarray, target: np.ndarray, **kwargs: object) -> None:
    """Build both losses (tensor-valued kwargs given as arrays) and compare them."""
    tw_kwargs = {k: tw.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
    torch_kwargs = {
        k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()
    }
    check_layer(
        getattr(nn, name)(**tw_kwargs), getattr(torch.nn, name)(**torch_kwargs), input, target
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("MSELoss", {}),
        ("L1Loss", {}),
        ("SmoothL1Loss", {"beta": 0.5}),
        ("HuberLoss", {"delta": 0.7}),
    ],
)
def test_regression_losses(backend: str, name: str, kwargs: dict, reduction: str) -> None:
    _check(
        name,
        rng.standard_normal((4, 3)),
        rng.standard_normal((4, 3)),
        reduction=reduction,
        **kwargs,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy(backend: str, reduction: str) -> None:
    logits = rng.standard_normal((6, 4))
    target = np.array([0, 3, 1, -100, 2, 3])
    weight = rng.uniform(0.5, 2.0, size=4)
    _check("CrossEntropyLoss", logits, target, reduction=reduction)
    _check(
        "CrossEntropyLoss", logits, target, weight=weight, reduction=reduction, label_smoothing=0.1
    )


def test_cross_entropy_options(backend: str) -> None:
    logits = rng.standard_normal((2, 4, 3))  # (N, C, d1)
    target = np.array([[1, 2, 0], [3, 3, 1]])
    _check("CrossEntropyLoss", logits, target, ignore_index=3)
    probabilities = rng.dirichlet(np.ones(4), size=5)
    _check("CrossEntropyLoss", rng.standard_normal((5, 4)), probabilities, label_smoothing=0.2)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(backend: str, reduction: str) -> None:
    log_probs = np.log(rng.dirichlet(np.ones(5), size=4))
    target = np.array([4, 0, 2, 2])
    _check("NLLLoss", log_probs, target, reduction=reduction)
    _check(
        "NLLLoss",
        log_probs,
        target,
        weight=rng.uniform(0.5, 2, 5),
        ignore_index=2,
        reduction=reduction,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(backend: str, reduction: str) -> None:
    probs = rng.uniform(0.05, 0.95, size=(4, 3))
    target = rng.uniform(0, 1, size=(4, 3))
    _check("BCELoss", probs, target, reduction=reduction)
    _check("BCELoss", probs, target, weight=rng.uniform(0.5, 2, 3), reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(backend: str, reduction: str) -> None:
    logits = rng.standard_normal((4, 3)) * 3
    target = (rng.uniform(size=(4, 3)) > 0.5).astype(np.float64)
    _check("BCEWithLogitsLoss", logits, target, reduction=reduction)
    _check(
        "BCEWithLogitsLoss",
        logits,
        target,
        weight=rng.uniform(0.5, 2, 3),
        pos_weight=rng.uniform(0.5, 3, 3),
        reduction=reduction,
    )


@pytest.mark.filterwarnings("ignore:.*'batchmean'")  # both libraries warn about 'mean'
@pytest.mark.parametrize("reduction", ["batchmean", "sum", "mean", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(backend: str, reduction: str, log_target: bool) -> None:
    log_q = np.log(rng.dirichlet(np.ones(4), size=3))
    p = rng.dirichlet(np.ones(4), size=3)
    _check(
        "KLDivLoss",
        log_q,
        np.log(p) if log_target else p,
        reduction=reduction,
        log_target=log_target,
    )


def test_legacy_reduction_flags(backend: str) -> None:
    x, y = tw.randn(3, 2), tw.randn(3, 2)
    with pytest.warns(UserWarning, match="reduction='sum'"):
        loss = nn.MSELoss(size_average=False)
    assert loss.reduction == "sum"
    assert_close(loss(x, y), ((host(x) - host(y)) ** 2).sum())
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert nn.L1Loss(reduce=False).reduction == "none"


def test_loss_weights_are_buffers(backend: str) -> None:
    loss = nn.BCEWithLogitsLoss(pos_weight=tw.ones(3))
    assert [n for n, _ in loss.named_buffers()] == ["pos_weight"]
    assert list(loss.state_dict()) == list(
        torch.nn.BCEWithLogitsLoss(pos_weight=torch.ones(3)).state_dict()
    )
    assert repr(nn.CrossEntropyLoss()) == repr(torch.nn.CrossEntropyLoss()) == "CrossEntropyLoss()"


def test_loss_classes_have_torchs_bases() -> None:
    """Each loss class derives from the same torch-named bases as torch's (isinstance checks
    against ``_WeightedLoss`` agree); tw may add private bases torch does not have."""
    import torch.nn.modules.loss as torch_losses

    for name, torch_class in vars(torch_losses).items():
        if not (
            isinstance(torch_class, type)
            and issubclass(torch_class, torch.nn.Module)
            and torch_class.__module__ == torch_losses.__name__
            and not name.startswith("_")
        ):
            continue
        tw_names = {base.__name__ for base in getattr(nn, name).__mro__}
        torch_names = {base.__name__ for base in torch_class.__mro__}
        assert torch_names <= tw_names, (name, torch_names - tw_names)
        torch_module_names = set(dir(torch_losses))
        assert not (tw_names - torch_names) & torch_module_names, (name, tw_names - torch_names)
