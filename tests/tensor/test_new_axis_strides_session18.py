"""Strides of views with a new axis (``unsqueeze``, None indexing) are kept per view
(``Tensor._unit_strides``): repeated calls, and calls after the base changed, must give
what PyTorch gives and what the uncached computation gives."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch

INDEXES = [
    (None,),
    (slice(None), None),
    (None, Ellipsis, None),
    (slice(None, None, 2), None, 1),
    (1, None, slice(1, None)),
]


@pytest.mark.parametrize("index", INDEXES, ids=str)
@pytest.mark.parametrize("transposed", [False, True])
def test_none_index_strides_as_torch_on_repeat(backend: str, index: tuple, transposed: bool):
    values = np.arange(20.0).reshape(4, 5)
    theirs = torch.tensor(values)
    ours = tw.tensor(values, device=backend)
    if transposed:
        theirs, ours = theirs.t(), ours.t()
    want = theirs[index].stride()
    view = ours[index]
    assert view.stride() == want
    assert view.stride() == want  # the kept strides
    assert view.stride(-1) == want[-1]


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_unsqueeze_of_unsqueeze_strides_as_torch(backend: str, dim: int):
    values = np.arange(24.0).reshape(2, 3, 4)
    theirs = torch.tensor(values).permute(2, 0, 1).unsqueeze(1).unsqueeze(dim)
    ours = tw.tensor(values, device=backend).permute(2, 0, 1).unsqueeze(1).unsqueeze(dim)
    for _ in range(2):
        assert ours.stride() == theirs.stride()


def test_kept_strides_follow_a_base_given_new_data(backend: str):
    """The base's shape or strides change (``.data`` of another layout): the view's strides
    are computed again, as the uncached path computes them."""
    base = tw.tensor(np.arange(12.0).reshape(3, 4), device=backend)
    view = base[:, None]
    before = view.stride()
    assert before == torch.arange(12.0).reshape(3, 4)[:, None].stride()
    base.data = tw.tensor(np.arange(12.0).reshape(4, 3), device=backend).t()
    assert view.stride() == view._layout()[0]
    base.data = tw.tensor(np.arange(6.0).reshape(2, 3), device=backend)
    assert view.stride() == view._layout()[0]
