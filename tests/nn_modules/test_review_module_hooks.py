"""Found reviewing the Module API sweep: a forward hook removed while forward runs ran
anyway (the hooks were listed before forward; PyTorch lists them after); a full backward
hook saw zeros, not None, for an output a second pass over a retained graph did not reach;
load_state_dict refused torch tensors and NumPy arrays (which it loaded before)."""

from __future__ import annotations

import numpy as np
import tensorweaver as tw
import torch


def _removed_during_forward(lib) -> list:
    calls = []

    class M(lib.nn.Module):
        def forward(self, x):
            self.handle.remove()
            return x + 1

    m = M()
    m.handle = m.register_forward_hook(lambda mod, args, out: calls.append("ran"))
    m(lib.ones(2))
    return calls


def test_a_forward_hook_removed_during_forward_does_not_run_like_torch() -> None:
    assert _removed_during_forward(tw) == _removed_during_forward(torch) == []


def _two_passes(lib) -> list:
    log = []

    class Two(lib.nn.Module):
        def forward(self, x):
            return x * 2, x * 3

    m = Two()
    m.register_full_backward_hook(
        lambda mod, gi, go: log.append([None if g is None else g.tolist() for g in go])
    )
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    a, b = m(x)
    b.sum().backward(retain_graph=True)
    a.sum().backward()
    return log


def test_backward_hook_outputs_not_reached_in_a_second_pass_are_none_like_torch() -> None:
    assert _two_passes(tw) == _two_passes(torch) == [[None, [1.0, 1.0]], [[1.0, 1.0], None]]


def test_load_state_dict_takes_torch_tensors_and_numpy_arrays() -> None:
    torch.manual_seed(0)
    theirs = torch.nn.Linear(3, 2)
    for state in (theirs.state_dict(), {k: v.numpy() for k, v in theirs.state_dict().items()}):
        ours = tw.nn.Linear(3, 2)
        ours.load_state_dict(state)
        np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach())
