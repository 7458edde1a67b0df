"""float16 huber_loss and smooth_l1_loss as torch 2.13's CPU kernels compute them, values and
both gradients bit for bit (before session 18: up to a third of the values and most of the
mean's gradients off by a float16 ulp; huber rounded each step where torch's forward rounds
once, smooth_l1 used the unrounded beta, both gradients were the composites')."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _tw(t: torch.Tensor) -> Any:
    return tw.tensor(t.detach().double().numpy()).to(tw.float16).requires_grad_()


def _differ(ours: Any, theirs: torch.Tensor) -> int:
    got, want = np.asarray(ours.detach().double()), theirs.detach().double().numpy()
    return int((got != want).sum())


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name, param", [("huber_loss", "delta"), ("smooth_l1_loss", "beta")])
@pytest.mark.parametrize("value", [0.75, 1.3, 0.1])
def test_half_loss_and_gradients_as_torch(
    backend: str, name: str, param: str, value: float, reduction: str
) -> None:
    rng = np.random.default_rng(11)
    wrong = []
    for n in (7, 100, 1000):  # (sizes with and without elements past torch's last vector step)
        xs, ys = (torch.tensor(rng.standard_normal(n)).half().requires_grad_() for _ in "xy")
        out = getattr(torch.nn.functional, name)(xs, ys, reduction=reduction, **{param: value})
        g = torch.tensor(rng.standard_normal(out.shape)).half()
        out.backward(g)
        x, y = _tw(xs), _tw(ys)
        ours = getattr(tw.nn.functional, name)(x, y, reduction=reduction, **{param: value})
        ours.backward(tw.tensor(g.double().numpy()).to(tw.float16))
        assert ours.grad_fn.name() == out.grad_fn.name()
        wrong.append((_differ(ours, out), _differ(x.grad, xs.grad), _differ(y.grad, ys.grad)))
    assert wrong == [(0, 0, 0)] * 3
