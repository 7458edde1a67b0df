"""Writing through views: an in-place change made through basic indexing, ``narrow``, the
reshape family, ``permute``/``transpose``/``t`` or the pieces of ``split``/``chunk``/``unbind``
reaches the viewed tensor (and its gradient graph), as PyTorch's shared memory makes it;
advanced indexing copies, so writes to its result stay there.
"""

from __future__ import annotations

import pytest
import tensorweaver as tw
from tensor_reference import grads_like_torch, like_torch, uniform


def _rows(m, x):
    for row in x:
        row.mul_(2)


def _chained(m, x):
    x[1][2:].fill_(7)
    x.reshape(-1, 2)[0].unsqueeze(0).add_(10)


WRITES = {
    "index-fill": lambda m, x: x[0].fill_(1),
    "index-slice-add": lambda m, x: x[:, 1:3].add_(2),
    "index-ellipsis-none": lambda m, x: x[..., None, 2].mul_(-1),
    "setitem-into-view": lambda m, x: x.view(-1).__setitem__(5, 9.0),
    "rows": _rows,
    "split": lambda m, x: x.split(2)[1].zero_(),
    "chunk-dim1": lambda m, x: x.chunk(2, 1)[0].sub_(1),
    "unbind": lambda m, x: x.unbind(1)[3].copy_(m.tensor([5.0, 6.0, 7.0], dtype=x.dtype)),
    "narrow": lambda m, x: x.narrow(1, 1, 2).clamp_(max=0.5),
    "t": lambda m, x: x.t()[3].fill_(4),
    "transpose-permute": lambda m, x: x.unsqueeze(0).permute(2, 0, 1)[1].mul_(3),
    "flatten-squeeze": lambda m, x: x.unsqueeze(1).flatten(1).squeeze(0).div_(2),
    "chained": _chained,
    "advanced-index-copies": lambda m, x: x[[0, 2]].zero_(),
    "bool-mask-copies": lambda m, x: x[x > 0].zero_(),
}


@pytest.mark.cunumeric
@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
def test_write_through_view_reaches_the_base_like_torch(backend: str, write: str) -> None:
    def run(m, x):
        WRITES[write](m, x)
        return x

    like_torch(run, uniform((3, 4)))


def test_write_through_view_is_differentiable_like_torch(backend: str) -> None:
    def fn(m, y):
        z = y * 1
        z[0].mul_(3)
        z.t()[2].add_(y[1, 0])
        z[:, 1:].exp_()  # last: its saved output must not change afterwards (PyTorch checks)
        return z.sin()

    grads_like_torch(fn, uniform((3, 4)))


def test_view_of_a_leaf_that_requires_grad_rejects_writes_like_torch(backend: str) -> None:
    # PyTorch: "a view of a leaf Variable that requires grad is being used in an in-place
    # operation" (RuntimeError).
    w = tw.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="in-place operation"):
        w[0].zero_()


def test_write_through_view_under_no_grad_updates_a_parameter(backend: str) -> None:
    w = tw.nn.Parameter(tw.ones(3, 2))
    with tw.no_grad():
        w[1].zero_()
        w.view(-1)[0] = 5.0
    assert w.tolist() == [[5.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    assert w.requires_grad and w.grad_fn is None
