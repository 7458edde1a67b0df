"""The padding layers (``torch.nn.modules.padding``) against torch.nn (float64): every mode
in 1, 2 and 3 dimensions, int and per-side padding, batched and unbatched, gradients, reprs
and errors."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import check_layer
from tensorweaver import nn

rng = np.random.default_rng(0)
SHAPES = {1: (2, 3, 7), 2: (2, 2, 5, 6), 3: (1, 2, 4, 5, 3)}
PADDINGS = {1: (2, (1, 3)), 2: (1, (2, 0, 1, 3)), 3: (1, (0, 2, 1, 1, 2, 0))}
KINDS = ["ZeroPad", "ConstantPad", "ReflectionPad", "ReplicationPad", "CircularPad"]


def _build(lib, kind: str, nd: int, padding) -> object:
    layer = getattr(lib.nn, f"{kind}{nd}d")
    return layer(padding, 2.5) if kind == "ConstantPad" else layer(padding)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_padding_layer_matches_torch(backend: str, kind: str, nd: int) -> None:
    for padding in PADDINGS[nd]:
        ours, theirs = _build(tw, kind, nd, padding), _build(torch, kind, nd, padding)
        assert ours.padding == theirs.padding and repr(ours) == repr(theirs)
        check_layer(ours, theirs, rng.standard_normal(SHAPES[nd]))
        check_layer(ours, theirs, rng.standard_normal(SHAPES[nd][1:]))


@pytest.mark.parametrize("kind", ["ZeroPad", "ConstantPad"])
def test_negative_constant_padding_crops(backend: str, kind: str) -> None:
    padding = (-1, 2, 0, -2)
    ours, theirs = _build(tw, kind, 2, padding), _build(torch, kind, 2, padding)
    check_layer(ours, theirs, rng.standard_normal(SHAPES[2]))


@pytest.mark.parametrize("kind", ["ReflectionPad", "ReplicationPad", "CircularPad"])
def test_negative_padding_crops_in_every_mode(backend: str, kind: str) -> None:
    padding = (-1, 2, 1, -2)
    ours, theirs = _build(tw, kind, 2, padding), _build(torch, kind, 2, padding)
    check_layer(ours, theirs, rng.standard_normal(SHAPES[2]))


def test_non_constant_padding_checks_the_rank(backend: str) -> None:
    with pytest.raises(NotImplementedError):
        torch.nn.ReflectionPad1d(1)(torch.zeros(2, 2, 3, 3))
    with pytest.raises(NotImplementedError):
        nn.ReflectionPad1d(1)(tw.zeros(2, 2, 3, 3))


def test_circular_padding_checks_the_rank(backend: str) -> None:
    with pytest.raises(ValueError):
        torch.nn.CircularPad2d(1)(torch.zeros(2, 2, 2, 3, 3))
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.CircularPad2d(1)(tw.zeros(2, 2, 2, 3, 3))


def test_too_wide_reflection_raises(backend: str) -> None:
    with pytest.raises(RuntimeError):
        torch.nn.ReflectionPad1d(7)(torch.zeros(1, 2, 7))
    with pytest.raises(RuntimeError, match="reflect"):
        nn.ReflectionPad1d(7)(tw.zeros(1, 2, 7))


def test_module_path_is_pytorchs() -> None:
    from tensorweaver.nn.modules import padding

    for kind in KINDS:
        for nd in (1, 2, 3):
            name = f"{kind}{nd}d"
            assert getattr(torch.nn, name).__module__ == "torch.nn.modules.padding"
            assert getattr(padding, name) is getattr(nn, name)
    assert issubclass(nn.ZeroPad2d, nn.ConstantPad2d)
