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
}
LEADING_ONES = (
    "ops/index.py setitem expands the value to the selection's shape as it is; PyTorch first "
    "drops the value's leading size-1 dims (slicePrefix1sSize), so a (1, 4) value fills a "
    "(4,) selection instead of raising 'cannot be assigned to a selection of shape [4]'"
)


def _value(shape: tuple[int, ...]) -> np.ndarray:
    return np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64).reshape(shape)


@pytest.mark.xfail(strict=True, raises=RuntimeError, reason=LEADING_ONES)
@pytest.mark.parametrize("case", list(ACCEPTED))
@pytest.mark.parametrize("spec", FAST)
def test_setitem_value_with_leading_ones_matches_pytorch(spec: str, case: str) -> None:
    index, shape = ACCEPTED[case]
    expected = torch.zeros(3, 4, dtype=torch.float64)
    expected[index] = torch.tensor(_value(shape))
    with entered(spec, float64=True, seed=0):
        got = tw.zeros(3, 4)
        got[index] = tw.tensor(_value(shape))
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
