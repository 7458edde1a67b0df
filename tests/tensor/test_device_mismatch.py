"""An operation given tensors on two devices raises PyTorch's same-device RuntimeError, naming
the devices, whichever argument is on the other one (bincount's weights and
repeat_interleave's repeats reached torch with a NumPy array: a TypeError from inside torch)."""

from __future__ import annotations

import pytest
import tensorweaver as tw

F = tw.nn.functional

CALLS = {
    "index_select": lambda x, i, m, f: x.index_select(0, i),
    "gather": lambda x, i, m, f: x.gather(1, i.unsqueeze(1)),
    "scatter": lambda x, i, m, f: x.detach().scatter(1, i.unsqueeze(1), 1.0),
    "scatter_add": lambda x, i, m, f: x.detach().scatter_add(1, i.unsqueeze(1), x.detach()[:, :1]),
    "scatter_reduce": lambda x, i, m, f: x.detach().scatter_reduce(
        1, i.unsqueeze(1), x.detach()[:, :1], "amax"
    ),
    "index_add": lambda x, i, m, f: x.detach().index_add(0, i, x.detach()),
    "index_fill": lambda x, i, m, f: x.detach().index_fill(0, i, 1.0),
    "getitem": lambda x, i, m, f: x[i],
    "setitem": lambda x, i, m, f: x.detach().clone().__setitem__(i, 0.0),
    "masked_fill": lambda x, i, m, f: x.masked_fill(m, 0.0),
    "masked_select": lambda x, i, m, f: x.masked_select(m),
    "where": lambda x, i, m, f: tw.where(m, x, 0.0),
    "embedding": lambda x, i, m, f: F.embedding(i, x),
    "take": lambda x, i, m, f: x.take(i),
    "take_along_dim": lambda x, i, m, f: x.take_along_dim(i.unsqueeze(1), 1),
    "add": lambda x, i, m, f: x + f,
    "matmul": lambda x, i, m, f: x @ f.T,
    "cat": lambda x, i, m, f: tw.cat([x, f]),
    "mse_loss": lambda x, i, m, f: F.mse_loss(x, f),
    "cross_entropy": lambda x, i, m, f: F.cross_entropy(x, i),
    "multi_margin_loss": lambda x, i, m, f: F.multi_margin_loss(x, i),
    "lerp": lambda x, i, m, f: tw.lerp(x, f, 0.5),
    "clamp": lambda x, i, m, f: x.clamp(min=f),
    "bincount_weights": lambda x, i, m, f: tw.bincount(i.to(x.device), weights=f[:, 0]),
    "repeat_interleave": lambda x, i, m, f: x.repeat_interleave(i.abs() + 1, dim=0),
    "searchsorted": lambda x, i, m, f: tw.searchsorted(x.detach().sort().values, f),
}


@pytest.mark.parametrize("name", CALLS)
def test_a_second_tensor_on_another_device_is_a_same_device_error(name: str) -> None:
    x = tw.randn(4, 5, device="torch:cpu", requires_grad=True)
    i = tw.tensor([1, 0, 3, 2], device="numpy")
    m = tw.tensor([[True, False, True, False, True]] * 4, device="numpy")
    f = tw.randn(4, 5, device="numpy")
    with pytest.raises(RuntimeError, match="device"):
        CALLS[name](x, i, m, f)
