"""``Module.cpu()``, ``Module.cuda()`` and ``Module.type()`` as PyTorch: moves and casts that
keep parameter identity."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch


def test_cpu_keeps_the_current_backends_cpu_and_parameter_identity() -> None:
    with tw.device("torch:cpu"):
        model = tw.nn.Linear(3, 2)
    weight = model.weight
    assert model.cpu() is model and model.weight is weight
    assert model.weight.device == tw.device("torch:cpu")
    with tw.device("numpy"):
        moved = tw.nn.Linear(3, 2).to("torch:cpu").cpu()
    assert moved.weight.device.type == "cpu"


def test_cuda_without_a_cuda_device_is_an_error_naming_cuda() -> None:
    model = tw.nn.Linear(3, 2)
    with pytest.raises(RuntimeError, match="cuda"):
        model.cuda()
    with pytest.raises(RuntimeError, match="cuda"):
        model.cuda(1)


def test_type_casts_every_parameter_and_buffer_like_torch() -> None:
    ours, theirs = tw.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    assert ours.type(tw.float64) is ours
    theirs.type(torch.float64)
    for (name, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1], name
