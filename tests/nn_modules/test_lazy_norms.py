"""LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d against PyTorch's: uninitialized
parameters and buffers until the first forward takes ``num_features`` from ``input.shape[1]``,
then the eager class; state dicts, dtype moves and optimizers as PyTorch has them."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import check_layer
from tensorweaver import nn
from tensorweaver.nn.parameter import is_lazy

rng = np.random.default_rng(0)

SHAPES = {
    "LazyBatchNorm1d": (4, 3, 5),
    "LazyBatchNorm2d": (3, 2, 4, 3),
    "LazyBatchNorm3d": (2, 3, 2, 3, 2),
    "LazyInstanceNorm1d": (2, 3, 6),
    "LazyInstanceNorm2d": (2, 4, 3, 3),
    "LazyInstanceNorm3d": (2, 2, 3, 2, 3),
}
OPTIONS = [
    {},
    {"affine": False},
    {"track_running_stats": False},
    {"affine": True, "bias": False, "momentum": None},
]


def _state(module: object) -> dict[str, str]:
    """Each state_dict entry: 'lazy' for an uninitialized one, else its shape."""
    lazy = (torch.nn.parameter.is_lazy, is_lazy)
    return {
        k: "lazy" if any(f(v) for f in lazy) else str(tuple(v.shape))
        for k, v in module.state_dict().items()
    }


@pytest.mark.parametrize("options", OPTIONS, ids=str)
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_first_forward_materializes_like_torch(backend: str, name: str, options: dict) -> None:
    ours, theirs = getattr(nn, name)(**options), getattr(torch.nn, name)(**options)
    assert repr(ours) == repr(theirs)
    assert _state(ours) == _state(theirs)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert ours.has_uninitialized_params() == theirs.has_uninitialized_params()
    x = rng.standard_normal(SHAPES[name])
    out = ours(tw.tensor(x))
    expected = theirs.double()(torch.tensor(x))
    eager = name.replace("Lazy", "")
    assert type(ours) is getattr(nn, eager) and type(theirs) is getattr(torch.nn, eager)
    assert ours.num_features == theirs.num_features
    assert repr(ours) == repr(theirs)
    assert _state(ours) == _state(theirs)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-12)
    for key, value in theirs.state_dict().items():  # running stats updated alike
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), atol=1e-12)
    # Now ordinary layers: forward and backward agree after copying torch's weights.
    check_layer(ours, theirs, rng.standard_normal(SHAPES[name]))


def test_running_stats_update_in_float64_over_steps(backend: str) -> None:
    ours, theirs = nn.LazyBatchNorm2d(momentum=None), torch.nn.LazyBatchNorm2d(momentum=None)
    theirs.double()
    for _ in range(3):
        x = rng.standard_normal((3, 2, 3, 3)) * 2 + 1
        ours(tw.tensor(x))
        theirs(torch.tensor(x))
    for key in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(
            getattr(ours, key).numpy(), getattr(theirs, key).numpy(), rtol=1e-13
        )
    ours.eval(), theirs.eval()
    x = rng.standard_normal((2, 2, 3, 3))
    np.testing.assert_allclose(
        ours(tw.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-12
    )


def test_uninitialized_tensors() -> None:
    layer = nn.LazyBatchNorm1d(dtype=tw.float64)
    assert isinstance(layer.weight, nn.UninitializedParameter)
    assert isinstance(layer.running_mean, nn.UninitializedBuffer)
    assert isinstance(layer.running_mean, nn.parameter.UninitializedBuffer)
    assert not is_lazy(layer.num_batches_tracked) and layer.num_batches_tracked.item() == 0
    assert repr(layer.running_var) == "<UninitializedBuffer>"
    assert layer.weight.requires_grad and not layer.running_mean.requires_grad
    weight, mean = layer.weight, layer.running_mean
    layer(tw.ones(2, 3, dtype=tw.float64))
    assert layer.weight is weight and type(weight) is nn.Parameter
    assert layer.running_mean is mean and type(mean) is tw.Tensor
    assert mean.dtype is tw.float64 and tuple(mean.shape) == (3,)


def test_moves_and_copies_stay_uninitialized() -> None:
    layer = nn.LazyBatchNorm2d().double()
    assert is_lazy(layer.running_mean) and layer.running_mean.dtype is tw.float64
    assert is_lazy(layer.weight) and layer.weight.dtype is tw.float64
    # PyTorch's deepcopy of an uninitialized buffer reads its values: ValueError, as here
    with pytest.raises(ValueError):
        copy.deepcopy(torch.nn.LazyBatchNorm2d().double())
    with pytest.raises(ValueError):
        copy.deepcopy(layer)
    # without running statistics the parameters alone copy, still uninitialized
    twin = copy.deepcopy(nn.LazyBatchNorm2d(track_running_stats=False).double())
    assert is_lazy(twin.weight) and is_lazy(twin.bias) and twin.weight.dtype is tw.float64
    twin(tw.ones(2, 5, 1, 1, dtype=tw.float64))
    assert tuple(twin.bias.shape) == (5,)


def test_load_state_dict_into_uninitialized_materializes(backend: str) -> None:
    source, reference = nn.BatchNorm1d(4), torch.nn.LazyBatchNorm1d()
    source(tw.tensor(rng.standard_normal((6, 4))))  # non-trivial running stats
    layer = nn.LazyBatchNorm1d()
    layer.load_state_dict(source.state_dict())
    reference.load_state_dict({k: torch.tensor(v.numpy()) for k, v in source.state_dict().items()})
    assert not layer.has_uninitialized_params() and not reference.has_uninitialized_params()
    assert type(layer) is nn.LazyBatchNorm1d  # as torch: the class changes at the first forward
    assert layer.num_features == reference.num_features == 0  # torch leaves it at 0 too
    for key, value in source.state_dict().items():
        np.testing.assert_array_equal(layer.state_dict()[key].numpy(), value.numpy())
    layer.eval(), source.eval()
    x = tw.tensor(rng.standard_normal((3, 4)))
    np.testing.assert_array_equal(layer(x).detach().numpy(), source(x).detach().numpy())
    assert type(layer) is nn.BatchNorm1d


def test_load_state_dict_between_uninitialized_and_initialized() -> None:
    layer = nn.LazyInstanceNorm2d()
    layer.load_state_dict(nn.LazyInstanceNorm2d().state_dict())  # both lazy: stays lazy
    assert layer.has_uninitialized_params() and is_lazy(layer.running_mean)
    with pytest.raises(RuntimeError):  # as torch: a lazy checkpoint cannot fill a real layer
        nn.InstanceNorm2d(3, affine=True).load_state_dict(nn.LazyInstanceNorm2d().state_dict())
    with pytest.raises(RuntimeError):
        torch.nn.InstanceNorm2d(3, affine=True).load_state_dict(
            torch.nn.LazyInstanceNorm2d().state_dict()
        )


def test_optimizer_built_before_the_first_forward(backend: str) -> None:
    ours, theirs = nn.LazyBatchNorm1d(), torch.nn.LazyBatchNorm1d()
    opt_ours = tw.optim.Adam(ours.parameters(), lr=0.1)
    opt_theirs = torch.optim.Adam(theirs.parameters(), lr=0.1)  # torch allows it too
    theirs.double()
    for _ in range(2):
        x = rng.standard_normal((5, 3))
        target = rng.standard_normal((5, 3))
        for module, opt, lib in ((ours, opt_ours, tw), (theirs, opt_theirs, torch)):
            opt.zero_grad()
            ((module(lib.tensor(x)) - lib.tensor(target)) ** 2).sum().backward()
            opt.step()
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    ("name", "shape", "match"),
    [
        ("LazyBatchNorm2d", (3, 4), r"expected 4D input \(got 2D"),
        ("LazyBatchNorm1d", (2, 3, 4, 5), r"expected 2D or 3D input \(got 4D"),
        # Unbatched: num_features comes from shape[1] (as torch), so channels mismatch.
        ("LazyInstanceNorm1d", (3, 4), r"size at dim=0 to match num_features \(4\)"),
    ],
)
def test_bad_input_raises_like_torch(name: str, shape: tuple, match: str) -> None:
    ours, theirs = getattr(nn, name)(), getattr(torch.nn, name)()
    with pytest.raises(ValueError):
        theirs(torch.ones(shape))
    with pytest.raises(ValueError, match=match):
        ours(tw.ones(*shape))
    assert type(ours).__name__ == type(theirs).__name__ == name.replace("Lazy", "")
