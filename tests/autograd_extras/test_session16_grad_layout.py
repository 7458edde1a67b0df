"""A leaf's first accumulated gradient has the leaf's memory layout where the leaf is dense
(channels-last, transposed), and is C-contiguous where it is not, as torch 2.13's gradient
layout contract lays out ``.grad``; later gradients add into it and keep it."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _leaves(m: Any) -> dict[str, Callable[[], Any]]:
    def values(*shape: int) -> Any:
        return m.tensor(np.arange(float(np.prod(shape))).reshape(shape))

    return {
        "channels_last": lambda: values(2, 3, 4, 5).contiguous(memory_format=m.channels_last),
        "channels_last_3d": lambda: values(2, 3, 2, 4, 5).contiguous(
            memory_format=m.channels_last_3d
        ),
        "transposed": lambda: values(4, 3).t(),
        "permuted": lambda: values(2, 3, 4).permute(2, 0, 1),
        "strided (not dense)": lambda: values(4, 6)[:, ::2],
        "expanded (overlapping)": lambda: values(3, 1).expand(3, 4),
        "row-major": lambda: values(3, 4),
    }


def _grad_strides(m: Any, leaf: str, backwards: int) -> tuple:
    x = _leaves(m)[leaf]().detach().requires_grad_()
    for _ in range(backwards):
        (x * 2).sum().backward()
    return x.grad.stride(), x.grad.numpy().tolist()


@pytest.mark.parametrize("backwards", [1, 2])
@pytest.mark.parametrize("leaf", list(_leaves(torch)))
def test_gradient_layout_of_a_leaf_like_torch(backend: str, leaf: str, backwards: int) -> None:
    assert _grad_strides(tw, leaf, backwards) == _grad_strides(torch, leaf, backwards)
