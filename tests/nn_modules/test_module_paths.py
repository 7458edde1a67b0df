"""Every layer class lives at PyTorch's module path too (``torch.nn.modules.batchnorm.
BatchNorm2d``), as programs name them there, in ``safe_globals`` lists for one."""

from __future__ import annotations

import importlib

import tensorweaver as tw
import torch


def test_every_shared_layer_class_is_at_pytorchs_module_path() -> None:
    checked = []
    for name in torch.nn.modules.__all__:
        ours = getattr(tw.nn, name, None)
        if ours is None:
            continue
        path = getattr(torch.nn, name).__module__.replace("torch", "tensorweaver", 1)
        assert getattr(importlib.import_module(path), name, None) is ours, f"{path}.{name}"
        checked.append(name)
    assert len(checked) > 60


def test_multihead_attentions_out_proj_has_pytorchs_class_name() -> None:
    from tensorweaver.nn.modules.linear import NonDynamicallyQuantizableLinear

    attention = tw.nn.MultiheadAttention(8, 2)
    assert type(attention.out_proj) is NonDynamicallyQuantizableLinear
    assert isinstance(attention.out_proj, tw.nn.Linear)
    assert (
        type(torch.nn.MultiheadAttention(8, 2).out_proj).__name__
        == "NonDynamicallyQuantizableLinear"
    )
