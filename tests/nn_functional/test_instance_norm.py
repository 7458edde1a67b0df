"""``instance_norm``, ``local_response_norm``, the legacy cross-map LRN and ``batch_norm`` of
5-D input against PyTorch in float64 (float32 to its precision): outputs, gradients and the
running statistics updated in place."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import tensorweaver.nn.functional as twF
import torch
import torch.nn.functional as torchF
from functional_reference import assert_close, check, gradcheck, randn
from tensorweaver.nn.functional.local_response import cross_map_lrn2d
from tw_backends import entered

SHAPES = [(3, 4, 5), (2, 3, 4, 5), (2, 3, 3, 4, 2)]


def _stats(channels: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(9)
    return rng.standard_normal(channels), rng.random(channels) + 0.5


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("affine", [True, False])
def test_instance_norm_with_input_stats(backend: str, shape: tuple, affine: bool) -> None:
    c = shape[1]
    arrays = [randn(*shape), randn(c, seed=1), randn(c, seed=2)] if affine else [randn(*shape)]

    def fn(F, x, *affine_params):
        return F.instance_norm(x, *((None, None) + tuple(affine_params)), eps=1e-3)

    check(fn, *arrays)


@pytest.mark.parametrize("use_input_stats", [True, False])
@pytest.mark.parametrize("momentum", [0.1, 0.7])
def test_instance_norm_running_stats(backend: str, use_input_stats: bool, momentum: float) -> None:
    x = randn(3, 4, 5, 6)
    mean, var = _stats(4)
    ours = [tw.tensor(mean), tw.tensor(var)]
    theirs = [torch.tensor(mean), torch.tensor(var)]
    check(
        lambda F, x, w, b: F.instance_norm(
            x,
            *(ours if F is twF else theirs),
            w,
            b,
            use_input_stats=use_input_stats,
            momentum=momentum,
        ),
        x,
        randn(4, seed=3),
        randn(4, seed=4),
    )
    # check ran each library once: the statistics moved (or stayed) the same way.
    assert_close(ours[0], theirs[0])
    assert_close(ours[1], theirs[1])


def test_instance_norm_gradient_matches_finite_differences(backend: str) -> None:
    gradcheck(lambda F, x: F.instance_norm(x), randn(2, 3, 4, 3))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda F, x: F.instance_norm(x[:, :, :1, :1]), "more than 1 spatial element"),
        (lambda F, x: F.instance_norm(x, use_input_stats=False), "running_mean and running_var"),
    ],
)
def test_instance_norm_errors(call, match: str) -> None:
    x = randn(2, 3, 4, 4)
    with pytest.raises((ValueError, RuntimeError)) as theirs:
        call(torchF, torch.tensor(x))
    with pytest.raises(type(theirs.value), match=match):
        call(twF, tw.tensor(x))


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_5d(backend: str, training: bool) -> None:
    mean, var = _stats(3)
    ours = [tw.tensor(mean), tw.tensor(var)]
    theirs = [torch.tensor(mean), torch.tensor(var)]
    check(
        lambda F, x, w, b: F.batch_norm(
            x, *(ours if F is twF else theirs), w, b, training=training, momentum=0.3, eps=1e-4
        ),
        randn(2, 3, 3, 4, 2),
        randn(3, seed=1),
        randn(3, seed=2),
    )
    assert_close(ours[0], theirs[0])
    assert_close(ours[1], theirs[1])


@pytest.mark.parametrize("shape", SHAPES + [(2, 7, 3, 2, 2, 2)])
@pytest.mark.parametrize("size", [1, 2, 3, 4, 9])
def test_local_response_norm(backend: str, shape: tuple, size: int) -> None:
    check(lambda F, x: F.local_response_norm(x, size, alpha=0.3, beta=0.6, k=1.5), randn(*shape))


def test_local_response_norm_defaults_and_errors(backend: str) -> None:
    check(lambda F, x: F.local_response_norm(x, 3), randn(2, 5, 4, 4, scale=10))
    with pytest.raises(ValueError):
        torchF.local_response_norm(torch.zeros(3, 4), 2)
    with pytest.raises(ValueError, match="3D or higher"):
        twF.local_response_norm(tw.zeros(3, 4), 2)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 8])
def test_cross_map_lrn2d_forward_is_pytorchs(backend: str, size: int) -> None:
    # PyTorch's legacy forward keeps channel 0 in every window: ours computes the same.
    x = randn(2, 7, 3, 4)
    expected = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.7, k=2.0)(torch.tensor(x))
    assert_close(cross_map_lrn2d(tw.tensor(x), size, 0.5, 0.7, 2.0), expected)


def test_cross_map_lrn2d_gradient_matches_finite_differences(backend: str) -> None:
    # PyTorch's hand-written backward is not its forward's gradient (torch.autograd.gradcheck
    # fails on it); ours is the exact gradient of the same forward.
    def lrn(F, x):
        return cross_map_lrn2d(x, 3, 0.5, 0.75, 1.0)

    gradcheck(lrn, randn(2, 5, 2, 3))


def test_float32_stays_float32(backend: str) -> None:
    x = randn(2, 5, 4, 3, 2).astype(np.float32)
    for fn in (
        lambda F, x: F.instance_norm(x),
        lambda F, x: F.local_response_norm(x, 3, alpha=0.1),
        lambda F, x: F.batch_norm(x, None, None, training=True),
    ):
        ours = fn(twF, tw.tensor(x))
        assert ours.dtype is tw.float32
        assert_close(ours, fn(torchF, torch.tensor(x)), rtol=1e-4, atol=1e-5)


def test_on_cunumeric() -> None:
    with entered("cunumeric"):
        check(lambda F, x: F.instance_norm(x), randn(2, 3, 4, 5))
        check(lambda F, x: F.local_response_norm(x, 3, alpha=0.2), randn(2, 5, 3))
