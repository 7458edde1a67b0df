"""Module API: registration, traversal, state_dict, modes, dtype/device moves, repr, hooks."""

from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import assert_close, copy_weights, host
from tensorweaver import nn


def _populate(module: object, lib_nn: object, lib: object) -> None:
    """A parameter, a child, a buffer, a non-persistent buffer and another child."""
    module.scale = lib_nn.Parameter(lib.ones(3))
    module.fc = lib_nn.Linear(3, 3)
    module.register_buffer("count", lib.zeros(1))
    module.register_buffer("cache", lib.zeros(2), persistent=False)
    module.norm = lib_nn.BatchNorm1d(3)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        _populate(self, nn, tw)

    def forward(self, x: tw.Tensor) -> tw.Tensor:
        return self.norm(self.fc(x) * self.scale)


class TorchBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        _populate(self, torch.nn, torch)

    forward = Block.forward


def test_parameter_basics(backend: str) -> None:
    p = nn.Parameter(tw.randn(2, 3))
    assert isinstance(p, tw.Tensor) and p.requires_grad and p.is_leaf
    assert not nn.Parameter(tw.randn(2), requires_grad=False).requires_grad
    assert repr(p).startswith("Parameter containing:\n")
    assert not isinstance(p * 2, nn.Parameter)
    assert tuple(nn.Parameter().shape) == (0,)
    with pytest.raises(TypeError, match="tw.Tensor"):
        nn.Parameter(np.ones(3))


def test_registration_and_traversal_order(backend: str) -> None:
    ours, theirs = Block(), TorchBlock()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [n for n, _ in ours.named_children()] == ["fc", "norm"]
    assert list(ours.state_dict()) == list(theirs.state_dict())  # "cache" is not persistent
    assert [n for n, _ in ours.named_parameters(prefix="m", recurse=False)] == ["m.scale"]
    assert len(list(ours.parameters())) == 5 and len(list(ours.buffers())) == 5
    assert ours.get_submodule("norm") is ours.norm
    assert ours.get_parameter("fc.bias") is ours.fc.bias
    assert ours.get_buffer("norm.running_var") is ours.norm.running_var
    with pytest.raises(AttributeError, match="no submodule"):
        ours.get_submodule("fc.nothing")


def test_shared_parameters_and_modules_are_listed_once(backend: str) -> None:
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias"]
    names = [n for n, _ in model.named_parameters(remove_duplicate=False)]
    assert names == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(list(model.modules())) == 3
    tied = nn.Module()
    tied.a = nn.Linear(3, 3, bias=False)
    tied.b = nn.Linear(3, 3, bias=False)
    tied.b.weight = tied.a.weight
    assert [n for n, _ in tied.named_parameters()] == ["a.weight"]
    assert list(tied.state_dict()) == ["a.weight", "b.weight"]  # as in PyTorch


def test_setattr_reassignment_and_errors(backend: str) -> None:
    m = nn.Module()
    m.w = nn.Parameter(tw.ones(2))
    m.w = None
    assert "w" in m._parameters and m.w is None
    with pytest.raises(TypeError, match="parameter 'w'"):
        m.w = tw.ones(2)
    m.child = nn.Linear(1, 1)
    with pytest.raises(TypeError, match="child module 'child'"):
        m.child = 3
    m.register_buffer("b", tw.zeros(1))
    with pytest.raises(TypeError, match="buffer 'b'"):
        m.b = [1.0]
    m.b = tw.ones(1)  # a tensor replaces the buffer
    assert_close(m.get_buffer("b"), np.ones(1))
    m.child = nn.Parameter(tw.ones(1))  # a name can change kind
    assert "child" not in m._modules and "child" in m._parameters
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("w", tw.zeros(1))
    with pytest.raises(KeyError, match=r"\."):
        m.register_parameter("a.b", None)
    with pytest.raises(TypeError, match="Parameter or None"):
        m.register_parameter("p", tw.ones(1))
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'nothing'"):
        m.nothing  # noqa: B018
    del m.child
    assert "child" not in m._parameters

    class Early(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(tw.ones(1))

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()


def test_forward_is_required() -> None:
    with pytest.raises(
        NotImplementedError, match='Module \\[Module\\] is missing the required "forward"'
    ):
        nn.Module()(1)


def test_state_dict_round_trip(backend: str) -> None:
    source, target = Block(), Block()
    source(tw.randn(4, 3))  # moves the running statistics
    state = source.state_dict()
    assert all(not v.requires_grad for v in state.values())
    result = target.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for name, value in target.state_dict().items():
        np.testing.assert_array_equal(host(value), host(state[name]))
    kept = target.fc.weight
    target.load_state_dict(source.state_dict())
    assert target.fc.weight is kept  # loading copies into the existing parameters
    assert source.state_dict(keep_vars=True)["fc.weight"] is source.fc.weight
    target.load_state_dict(Block().float().state_dict())  # values are cast to the model's dtype
    assert target.fc.weight.dtype is tw.float64 and target.count.dtype is tw.float64


def test_load_state_dict_from_torch_matches_outputs(backend: str) -> None:
    ours, theirs = Block(), TorchBlock().double()
    copy_weights(ours, theirs)
    x = np.random.default_rng(0).standard_normal((5, 3))
    assert_close(ours(tw.tensor(x)), theirs(torch.tensor(x)))


def test_load_state_dict_errors(backend: str) -> None:
    ours, theirs = Block(), TorchBlock()
    state = {k: tw.tensor(host(v)) for k, v in theirs.state_dict().items()}
    del state["fc.bias"]
    state["fc.extra"] = tw.zeros(1)
    state["other.weight"] = tw.zeros(1)
    with pytest.raises(RuntimeError) as info:
        ours.load_state_dict(state)
    torch_state = {k: torch.tensor(host(v)) for k, v in state.items()}
    with pytest.raises(RuntimeError) as expected_info:
        theirs.load_state_dict(torch_state)
    assert str(info.value) == str(expected_info.value).replace("TorchBlock", "Block")
    assert 'Missing key(s) in state_dict: "fc.bias".' in str(info.value)
    result = ours.load_state_dict(state, strict=False)
    expected = theirs.load_state_dict(torch_state, strict=False)
    assert result.missing_keys == expected.missing_keys
    assert result.unexpected_keys == expected.unexpected_keys

    state = {k: tw.tensor(host(v)) for k, v in theirs.state_dict().items()}
    state["fc.weight"] = tw.zeros(2, 3)
    for strict in (True, False):  # a shape mismatch is always an error
        with pytest.raises(
            RuntimeError,
            match=r"size mismatch for fc.weight: copying a param "
            r"with shape \(2, 3\) from checkpoint, the shape in current model is "
            r"\(3, 3\)",
        ):
            ours.load_state_dict(state, strict=strict)
    with pytest.raises(TypeError, match="dict-like"):
        ours.load_state_dict([1, 2])


def test_train_eval_apply_requires_grad(backend: str) -> None:
    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(), nn.BatchNorm1d(2)))
    assert model.training
    assert model.eval() is model
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    with pytest.raises(ValueError, match="boolean"):
        model.train("no")
    seen = []
    assert model.apply(lambda m: seen.append(type(m).__name__)) is model
    assert seen == ["Linear", "Dropout", "BatchNorm1d", "Sequential", "Sequential"]
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())


def test_zero_grad(backend: str) -> None:
    model = nn.Linear(3, 2)
    model(tw.randn(4, 3)).sum().backward()
    grad = model.weight.grad
    model.zero_grad(set_to_none=False)
    assert model.weight.grad is grad
    np.testing.assert_array_equal(host(model.weight.grad), np.zeros((2, 3)))
    model.zero_grad()
    assert model.weight.grad is None and model.bias.grad is None


def test_to_dtype_keeps_parameter_identity(backend: str) -> None:
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    model(tw.randn(4, 3)).sum().backward()
    weight = model[0].weight
    optimizer_view = list(model.parameters())
    assert model.float() is model
    assert model[0].weight is weight and weight.dtype is tw.float32
    assert weight.grad.dtype is tw.float32 and weight.requires_grad and weight.is_leaf
    assert model[1].running_mean.dtype is tw.float32
    assert model[1].num_batches_tracked.dtype is tw.int64  # integer buffers keep their dtype
    assert list(model.parameters()) == optimizer_view
    model.to(tw.float64)
    assert weight.dtype is tw.float64
    model.to(dtype=tw.float32)
    assert weight.dtype is tw.float32
    model.to(tw.zeros(1, dtype=tw.float64))
    assert weight.dtype is tw.float64
    assert model(tw.randn(4, 3)).dtype is tw.float64
    with pytest.raises(TypeError, match="floating point"):
        model.to(tw.int32)
    with pytest.raises(TypeError, match="expects a device"):
        model.to(3)


def test_to_device_keeps_parameters_usable_by_an_optimizer() -> None:
    tw.manual_seed(0)
    with tw.device("numpy"):
        model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1), nn.BatchNorm1d(1))
        x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    optimizer = tw.optim.SGD(model.parameters(), lr=0.1)
    weight = model[0].weight
    before = host(weight).copy()
    assert model.to("torch:cpu") is model
    assert model[0].weight is weight and weight.device == "torch:cpu"
    assert all(t.device == "torch:cpu" for t in model.state_dict().values())
    np.testing.assert_array_equal(host(weight), before)
    with tw.device("torch:cpu"):
        model(tw.tensor(x)).pow(2).mean().backward()
        optimizer.step()
    assert weight.device == "torch:cpu"
    assert not np.allclose(host(weight), before)  # the optimizer updated the module's tensor
    model.to(tw.zeros(1, device="numpy").device)  # a Device object works too
    assert model[0].weight is weight and weight.device == "numpy"
    assert weight.grad.device == "numpy"


def test_repr_matches_torch() -> None:
    ours = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.Sequential(OrderedDict(pool=nn.MaxPool2d(2), flat=nn.Flatten())),
        nn.ModuleList([nn.Linear(4, 4) for _ in range(3)] + [nn.Dropout(0.1)]),
        nn.ModuleDict({"head": nn.Linear(4, 2), "act": nn.Softmax(dim=-1)}),
        nn.Identity(),
    )
    theirs = torch.nn.Sequential(
        torch.nn.Conv2d(1, 4, 3, padding=1),
        torch.nn.ReLU(inplace=True),
        torch.nn.Sequential(OrderedDict(pool=torch.nn.MaxPool2d(2), flat=torch.nn.Flatten())),
        torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(3)] + [torch.nn.Dropout(0.1)]),
        torch.nn.ModuleDict({"head": torch.nn.Linear(4, 2), "act": torch.nn.Softmax(dim=-1)}),
        torch.nn.Identity(),
    )
    assert repr(ours) == repr(theirs)
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList()) == "ModuleList()"


def test_forward_hooks(backend: str) -> None:
    layer = nn.Linear(2, 2)
    calls = []
    pre = layer.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    post = layer.register_forward_hook(lambda m, args, out: calls.append(out) or out + 1)
    out = layer(tw.randn(3, 2))
    assert_close(out, np.broadcast_to(host(layer.bias) + 1, (3, 2)))
    assert len(calls) == 1
    pre.remove()
    with post:
        pass  # leaving the context removes the hook
    x = tw.randn(3, 2)
    assert_close(layer(x), host(x) @ host(layer.weight).T + host(layer.bias))
    assert len(calls) == 1


def test_deepcopy_gives_independent_parameters(backend: str) -> None:
    model = nn.Linear(2, 2)
    clone = copy.deepcopy(model)
    assert isinstance(clone.weight, nn.Parameter) and clone.weight is not model.weight
    np.testing.assert_array_equal(host(clone.weight), host(model.weight))
    with tw.no_grad():
        clone.weight.fill_(0.0)
    assert np.abs(host(model.weight)).sum() > 0
