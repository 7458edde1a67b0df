"""``x[index] = value`` where ``value`` has more leading size-1 dims than the selection, found
by the PPO port (``tests/ports/programs/ppo.py``, CleanRL's GAE loop: ``advantages[t] =
lastgaelam`` with ``lastgaelam`` of shape ``(1, num_envs)``).

PyTorch drops all leading size-1 dims of the value before broadcasting it to the selection,
so a ``(1, 4)`` value fills a ``(4,)`` row; a value that does not broadcast still raises.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import FAST, entered

#: (index, value shape) pairs PyTorch accepts on a (3, 4) tensor.
ACCEPTED = {
    "row-from-(1,4)": (0, (1, 4)),
    "row-from-(1,1,4)": (1, (1, 1, 4)),
    "slice-from-(1,1,1,4)": (slice(1, 2), (1, 1, 1, 4)),
    "column-from-(1,3)": ((slice(None), 0), (1, 3)),
    "advanced-from-(1,2,4)": ([0, 2], (1, 2, 4)),
    "pair-from-(1,1,2)": (([0, 1], [1, 2]), (1, 1, 2)),
    "row-mask-from-(1,1,2,4)": ([True, False, True], (1, 1, 2, 4)),
    "mask-from-(1,6)": ("mask", (1, 6)),
    "ellipsis-from-(1,1,3,4)": (Ellipsis, (1, 1, 3, 4)),
}


def _index(index, lib):
    """``index`` in ``lib``: lists of bools as a bool tensor, ``"mask"`` a (3, 4) bool mask."""
    if index == "mask":
        return lib.tensor([[True, False, True, False]] * 3)
    if isinstance(index, list) and isinstance(index[0], bool):
        return lib.tensor(index)
    return index


def _value(shape: tuple[int, ...]) -> np.ndarray:
    return np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64).reshape(shape)


@pytest.mark.parametrize("case", list(ACCEPTED))
@pytest.mark.parametrize("spec", FAST)
def test_setitem_value_with_leading_ones_matches_pytorch(spec: str, case: str) -> None:
    index, shape = ACCEPTED[case]
    expected = torch.zeros(3, 4, dtype=torch.float64)
    expected[_index(index, torch)] = torch.tensor(_value(shape))
    with entered(spec, float64=True, seed=0):
        got = tw.zeros(3, 4)
        got[_index(index, tw)] = tw.tensor(_value(shape))
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize("shape", [(2, 4), (4, 1)])
@pytest.mark.parametrize("spec", FAST)
def test_setitem_value_that_does_not_broadcast_still_raises(
    spec: str, shape: tuple[int, ...]
) -> None:
    with pytest.raises(RuntimeError):
        torch.zeros(3, 4)[0] = torch.ones(shape)
    with entered(spec, float64=True, seed=0):
        x = tw.zeros(3, 4)
        with pytest.raises(RuntimeError, match="cannot be assigned"):
            x[0] = tw.ones(*shape)


@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("spec", FAST)
def test_index_put_keeps_the_leading_ones_it_cannot_broadcast(spec: str, accumulate: bool) -> None:
    # only setitem drops them: index_put_ itself broadcasts the value as it is, and neither
    # a (1, 1, 2, 4) nor a (1, 2, 4) value fits a (2, 4) selection there
    def put(lib, shape):
        x = lib.zeros(3, 4, dtype=lib.float64)
        value = lib.tensor(_value(shape))
        return x.index_put_((lib.tensor([0, 2]),), value, accumulate=accumulate)

    for shape in [(1, 1, 2, 4), (1, 2, 4)]:
        with pytest.raises(RuntimeError):
            put(torch, shape)
    expected = put(torch, (2, 4)).numpy()
    with entered(spec, float64=True, seed=0):
        for shape in [(1, 1, 2, 4), (1, 2, 4)]:
            with pytest.raises(RuntimeError):
                put(tw, shape)
        np.testing.assert_array_equal(put(tw, (2, 4)).numpy(), expected)


@pytest.mark.parametrize("spec", FAST)
def test_setitem_gradient_reaches_a_value_with_leading_ones(spec: str) -> None:
    def grad(lib):
        x = lib.zeros(3, 4, dtype=lib.float64, requires_grad=True).clone()
        value = lib.ones(1, 4, dtype=lib.float64, requires_grad=True)
        x[0] = value * 2
        (x * lib.arange(12.0, dtype=lib.float64).reshape(3, 4)).sum().backward()
        return value.grad.numpy()

    expected = grad(torch)
    with entered(spec, float64=True, seed=0):
        np.testing.assert_array_equal(grad(tw), expected)
