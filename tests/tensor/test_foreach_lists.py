"""``torch._foreach_*`` over lists of tensors (the EMA update ``_foreach_lerp_`` of diffusion and
timm training loops): scalar, scalar-list, tensor-list and 0-dim tensor operands, the in-place
forms returning their list, gradients of the out-of-place forms, and PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest
from tensor_reference import grads_like_torch, like_torch, raises_like_torch, uniform

A, B = uniform((2, 3), seed=1), uniform((4,), seed=2)
C, D = uniform((2, 3), seed=3), uniform((4,), seed=4)


def pair(m, x, y):
    return [m.tensor(x), m.tensor(y)]


@pytest.mark.parametrize(
    "other",
    [
        lambda m: 0.5,
        lambda m: [0.5, -2.0],
        lambda m: pair(m, C, D),
        lambda m: m.tensor(3.0),
    ],
    ids=["scalar", "scalar-list", "tensor-list", "0-dim"],
)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary_foreach_like_torch(backend: str, op: str, other) -> None:
    def out_of_place(m):
        return getattr(m, f"_foreach_{op}")(pair(m, A, B), other(m))

    def in_place(m):
        tensors = pair(m, A, B)
        returned = getattr(m, f"_foreach_{op}_")(tensors, other(m))
        assert returned is tensors
        return tensors

    like_torch(out_of_place)
    like_torch(in_place)


@pytest.mark.parametrize("op", ["add", "sub"])
def test_alpha_scales_the_tensor_operand_like_torch(backend: str, op: str) -> None:
    like_torch(lambda m: getattr(m, f"_foreach_{op}_")(pair(m, A, B), pair(m, C, D), alpha=0.3))


def test_alpha_with_a_0_dim_tensor_like_torch(backend: str) -> None:
    like_torch(lambda m: m._foreach_add(pair(m, A, B), m.tensor(2.0), alpha=-1.5))
    raises_like_torch(lambda m: m._foreach_sub_(pair(m, A, B), m.tensor(2.0), alpha=-1.5))


@pytest.mark.parametrize(
    "weight",
    [lambda m: 0.1, lambda m: [0.25, 0.75], lambda m: m.tensor(0.4), lambda m: pair(m, C, D)],
    ids=["scalar", "scalar-list", "0-dim", "tensor-list"],
)
def test_lerp_ema_update_like_torch(backend: str, weight) -> None:
    def ema(m):
        shadow = pair(m, A, B)
        with m.no_grad():
            m._foreach_lerp_(shadow, pair(m, C, D), weight(m))
        return shadow, m._foreach_lerp(pair(m, A, B), pair(m, C, D), weight(m))

    like_torch(ema)


def test_out_of_place_forms_carry_gradients_like_torch(backend: str) -> None:
    def fn(m, x, y):
        scaled = m._foreach_mul([x, y], [y, x])
        mixed = m._foreach_lerp(list(scaled), [y, x], 0.3)
        return m._foreach_add(mixed, [x, y], alpha=2.0)[0]

    grads_like_torch(fn, np.asarray(A), np.asarray(C))


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda m: m._foreach_add_([], 1.0), ["at least one tensor"]),
        (lambda m: m._foreach_mul_(pair(m, A, B), [2.0]), ["same number of elements"]),
        (lambda m: m._foreach_lerp_(pair(m, A, B), [m.tensor(C)], 0.5), ["got 2 and 1"]),
        (lambda m: m._foreach_mul_(pair(m, A, B), m.tensor(B)), ["0 dim", "1 dimensions"]),
        (lambda m: m._foreach_add_(pair(m, A, B), [1.0, 2.0], alpha=2), []),
        (lambda m: m._foreach_sub(pair(m, A, B), 1.0, alpha=2), []),
        (lambda m: m._foreach_mul_(pair(m, A, B), pair(m, D, C)), ["size"]),
        (lambda m: m._foreach_mul_([m.ones(2, dtype=m.long)], 0.5), ["cast"]),
        (lambda m: m._foreach_mul_([m.ones(2, requires_grad=True)], 2.0), ["leaf"]),
    ],
    ids=[
        "empty",
        "scalar-count",
        "tensor-count",
        "not-0-dim",
        "alpha-scalars",
        "alpha-scalar",
        "shapes",
        "int-result",
        "leaf",
    ],  # fmt: skip
)
def test_errors_like_torch(backend: str, fn, match: list[str]) -> None:
    raises_like_torch(fn, match=match)


@pytest.mark.parametrize("op", ["abs", "exp", "neg", "sqrt"])
def test_unary_foreach_like_torch(backend: str, op: str) -> None:
    def fn(m):
        tensors = [m.tensor(np.abs(A)), m.tensor(-np.asarray(B))]
        fresh = getattr(m, f"_foreach_{op}")(tensors)
        assert getattr(m, f"_foreach_{op}_")(tensors) is tensors
        return fresh, tensors

    like_torch(fn)


def test_zero_copy_and_norm_like_torch(backend: str) -> None:
    def fn(m):
        tensors = pair(m, A, B)
        assert m._foreach_copy_(tensors, pair(m, C, D)) is tensors
        norms = [m._foreach_norm(tensors, p) for p in (2, 1, float("inf"))]
        norms.append(m._foreach_norm(tensors, dtype=m.float64))
        return tensors, norms, m._foreach_zero_(pair(m, A, B))

    like_torch(fn)


@pytest.mark.parametrize(
    "value",
    [lambda m: 0.5, lambda m: [2.0, -1.0], lambda m: m.tensor([0.25, 3.0])],
    ids=["scalar", "scalar-list", "1-d-tensor"],
)
@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_pointwise_foreach_like_torch(backend: str, op: str, value) -> None:
    def fn(m):
        tensors = pair(m, A, B)
        fresh = getattr(m, f"_foreach_{op}")(
            tensors, pair(m, C, D), pair(m, np.abs(C) + 1, np.abs(D) + 1), value(m)
        )
        assert getattr(m, f"_foreach_{op}_")(
            tensors, pair(m, C, D), pair(m, np.abs(C) + 1, np.abs(D) + 1), value(m)
        )
        return fresh, tensors

    like_torch(fn)


def test_norm_of_integers_raises_like_torch(backend: str) -> None:
    raises_like_torch(lambda m: m._foreach_norm([m.ones(2, dtype=m.long)]), match=["float"])
