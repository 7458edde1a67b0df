"""Module utilities that tutorial programs use and tensorweaver lacked, against PyTorch:
``nn.utils.parametrize`` (register, assign through ``right_inverse``, remove, cache),
``nn.utils.parametrizations.weight_norm``/``spectral_norm`` and the hook-based
``nn.utils.weight_norm``/``spectral_norm``, ``nn.utils.fusion`` (batch norm folded into
the layer before it), ``nn.utils.skip_init``, ``nn.utils.stateless.functional_call`` and
``nn.AdaptiveLogSoftmaxWithLoss``.

The last test holds the gaps found the same way in files other helpers own, as strict xfails
that fail once the gap is closed."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from module_reference import assert_close, check_layer, copy_weights


def _symmetric(lib: Any) -> Any:
    """The parametrize tutorial's Symmetric: the upper triangle mirrored."""

    class Symmetric(lib.nn.Module):
        def forward(self, X: Any) -> Any:
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A: Any) -> Any:
            return A.triu()

    return Symmetric()


def _scaled(lib: Any, factor: float) -> Any:
    class Scale(lib.nn.Module):
        def forward(self, X: Any) -> Any:
            return X * factor

        def right_inverse(self, A: Any) -> Any:
            return A / factor

    return Scale()


@pytest.mark.parametrize(
    ("make", "shape", "dim"),
    [
        (lambda lib: lib.nn.Linear(4, 3), (5, 4), 0),
        (lambda lib: lib.nn.Linear(4, 3), (5, 4), 1),
        (lambda lib: lib.nn.Linear(4, 3), (5, 4), None),
        (lambda lib: lib.nn.Conv1d(2, 3, 3), (2, 2, 7), 0),
    ],
)
@pytest.mark.parametrize("form", ["parametrizations", "hook"])
def test_weight_norm_matches_torch(
    backend: str, make: Any, shape: tuple, dim: Any, form: str
) -> None:
    def wrapped(lib: Any) -> Any:
        if form == "hook":
            return lib.nn.utils.weight_norm(make(lib), dim=dim)
        return lib.nn.utils.parametrizations.weight_norm(make(lib), dim=dim)

    tw_module, torch_module = wrapped(tw), wrapped(torch)
    assert list(tw_module.state_dict()) == list(torch_module.state_dict())
    x = np.random.default_rng(0).standard_normal(shape)
    check_layer(tw_module, torch_module, x)
    assert_close(tw_module.weight, torch_module.weight)


def test_remove_weight_norm_keeps_the_weight(backend: str) -> None:
    modules = [lib.nn.utils.weight_norm(lib.nn.Linear(3, 2)) for lib in (tw, torch)]
    copy_weights(modules[0], modules[1].double())
    removed = [lib.nn.utils.remove_weight_norm(m) for lib, m in zip((tw, torch), modules)]
    assert list(removed[0].state_dict()) == list(removed[1].state_dict()) == ["bias", "weight"]
    assert isinstance(removed[0].weight, tw.nn.Parameter)
    assert_close(removed[0].weight, removed[1].weight)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        tw.nn.utils.remove_weight_norm(removed[0])


def test_register_parametrization_like_torch(backend: str) -> None:
    P = [lib.nn.utils.parametrize for lib in (tw, torch)]
    layers = [lib.nn.Linear(3, 3) for lib in (tw, torch)]
    for p, lib, layer in zip(P, (tw, torch), layers):
        p.register_parametrization(layer, "weight", _symmetric(lib))
        p.register_parametrization(layer, "weight", _scaled(lib, 2.0))
        assert p.is_parametrized(layer) and p.is_parametrized(layer, "weight")
        assert not p.is_parametrized(layer, "bias")
        assert p.type_before_parametrizations(layer) is lib.nn.Linear
    assert type(layers[0]).__name__ == type(layers[1]).__name__ == "ParametrizedLinear"
    assert list(layers[0].state_dict()) == list(layers[1].state_dict())
    check_layer(layers[0], layers[1], np.random.default_rng(0).standard_normal((4, 3)))
    assert_close(layers[0].weight, layers[0].weight.T)

    # assigning the parametrized tensor stores the chain's right inverse
    value = np.arange(9.0).reshape(3, 3)
    value = value + value.T
    layers[0].weight = tw.tensor(value)
    layers[1].weight = torch.tensor(value)
    assert_close(
        layers[0].parametrizations.weight.original, layers[1].parametrizations.weight.original
    )
    assert_close(layers[0].weight, layers[1].weight)

    # a copy keeps its own parametrized class and tensors
    twin = copy.deepcopy(layers[0])
    assert type(twin).__name__ == "ParametrizedLinear"
    assert_close(twin.weight, layers[0].weight)

    with tw.nn.utils.parametrize.cached():
        assert layers[0].weight is layers[0].weight
    assert layers[0].weight is not layers[0].weight

    for p, layer, leave in zip(P, layers, (True, True)):
        p.remove_parametrizations(layer, "weight", leave_parametrized=leave)
    assert type(layers[0]) is tw.nn.Linear and type(layers[1]) is torch.nn.Linear
    assert list(layers[0].state_dict()) == list(layers[1].state_dict()) == ["bias", "weight"]
    assert isinstance(layers[0].weight, tw.nn.Parameter)
    assert_close(layers[0].weight, layers[1].weight)


def test_parametrized_weight_trains_like_torch(backend: str) -> None:
    """An optimizer holds the originals: SGD steps change the parametrized weight as in
    PyTorch, and the registered original stays the same Parameter object."""
    results = []
    for lib in (tw, torch):
        layer = lib.nn.Linear(3, 3).double()
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(np.sin(np.arange(9.0)).reshape(3, 3)))
            layer.bias.zero_()
        first = layer.weight
        lib.nn.utils.parametrize.register_parametrization(layer, "weight", _symmetric(lib))
        original = layer.parametrizations.weight.original
        assert original is first
        opt = lib.optim.SGD(layer.parameters(), lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            layer(lib.ones(2, 3, dtype=lib.float64)).square().sum().backward()
            opt.step()
        assert layer.parametrizations.weight.original is original
        results.append(np.asarray(layer.weight.detach().tolist()))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def test_parametrization_errors_match_torch() -> None:
    P = tw.nn.utils.parametrize
    layer = tw.nn.Linear(3, 2)

    class Flatten(tw.nn.Module):
        def forward(self, X: Any) -> Any:
            return X.reshape(-1)

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(layer, "weight", Flatten())
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        P.register_parametrization(layer, "nothing", Flatten())
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        P.remove_parametrizations(layer, "weight")
    tw.nn.utils.parametrizations.weight_norm(layer)
    with pytest.raises(ValueError, match="sequence of tensors"):
        P.remove_parametrizations(layer, "weight", leave_parametrized=False)
    tw.nn.utils.weight_norm(tw_layer := tw.nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        tw.nn.utils.weight_norm(tw_layer)


SPECTRAL = [
    (lambda lib: lib.nn.Linear(4, 3), (5, 4)),
    (lambda lib: lib.nn.Conv2d(2, 3, 2), (2, 2, 4, 4)),
    # transposed convolutions normalize along dim 1 by default
    (lambda lib: lib.nn.ConvTranspose2d(3, 2, 2), (2, 3, 3, 3)),
]


@pytest.mark.parametrize(("make", "shape"), SPECTRAL)
@pytest.mark.parametrize("form", ["parametrizations", "hook"])
def test_spectral_norm_matches_torch(backend: str, make: Any, shape: tuple, form: str) -> None:
    """Same weights and singular-vector estimates: three training forwards (each refines
    u and v by power iteration), then an eval forward (no refinement)."""

    def wrapped(lib: Any) -> Any:
        utils = lib.nn.utils.parametrizations if form == "parametrizations" else lib.nn.utils
        return utils.spectral_norm(make(lib), n_power_iterations=2)

    tw_module, torch_module = wrapped(tw), wrapped(torch)
    assert list(tw_module.state_dict()) == list(torch_module.state_dict())
    x = np.random.default_rng(0).standard_normal(shape)
    for step in range(3):
        check_layer(tw_module, torch_module, x, copy=step == 0)
        for key, value in torch_module.state_dict().items():
            assert_close(tw_module.state_dict()[key], value)
    tw_module.eval()
    torch_module.eval()
    check_layer(tw_module, torch_module, x, copy=False)
    assert_close(tw_module.weight, torch_module.weight)


def test_remove_spectral_norm_keeps_the_weight(backend: str) -> None:
    modules = [lib.nn.utils.spectral_norm(lib.nn.Linear(3, 2)) for lib in (tw, torch)]
    copy_weights(modules[0], modules[1].double())
    removed = [lib.nn.utils.remove_spectral_norm(m) for lib, m in zip((tw, torch), modules)]
    assert list(removed[0].state_dict()) == list(removed[1].state_dict())
    assert_close(removed[0].weight, removed[1].weight)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        tw.nn.utils.remove_spectral_norm(removed[0])


FUSIONS = [
    ("conv", lambda lib: (lib.nn.Conv2d(2, 3, 2), lib.nn.BatchNorm2d(3)), (2, 2, 4, 4), {}),
    (
        "conv-nobias",
        lambda lib: (lib.nn.Conv1d(2, 3, 2, bias=False), lib.nn.BatchNorm1d(3)),
        (2, 2, 5),
        {},
    ),  # fmt: skip
    (
        "conv-transpose",
        lambda lib: (lib.nn.ConvTranspose2d(3, 2, 2), lib.nn.BatchNorm2d(2)),
        (1, 3, 3, 3),
        {"transpose": True},
    ),  # fmt: skip
    ("linear", lambda lib: (lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(3)), (5, 4), {}),
    ("linear-one-feature", lambda lib: (lib.nn.Linear(4, 3), lib.nn.BatchNorm1d(1)), (5, 4), {}),
]


@pytest.mark.parametrize(("kind", "make", "shape", "kwargs"), FUSIONS, ids=[f[0] for f in FUSIONS])
def test_fusion_matches_torch_and_the_unfused_layers(
    backend: str, kind: str, make: Any, shape: tuple, kwargs: dict
) -> None:
    rng = np.random.default_rng(0)
    pairs = []
    for lib in (torch, tw):
        layer, bn = make(lib)
        pairs.append((layer.double().eval(), bn.double().eval()))
    (torch_layer, torch_bn), (tw_layer, tw_bn) = pairs
    with torch.no_grad():  # running statistics and affine parameters that are not the defaults
        for t in (torch_bn.running_mean, torch_bn.weight, torch_bn.bias):
            t.copy_(torch.tensor(rng.standard_normal(tuple(t.shape))))
        torch_bn.running_var.copy_(
            torch.tensor(rng.uniform(0.5, 2.0, tuple(torch_bn.running_var.shape)))
        )
    copy_weights(tw_layer, torch_layer)
    copy_weights(tw_bn, torch_bn)
    if kind.startswith("linear"):
        fused = tw.nn.utils.fusion.fuse_linear_bn_eval(tw_layer, tw_bn)
        expected = torch.nn.utils.fusion.fuse_linear_bn_eval(torch_layer, torch_bn)
    else:
        fused = tw.nn.utils.fusion.fuse_conv_bn_eval(tw_layer, tw_bn, **kwargs)
        expected = torch.nn.utils.fusion.fuse_conv_bn_eval(torch_layer, torch_bn, **kwargs)
    assert type(fused) is type(tw_layer) and fused is not tw_layer
    for name in ("weight", "bias"):
        got = getattr(fused, name)
        want = getattr(expected, name)
        assert isinstance(got, tw.nn.Parameter) and got.is_leaf
        assert got.requires_grad == want.requires_grad  # a bias made of zeros needs none
        assert_close(got, want)
    x = rng.standard_normal(shape)
    if kind != "linear-one-feature":  # that bn normalizes a different axis than it is fused on
        assert_close(fused(tw.tensor(x)), tw_bn(tw_layer(tw.tensor(x))))


def test_fusion_needs_eval_mode() -> None:
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        tw.nn.utils.fusion.fuse_conv_bn_eval(tw.nn.Conv2d(1, 2, 1), tw.nn.BatchNorm2d(2).eval())
    with pytest.raises(AssertionError, match="out_features == bn.num_features"):
        tw.nn.utils.fusion.fuse_linear_bn_eval(
            tw.nn.Linear(2, 3).eval(), tw.nn.BatchNorm1d(2).eval()
        )


@pytest.mark.parametrize(
    ("cutoffs", "div_value", "head_bias", "target"),
    [
        ([3, 6], 2.0, False, [0, 4, 9, 2, 7, 5]),  # every cluster
        ([4], 4.0, True, [0, 1, 2, 3, 1, 0]),  # only the shortlist
        ([2, 5, 8], 2.0, True, [9, 8, 6, 5, 3, 2]),  # only the tail clusters
    ],
)
def test_adaptive_log_softmax_matches_torch(
    backend: str, cutoffs: list, div_value: float, head_bias: bool, target: list
) -> None:
    modules = [
        lib.nn.AdaptiveLogSoftmaxWithLoss(8, 10, cutoffs, div_value=div_value, head_bias=head_bias)
        for lib in (tw, torch)
    ]
    torch_module = modules[1].double()
    copy_weights(modules[0], torch_module)
    x = np.random.default_rng(0).standard_normal((6, 8))
    tw_x, torch_x = tw.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got = modules[0](tw_x, tw.tensor(target))
    expected = torch_module(torch_x, torch.tensor(target))
    assert_close(got.output, expected.output)
    assert_close(got.loss, expected.loss)
    got.loss.backward()
    expected.loss.backward()
    assert_close(tw_x.grad, torch_x.grad)
    for p, q in zip(modules[0].parameters(), torch_module.parameters()):
        if q.grad is None:  # a cluster no target falls in
            assert p.grad is None
        else:
            assert_close(p.grad, q.grad)
    assert_close(modules[0].log_prob(tw.tensor(x)), torch_module.log_prob(torch.tensor(x)))
    assert_close(modules[0].predict(tw.tensor(x)), torch_module.predict(torch.tensor(x)))
    # one unbatched row and a 0-d target
    one = modules[0](tw.tensor(x[0]), tw.tensor(target[0]))
    assert_close(one.output, torch_module(torch.tensor(x[0]), torch.tensor(target[0])).output)


def test_adaptive_log_softmax_repr_matches_torch() -> None:
    ours = repr(tw.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0))
    theirs = repr(torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0))
    assert ours == theirs


def test_adaptive_log_softmax_errors_match_torch() -> None:
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique"):
        tw.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5, 3])
    with pytest.raises(ValueError, match="larger than 0"):
        tw.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [])
    module = tw.nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        module(tw.zeros(2, 4), tw.tensor([1, 10]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        module(tw.zeros(3, 4), tw.tensor([1, 2]))


def test_skip_init_builds_the_module_as_torch_does(backend: str) -> None:
    for lib in (tw, torch):
        layer = lib.nn.utils.skip_init(lib.nn.Linear, 3, 2, bias=False)
        assert type(layer) is lib.nn.Linear and tuple(layer.weight.shape) == (2, 3)
        assert layer.bias is None and layer.weight.requires_grad

    class NoDevice(tw.nn.Module):
        def __init__(self, n: int) -> None:
            super().__init__()

    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        tw.nn.utils.skip_init(NoDevice, 3)


STATELESS_DEPRECATED = "ignore:`torch.nn.utils.stateless.functional_call` is deprecated"


def _maml_step(lib: Any, net: Any, x: np.ndarray, y: np.ndarray) -> tuple[Any, list]:
    """One MAML inner step through functional_call (create_graph), then the outer loss and
    its gradient with respect to the module's own parameters."""
    params = dict(net.named_parameters())
    call = lib.nn.utils.stateless.functional_call
    inner = (call(net, params, (lib.tensor(x),)) - lib.tensor(y)).square().mean()
    grads = lib.autograd.grad(inner, list(params.values()), create_graph=True)
    fast = {n: p - 0.1 * g for (n, p), g in zip(params.items(), grads)}
    outer = (call(net, fast, lib.tensor(x)) - lib.tensor(y)).square().mean()
    outer.backward()
    return outer, [p.grad for p in net.parameters()]


@pytest.mark.filterwarnings(STATELESS_DEPRECATED)
def test_functional_call_maml_step_matches_torch(backend: str) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((6, 3)), rng.standard_normal((6, 1))
    nets = [
        lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 1))
        for lib in (tw, torch)
    ]
    copy_weights(nets[0], nets[1].double())
    tw_outer, tw_grads = _maml_step(tw, nets[0], x, y)
    torch_outer, torch_grads = _maml_step(torch, nets[1], x, y)
    assert_close(tw_outer, torch_outer)
    for got, expected in zip(tw_grads, torch_grads):
        assert_close(got, expected)
    # the module's own tensors are back
    assert all(isinstance(p, tw.nn.Parameter) for p in nets[0].parameters())
    assert_close(nets[0](tw.tensor(x)), nets[1](torch.tensor(x)))


@pytest.mark.filterwarnings(STATELESS_DEPRECATED)
def test_functional_call_buffers_ties_and_errors(backend: str) -> None:
    call = tw.nn.utils.stateless.functional_call
    x = tw.tensor(np.random.default_rng(1).standard_normal((4, 3)))
    net = tw.nn.Sequential(tw.nn.Linear(3, 3), tw.nn.BatchNorm1d(3)).eval()
    mean = tw.ones(3)
    out = call(net, {"1.running_mean": mean}, (x,))
    assert_close(out, (net[0](x) - 1.0) / (1.0 + net[1].eps) ** 0.5)
    assert_close(net[1].running_mean, tw.zeros(3))  # restored
    # a tied weight follows the name given for it, unless tie_weights=False
    tied = tw.nn.Sequential(tw.nn.Linear(3, 3, bias=False), tw.nn.Linear(3, 3, bias=False))
    tied[1].weight = tied[0].weight
    eye = tw.eye(3)
    assert_close(call(tied, {"0.weight": eye}, (x,)), x)
    assert not tw.allclose(call(tied, {"0.weight": eye}, (x,), tie_weights=False), x)
    with pytest.raises(RuntimeError, match=r"Missing key\(s\): '1\.weight'\."):
        call(tied, {"0.weight": eye}, (x,), tie_weights=False, strict=True)
    with pytest.raises(ValueError, match="different values for the tied tensors"):
        call(tied, {"0.weight": eye, "1.weight": 2 * eye}, (x,))
    # restored after the module raises too
    with pytest.raises(RuntimeError):
        call(tied, {"0.weight": tw.ones(2, 2)}, (x,))
    assert isinstance(tied[0].weight, tw.nn.Parameter) and tied[1].weight is tied[0].weight
    with pytest.warns(FutureWarning, match="deprecated"):
        call(tied, {}, (x,))


def _functional_call(lib: Any) -> Any:
    layer = lib.nn.Linear(3, 1)
    params = {"weight": lib.ones(1, 3, dtype=lib.float64), "bias": lib.zeros(1, dtype=lib.float64)}
    return lib.func.functional_call(layer, params, (lib.ones(2, 3, dtype=lib.float64),))


OTHER_OWNERS = {
    # ops/methods.py: the pre-0.4 constructor, as in char-rnn ports' init_hidden
    "Tensor.new-sizes": lambda lib: lib.ones(2, dtype=lib.float64).new(2, 3).zero_(),
    "Tensor.new-data": lambda lib: lib.ones(2, dtype=lib.float64).new([1.0, 2.0]),
    # ops: a strided view (sliding windows in some tutorials)
    "Tensor.as_strided": lambda lib: lib.arange(6.0, dtype=lib.float64).as_strided((2, 2), (1, 2)),
    # nn/modules/module.py: materializing a module built on the meta device
    "Module.to_empty": lambda lib: (
        lib.nn.Linear(2, 2).to_empty(device=lib.ones(1).device).weight.shape[0]
    ),
    # nn/init.py
    "nn.init.dirac_": lambda lib: lib.nn.init.dirac_(lib.empty(2, 2, 3, dtype=lib.float64)),
    "nn.init.dirac_-groups": lambda lib: lib.nn.init.dirac_(
        lib.empty(4, 3, 3, 5, dtype=lib.float64), groups=2
    ),
    # torch.func.functional_call, used by MAML-style tutorials
    "torch.func.functional_call": _functional_call,
}


#: Still missing: each of these fails until it exists.
MISSING: set[str] = set()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=f"tensorweaver lacks {n}"))
        if n in MISSING
        else n
        for n in OTHER_OWNERS
    ],
)
def test_gaps_in_other_files(name: str) -> None:
    expected = OTHER_OWNERS[name](torch)
    got = OTHER_OWNERS[name](tw)
    if isinstance(expected, torch.Tensor):
        assert_close(got, expected)
    else:
        assert got == expected


@pytest.mark.parametrize("shape, sparsity", [((6, 3), 0.5), ((5, 4), 0.1), ((4, 2), 0.0)])
def test_sparse_init_zeros_as_many_rows_per_column_as_torch(shape: tuple, sparsity: float) -> None:
    counts = []
    for lib in (torch, tw):
        t = lib.nn.init.sparse_(lib.empty(*shape), sparsity, std=0.5)
        counts.append([int(c) for c in (t == 0).sum(0).tolist()])
    assert counts[0] == counts[1]
    with pytest.raises(ValueError, match="2 dimensions"):
        tw.nn.init.sparse_(tw.empty(2, 2, 2), 0.5)


def test_to_empty_without_recursion_leaves_children_alone() -> None:
    outer = tw.nn.Sequential(tw.nn.Linear(2, 2))
    outer.register_buffer("scale", tw.ones(3))
    inner = outer[0].weight.detach().clone()
    outer.to_empty(device=tw.ones(1).device, recurse=False)
    assert tw.equal(outer.scale, tw.zeros(3)) and tw.equal(outer[0].weight.detach(), inner)
