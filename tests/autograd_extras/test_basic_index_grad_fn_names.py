"""``grad_fn`` names of basic indexing as torch's: PyTorch indexes entry by entry, so the name
is that of the last entry that selects something (``x[0]`` SelectBackward0, ``x[None]``
UnsqueezeBackward0, ``x[1:, 0]`` SelectBackward0, ``x[0, 1:]`` SliceBackward0), and an alias
where none does (``x[...]``). ``x[0]`` was ViewBackward0."""

from __future__ import annotations

from typing import Any

import pytest
import tensorweaver as tw

torch = pytest.importorskip("torch")

INDEXES = [
    0, -1, slice(1, None), slice(None), None, Ellipsis, (0, 1), (slice(1, None), 0),
    (0, slice(1, None)), (0, None), (None, 0), (Ellipsis, 0), (slice(None), slice(None)),
    (slice(None), None), (None, slice(None, None, 2)), (Ellipsis, None), (0, Ellipsis),
]  # fmt: skip


def _name(m: Any, index: Any) -> str:
    x = m.ones(2, 3, requires_grad=True) * 1
    return type(x[index].grad_fn).__name__


@pytest.mark.parametrize("index", INDEXES, ids=repr)
def test_basic_index_grad_fn_name_like_torch(index: Any) -> None:
    assert _name(tw, index) == _name(torch, index)
