"""LazyLinear and the lazy convolutions: parameters without a shape until the first call,
which infers in_features / in_channels, initializes them and turns the layer into its
eager class, as PyTorch's LazyModuleMixin does."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import check_layer
from tensorweaver import nn
from tensorweaver.nn.modules.lazy import UninitializedParameter

rng = np.random.default_rng(0)


def test_lazy_linear_materializes_on_first_call(backend: str) -> None:
    layer = nn.LazyLinear(3)
    assert isinstance(layer.weight, UninitializedParameter)
    assert isinstance(layer.bias, UninitializedParameter)
    assert layer.has_uninitialized_params() and layer.in_features == 0
    weight = layer.weight
    out = layer(tw.randn(4, 2, 5))
    assert tuple(out.shape) == (4, 2, 3)
    assert type(layer) is nn.Linear and layer.in_features == 5
    assert layer.weight is weight and type(weight) is nn.Parameter  # the same object
    assert tuple(layer.weight.shape) == (3, 5) and tuple(layer.bias.shape) == (3,)
    bound = 1 / np.sqrt(5)
    assert np.abs(layer.weight.detach().numpy()).max() <= bound
    # Now an ordinary Linear: compared with torch's after copying its weights.
    check_layer(layer, torch.nn.Linear(5, 3), rng.standard_normal((2, 5)))


def test_lazy_linear_without_bias_and_dtype(backend: str) -> None:
    layer = nn.LazyLinear(2, bias=False, dtype=tw.float32)
    assert layer.bias is None
    layer(tw.ones(3, 4, dtype=tw.float32))
    assert layer.weight.dtype is tw.float32
    assert [n for n, _ in layer.named_parameters()] == ["weight"]


LAZY_CONVS = [
    ("LazyConv1d", (4, 3), {"stride": 2, "padding": 1}, (2, 3, 7)),
    ("LazyConv2d", (6, (2, 3)), {"groups": 2, "padding": "same"}, (2, 4, 5, 6)),
    ("LazyConv3d", (2, 2), {"padding_mode": "reflect", "padding": 1}, (3, 4, 3, 4)),
    ("LazyConvTranspose1d", (3, 2), {"stride": 2, "output_padding": 1}, (2, 4, 5)),
    ("LazyConvTranspose2d", (4, 3), {"groups": 2, "dilation": 2}, (2, 6, 3, 3)),
    ("LazyConvTranspose3d", (2, 2), {"stride": 2}, (2, 3, 2, 2, 2)),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "shape"), LAZY_CONVS)
@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_lazy_convolutions(backend: str, name: str, args: tuple, kwargs: dict, shape) -> None:
    layer = getattr(nn, name)(*args, **kwargs)
    assert layer.has_uninitialized_params()
    x = tw.tensor(rng.standard_normal(shape))
    layer(x)
    eager = name.replace("Lazy", "")
    assert type(layer) is getattr(nn, eager)
    batched = len(shape) == int(name[-2]) + 2
    in_channels = shape[1] if batched else shape[0]
    theirs = getattr(torch.nn, eager)(in_channels, *args, **kwargs)
    assert layer.in_channels == in_channels
    assert tuple(layer.weight.shape) == tuple(theirs.weight.shape)
    assert repr(layer) == repr(theirs)
    check_layer(layer, theirs, rng.standard_normal(shape))


def test_initialize_parameters_directly() -> None:
    layer = nn.LazyConv2d(5, 3)
    layer.initialize_parameters(tw.ones(1, 2, 4, 4))
    assert tuple(layer.weight.shape) == (5, 2, 3, 3)
    assert not layer.has_uninitialized_params()


def test_lazy_conv_rejects_wrong_rank_and_groups() -> None:
    with pytest.raises(RuntimeError, match=r"expected a 3-D \(unbatched\) or 4-D"):
        nn.LazyConv2d(2, 3)(tw.ones(2, 3))
    with pytest.raises(ValueError, match=r"in_channels \(3\).*divisible by groups \(2\)"):
        nn.LazyConv1d(2, 3, groups=2)(tw.ones(1, 3, 5))


def test_load_state_dict_materializes_uninitialized_parameters(backend: str) -> None:
    source = nn.Conv2d(3, 4, 2)
    layer = nn.LazyConv2d(4, 2)
    layer.load_state_dict(source.state_dict())
    assert not layer.has_uninitialized_params()
    np.testing.assert_array_equal(layer.weight.detach().numpy(), source.weight.detach().numpy())
    x = tw.tensor(rng.standard_normal((1, 3, 4, 4)))
    np.testing.assert_array_equal(layer(x).detach().numpy(), source(x).detach().numpy())
    assert type(layer) is nn.Conv2d


@pytest.mark.parametrize("shape", [(), 3, (2, 3), [4]])
def test_materialize_takes_the_shapes_torch_takes(shape) -> None:
    # materialize(()) raised once zeros()/empty() refused no sizes, and materialize(3) raised
    # before that; torch's takes both.
    ours, theirs = UninitializedParameter(), torch.nn.UninitializedParameter()
    ours.materialize(shape)
    theirs.materialize(shape)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).removeprefix("torch.")
