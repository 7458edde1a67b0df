"""Normalization against torch.nn.functional in float64, running statistics included."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from functional_reference import assert_close, check, check_same, gradcheck, randn
from tensorweaver.nn.functional import normalization


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (4, 3, 2, 5)])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("momentum", [0.1, 0.35])
def test_batch_norm_training_updates_running_stats(
    backend: str, shape: tuple, affine: bool, momentum: float
) -> None:
    mean0, var0 = randn(3, seed=5), randn(3, seed=6) ** 2 + 0.5
    running = {}

    def fn(F, x, w, b):
        lib = torch if F is torch.nn.functional else tw
        rm, rv = lib.tensor(mean0), lib.tensor(var0)
        out = F.batch_norm(
            x, rm, rv, w if affine else None, b if affine else None, True, momentum, 1e-3
        )
        running[lib] = (rm, rv)
        return out

    check(fn, randn(*shape, scale=2) + 1, randn(3, seed=1), randn(3, seed=2))
    for ours, theirs in zip(running[tw], running[torch]):
        assert_close(ours, theirs)


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 2, 5)])
def test_batch_norm_eval_uses_running_stats(backend: str, shape: tuple) -> None:
    check(
        lambda F, x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b, training=False, eps=1e-4),
        randn(*shape),
        randn(3, seed=1),
        randn(3, seed=2) ** 2 + 0.1,
        randn(3, seed=3),
        randn(3, seed=4),
        grad=(0, 3, 4),
    )


def test_batch_norm_rejects_one_value_per_channel(backend: str) -> None:
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        tw.nn.functional.batch_norm(tw.ones(1, 3), None, None, training=True)


@pytest.mark.parametrize(
    ("shape", "normalized_shape"), [((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((2, 3, 4), (4,))]
)
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm(backend: str, shape: tuple, normalized_shape: tuple, affine: bool) -> None:
    ns = normalized_shape
    check(
        lambda F, x, w, b: F.layer_norm(
            x, normalized_shape, w if affine else None, b if affine else None, eps=1e-4
        ),
        randn(*shape, scale=3) + 2,
        randn(*ns, seed=1),
        randn(*ns, seed=2),
        grad=(0, 1, 2) if affine else (0,),
    )


@pytest.mark.parametrize("ndim", [1, 2])
def test_layer_norm_reference_matches_public_path(backend: str, ndim: int) -> None:
    shape = (2, 3, 4)[3 - ndim :]
    check_same(
        lambda x, w, b: normalization.layer_norm_reference(x, w, b, ndim, 1e-5),
        lambda x, w, b: tw.nn.functional.layer_norm(x, shape, w, b),
        randn(2, 3, 4),
        randn(*shape, seed=1),
        randn(*shape, seed=2),
    )


def test_layer_norm_rejects_wrong_trailing_shape(backend: str) -> None:
    with pytest.raises(RuntimeError):
        torch.nn.functional.layer_norm(torch.ones(2, 4), (3,))
    with pytest.raises(RuntimeError, match=r"normalized_shape \(3,\) must be a non-empty suffix"):
        tw.nn.functional.layer_norm(tw.ones(2, 4), (3,))


def test_layer_norm_rejects_bias_of_wrong_shape(backend: str) -> None:
    with pytest.raises(RuntimeError):
        torch.nn.functional.layer_norm(torch.ones(2, 4), (4,), torch.ones(4), torch.ones(3))
    with pytest.raises(RuntimeError, match=r"bias of shape \(3,\) must have normalized_shape"):
        tw.nn.functional.layer_norm(tw.ones(2, 4), (4,), tw.ones(4), tw.ones(3))


@pytest.mark.parametrize(("shape", "groups"), [((2, 6, 5), 3), ((2, 4, 3, 3), 2), ((3, 4), 4)])
@pytest.mark.parametrize("affine", [False, True])
def test_group_norm(backend: str, shape: tuple, groups: int, affine: bool) -> None:
    c = shape[1]
    check(
        lambda F, x, w, b: F.group_norm(
            x, groups, w if affine else None, b if affine else None, eps=1e-4
        ),
        randn(*shape, scale=2),
        randn(c, seed=1),
        randn(c, seed=2),
        grad=(0, 1, 2) if affine else (0,),
    )


@pytest.mark.parametrize(("shape", "normalized_shape"), [((4, 5), (5,)), ((2, 3, 4), (3, 4))])
@pytest.mark.parametrize("eps", [None, 1e-3])
@pytest.mark.parametrize("affine", [False, True])
def test_rms_norm(backend: str, shape: tuple, normalized_shape: tuple, eps, affine: bool) -> None:
    check(
        lambda F, x, w: F.rms_norm(x, normalized_shape, w if affine else None, eps),
        randn(*shape),
        randn(*normalized_shape, seed=1),
        grad=(0, 1) if affine else (0,),
    )


def test_gradcheck_batch_norm_training(backend: str) -> None:
    gradcheck(
        lambda F, x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        randn(4, 3, 2),
        randn(3, seed=1),
        randn(3, seed=2),
    )


def test_gradcheck_layer_norm(backend: str) -> None:
    gradcheck(
        lambda F, x, w, b: F.layer_norm(x, (4,), w, b),
        randn(3, 4),
        randn(4, seed=1),
        randn(4, seed=2),
    )
