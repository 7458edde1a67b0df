"""``Tensor.tile`` takes its repeats as PyTorch's method does: ``t.tile(2)`` raised TypeError
(the method was bound to the function, whose ``dims`` is one sequence)."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

CALLS = [
    ((2,), {}),
    ((2, 3), {}),
    (((2, 3),), {}),
    (([2, 1, 2],), {}),
    ((), {"dims": (3,)}),
    ((1,), {}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_tile_method_forms_as_torch(backend: str, args: tuple, kwargs: dict) -> None:
    values = np.arange(6.0).reshape(2, 3)
    expected = torch.tensor(values).tile(*args, **kwargs)
    got = tw.tensor(values).tile(*args, **kwargs)
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize(
    ("args", "kwargs"), [((2.0,), {}), (((2,), 3), {}), ((2,), {"dims": (2,)})]
)
def test_tile_method_refusals_as_torch(backend: str, args: tuple, kwargs: dict) -> None:
    with pytest.raises(TypeError):
        torch.arange(3.0).tile(*args, **kwargs)
    with pytest.raises(TypeError):
        tw.arange(3.0).tile(*args, **kwargs)
