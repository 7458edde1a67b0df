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


#: Each normalization with float32 parameters: (F, x, w, b) -> output.
MIXED = {
    "layer_norm": lambda F, x, w, b: F.layer_norm(x, (3,), w[:3], b[:3]),
    "group_norm": lambda F, x, w, b: F.group_norm(x, 2, w, b),
    "instance_norm": lambda F, x, w, b: F.instance_norm(x, weight=w, bias=b),
    "batch_norm": lambda F, x, w, b: F.batch_norm(
        x, w.detach() * 0, w.detach() ** 2, w, b, training=True
    ),
    "batch_norm_eval": lambda F, x, w, b: F.batch_norm(x, b.detach(), w.detach() ** 2 + 0.5, w, b),
    "rms_norm": lambda F, x, w, b: F.rms_norm(x, (3,), w[:3]),
}


@pytest.mark.parametrize("name", MIXED)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_input_with_float32_parameters(backend: str, name: str, dtype: str) -> None:
    """PyTorch's mixed precision: a float16/bfloat16 input normalized with float32
    parameters, returned in the input's dtype; the parameters' gradients are float32."""
    try:
        tw.zeros(0, dtype=getattr(tw, dtype))
    except TypeError:
        pytest.skip(f"{backend} has no {dtype}")
    fn = MIXED[name]
    x, w, b = randn(4, 4, 3, scale=2), randn(4, seed=1), randn(4, seed=2)
    outs = {}
    for lib, F in ((torch, torch.nn.functional), (tw, tw.nn.functional)):
        xs = lib.tensor(x).to(getattr(lib, dtype)).requires_grad_()
        ws, bs = lib.tensor(w).float().requires_grad_(), lib.tensor(b).float().requires_grad_()
        y = fn(F, xs, ws, bs)
        (y.float() ** 2).sum().backward()
        outs[lib] = [y, xs.grad, ws.grad, bs.grad]
    for ours, theirs in zip(outs[tw], outs[torch]):
        if theirs is None:  # rms_norm has no bias
            assert ours is None
            continue
        assert ours.dtype.name == str(theirs.dtype).split(".")[1]
        tol = 2e-2 if dtype == "bfloat16" else 2e-3
        assert_close(ours.float(), theirs.float(), rtol=tol, atol=tol)


def test_other_mixes_of_dtypes_raise_like_torch(backend: str) -> None:
    x = randn(2, 4, 3)
    for F in (torch.nn.functional, tw.nn.functional):
        lib = torch if F is torch.nn.functional else tw
        with pytest.raises(RuntimeError):  # float32 input, float16 parameters
            F.layer_norm(lib.tensor(x).float(), (3,), lib.ones(3, dtype=lib.float16))
        with pytest.raises(RuntimeError):  # float16 input, float64 parameters
            F.layer_norm(lib.tensor(x).half(), (3,), lib.ones(3, dtype=lib.float64))
