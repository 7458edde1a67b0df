"""nn.utils against PyTorch, the same code run with ``m = torch`` and ``m = tensorweaver``:
gradient clipping, parameters as one vector, weight and spectral norm (hooks and
parametrizations), nn.utils.parametrize, the packing helpers of nn.utils.rnn, conv/linear +
batch-norm fusion and functional_call. Values, names and exception classes must agree."""

from __future__ import annotations

import math
from typing import Any, Callable

import pytest
import test_sweep_module_api

backend = test_sweep_module_api.backend  # the fixture: numpy and torch:cpu in float64
same = test_sweep_module_api.same


def with_grads(m: Any, scale: float = 1.0) -> list:
    """Three parameters with known gradients (one without)."""
    params = [m.nn.Parameter(m.zeros(2, 3)), m.nn.Parameter(m.zeros(4)), m.nn.Parameter(m.zeros(1))]
    params[0].grad = m.arange(6, dtype=m.float64).reshape(2, 3) * scale - 2
    params[1].grad = m.tensor([0.5, -3.0, 2.0, 1.0]) * scale
    return params


def clipped(m: Any, **kwargs: Any) -> Any:
    params = with_grads(m)
    total = m.nn.utils.clip_grad_norm_(params, **kwargs)
    return total, [p.grad for p in params]


CLIPPING: dict[str, Callable[[Any], Any]] = {
    "norm 2": lambda m: clipped(m, max_norm=1.0),
    "norm 1": lambda m: clipped(m, max_norm=2.0, norm_type=1),
    "norm inf": lambda m: clipped(m, max_norm=1.0, norm_type=math.inf),
    "norm inf string": lambda m: clipped(m, max_norm=1.0, norm_type="inf"),
    "norm 0.5": lambda m: clipped(m, max_norm=1.0, norm_type=0.5),
    "norm 3 foreach": lambda m: clipped(m, max_norm=1.0, norm_type=3.0, foreach=True),
    "no foreach": lambda m: clipped(m, max_norm=1.0, foreach=False),
    "large max_norm": lambda m: clipped(m, max_norm=100.0),
    "single tensor": lambda m: (lambda p: (m.nn.utils.clip_grad_norm_(p[0], 1.0), p[0].grad))(
        with_grads(m)
    ),
    "generator": lambda m: (
        lambda p: (m.nn.utils.clip_grad_norm_((x for x in p), 1.0), [x.grad for x in p])
    )(with_grads(m)),
    "no grads": lambda m: m.nn.utils.clip_grad_norm_([m.nn.Parameter(m.zeros(2))], 1.0),
    "empty": lambda m: m.nn.utils.clip_grad_norm_([], 1.0),
    "nonfinite error": lambda m: _nonfinite(m, True),
    "nonfinite allowed": lambda m: _nonfinite(m, False),
    "value": lambda m: (lambda p: (m.nn.utils.clip_grad_value_(p, 1.5), [x.grad for x in p]))(
        with_grads(m)
    ),
    "value foreach": lambda m: (
        lambda p: (m.nn.utils.clip_grad_value_(p, 0.5, foreach=True), [x.grad for x in p])
    )(with_grads(m)),
    "value single": lambda m: (lambda p: (m.nn.utils.clip_grad_value_(p[1], 1.0), p[1].grad))(
        with_grads(m)
    ),
    "get_total_norm": lambda m: m.nn.utils.get_total_norm([p.grad for p in with_grads(m)[:2]]),
    "get_total_norm 1": lambda m: m.nn.utils.get_total_norm(
        [p.grad for p in with_grads(m)[:2]], norm_type=1.0
    ),
    "deprecated clip_grad_norm": lambda m: _deprecated_clip(m),
    "clip_grads_with_norm_": lambda m: (
        lambda p: (m.nn.utils.clip_grads_with_norm_(p, 1.0, m.tensor(10.0)), [x.grad for x in p])
    )(with_grads(m)),
}


def _deprecated_clip(m: Any) -> Any:
    params = with_grads(m)
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = m.nn.utils.clip_grad_norm(params, 1.0)
    return total, [p.grad for p in params]


def _nonfinite(m: Any, error: bool) -> Any:
    params = with_grads(m)
    params[1].grad[0] = math.inf
    total = m.nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=error)
    return total, [p.grad for p in params]


@pytest.mark.parametrize("name", list(CLIPPING))
def test_clip_grad(backend: str, name: str) -> None:
    same(CLIPPING[name])


def vector_case(m: Any) -> Any:
    params = with_grads(m)
    vector = m.nn.utils.parameters_to_vector(params)
    m.nn.utils.vector_to_parameters(m.arange(vector.numel(), dtype=m.float64), params)
    return vector, params


VECTORS: dict[str, Callable[[Any], Any]] = {
    "roundtrip": vector_case,
    "not a tensor": lambda m: m.nn.utils.vector_to_parameters([1.0], with_grads(m)),
    "too short": lambda m: m.nn.utils.vector_to_parameters(m.zeros(3), with_grads(m)),
    "grad flows": lambda m: _vector_grad(m),
}


def _vector_grad(m: Any) -> Any:
    params = [m.nn.Parameter(m.ones(2)), m.nn.Parameter(m.ones(3))]
    (m.nn.utils.parameters_to_vector(params) * m.arange(5, dtype=m.float64)).sum().backward()
    return [p.grad for p in params]


@pytest.mark.parametrize("name", list(VECTORS))
def test_parameters_vector(backend: str, name: str) -> None:
    same(VECTORS[name])


def linear(m: Any, out: int = 3, inp: int = 2) -> Any:
    layer = m.nn.Linear(inp, out)
    with m.no_grad():
        layer.weight.copy_(m.arange(out * inp, dtype=m.float64).reshape(out, inp) / 3 - 0.7)
        layer.bias.copy_(m.arange(out, dtype=m.float64) * 0.1)
    return layer


def forward_backward(m: Any, layer: Any) -> Any:
    x = m.tensor([[1.0, -2.0], [0.5, 3.0]], requires_grad=True)
    out = layer(x)
    (out * m.arange(out.numel(), dtype=m.float64).reshape(out.shape)).sum().backward()
    grads = [(n, p.grad) for n, p in layer.named_parameters()]
    return out, x.grad, grads


def old_weight_norm(m: Any, dim: Any = 0) -> Any:
    layer = m.nn.utils.weight_norm(linear(m), dim=dim)
    names = [n for n, _ in layer.named_parameters()]
    result = forward_backward(m, layer)
    m.nn.utils.remove_weight_norm(layer)
    return names, result, [n for n, _ in layer.named_parameters()], layer.weight


def new_weight_norm(m: Any, dim: Any = 0) -> Any:
    layer = m.nn.utils.parametrizations.weight_norm(linear(m), dim=dim)
    names = [n for n, _ in layer.named_parameters()]
    keys = list(layer.state_dict())
    result = forward_backward(m, layer)
    m.nn.utils.parametrize.remove_parametrizations(layer, "weight")
    return names, keys, result, type(layer).__name__, layer.weight


NORMS: dict[str, Callable[[Any], Any]] = {
    "weight_norm": old_weight_norm,
    "weight_norm dim 1": lambda m: old_weight_norm(m, 1),
    "weight_norm dim None": lambda m: old_weight_norm(m, None),
    "weight_norm dim -1": lambda m: old_weight_norm(m, -1),
    "weight_norm twice": lambda m: m.nn.utils.weight_norm(m.nn.utils.weight_norm(linear(m))),
    "remove_weight_norm absent": lambda m: m.nn.utils.remove_weight_norm(linear(m)),
    "weight_norm missing name": lambda m: m.nn.utils.weight_norm(linear(m), name="nothing"),
    "parametrized weight_norm": new_weight_norm,
    "parametrized weight_norm dim 1": lambda m: new_weight_norm(m, 1),
    "parametrized weight_norm dim None": lambda m: new_weight_norm(m, None),
    "spectral_norm names": lambda m: _spectral_names(m, old=True),
    "parametrized spectral_norm names": lambda m: _spectral_names(m, old=False),
    "spectral_norm eval after load": lambda m: _spectral_loaded(m, old=True),
    "parametrized spectral_norm eval after load": lambda m: _spectral_loaded(m, old=False),
    "spectral_norm twice": lambda m: m.nn.utils.spectral_norm(m.nn.utils.spectral_norm(linear(m))),
    "remove_spectral_norm absent": lambda m: m.nn.utils.remove_spectral_norm(linear(m)),
    "spectral_norm bad n_power_iterations": lambda m: m.nn.utils.parametrizations.spectral_norm(
        linear(m), n_power_iterations=0
    ),
}


def _spectral_names(m: Any, old: bool) -> Any:
    norm = m.nn.utils.spectral_norm if old else m.nn.utils.parametrizations.spectral_norm
    layer = norm(linear(m, 4, 3))
    return (
        [n for n, _ in layer.named_parameters()],
        [n for n, _ in layer.named_buffers()],
        list(layer.state_dict()),
        type(layer).__name__,
    )


def _spectral_loaded(m: Any, old: bool) -> Any:
    """The torch layer's state (with its u and v) loaded into both; then eval forwards."""
    import torch

    torch.manual_seed(0)
    reference = (
        torch.nn.utils.spectral_norm if old else torch.nn.utils.parametrizations.spectral_norm
    )(linear(torch, 4, 3))
    state = {k: v.detach().clone() for k, v in reference.state_dict().items()}
    norm = m.nn.utils.spectral_norm if old else m.nn.utils.parametrizations.spectral_norm
    layer = norm(linear(m, 4, 3))
    layer.load_state_dict({k: m.tensor(v.numpy()) for k, v in state.items()})
    layer.eval()
    return layer(m.tensor([[1.0, 2.0, -1.0]])), layer.weight


@pytest.mark.parametrize("name", list(NORMS))
def test_norms(backend: str, name: str) -> None:
    same(NORMS[name])


def symmetric(m: Any, inverse: bool = False) -> Any:
    class Symmetric(m.nn.Module):
        def forward(self, x: Any) -> Any:
            return x.triu() + x.triu(1).transpose(-1, -2)

    class SymmetricWithInverse(Symmetric):
        def right_inverse(self, a: Any) -> Any:
            return a.triu()

    return SymmetricWithInverse() if inverse else Symmetric()


def square(m: Any) -> Any:
    layer = m.nn.Linear(3, 3)
    with m.no_grad():
        layer.weight.copy_(m.arange(9, dtype=m.float64).reshape(3, 3))
        layer.bias.zero_()
    return layer


def parametrized(m: Any, inverse: bool = False, unsafe: bool = False) -> Any:
    layer = square(m)
    m.nn.utils.parametrize.register_parametrization(
        layer, "weight", symmetric(m, inverse), unsafe=unsafe
    )
    return layer


PARAMETRIZE: dict[str, Callable[[Any], Any]] = {
    "weight": lambda m: parametrized(m).weight,
    "names": lambda m: (
        [n for n, _ in parametrized(m).named_parameters()],
        list(parametrized(m).state_dict()),
        type(parametrized(m)).__name__,
    ),
    "is_parametrized": lambda m: (
        m.nn.utils.parametrize.is_parametrized(parametrized(m)),
        m.nn.utils.parametrize.is_parametrized(parametrized(m), "weight"),
        m.nn.utils.parametrize.is_parametrized(parametrized(m), "bias"),
        m.nn.utils.parametrize.is_parametrized(square(m)),
    ),
    "type_before": lambda m: (
        m.nn.utils.parametrize.type_before_parametrizations(parametrized(m)).__name__
    ),
    "gradient": lambda m: forward_backward_square(m, parametrized(m)),
    "assign with right_inverse": lambda m: _assign(m, True),
    "assign without right_inverse": lambda m: _assign(m, False),
    "right_inverse at registration": lambda m: (
        parametrized(m, inverse=True).parametrizations.weight.original
    ),
    "cached": lambda m: _cached(m),
    "remove leave": lambda m: _remove(m, True),
    "remove original": lambda m: _remove(m, False),
    "remove absent": lambda m: m.nn.utils.parametrize.remove_parametrizations(square(m), "weight"),
    "two parametrizations": lambda m: _two(m),
    "missing tensor": lambda m: m.nn.utils.parametrize.register_parametrization(
        square(m), "nothing", symmetric(m)
    ),
    "shape changing needs unsafe": lambda m: m.nn.utils.parametrize.register_parametrization(
        square(m), "weight", _Flatten(m)
    ),
    "shape changing unsafe": lambda m: (
        m.nn.utils.parametrize.register_parametrization(
            square(m), "weight", _Flatten(m), unsafe=True
        ).weight
    ),
    "repr": lambda m: repr(parametrized(m)),
    "buffer parametrized": lambda m: _buffer(m),
    "transfer one original": lambda m: _transfer(m, lambda layer: parametrized(m), None),
    "transfer weight_norm": lambda m: _transfer(
        m, lambda layer: m.nn.utils.parametrizations.weight_norm(layer), "weight"
    ),
    "transfer to a module without it": lambda m: _transfer(
        m, lambda layer: parametrized(m), None, target=m.nn.Module()
    ),
    "transfer unparametrized": lambda m: _transfer(m, lambda layer: layer, None),
}


class _Flatten:
    def __new__(cls, m: Any) -> Any:
        class Flatten(m.nn.Module):
            def forward(self, x: Any) -> Any:
                return x.reshape(-1)

        return Flatten()


def forward_backward_square(m: Any, layer: Any) -> Any:
    x = m.tensor([[1.0, -2.0, 0.5]], requires_grad=True)
    (layer(x) * m.tensor([[1.0, 2.0, 3.0]])).sum().backward()
    return x.grad, [(n, p.grad) for n, p in layer.named_parameters()]


def _assign(m: Any, inverse: bool) -> Any:
    layer = parametrized(m, inverse=inverse)
    layer.weight = m.ones(3, 3) * 2
    return layer.weight, layer.parametrizations.weight.original


def _cached(m: Any) -> Any:
    layer = parametrized(m)
    with m.nn.utils.parametrize.cached():
        first = layer.weight
        second = layer.weight
        inside = first is second
    return inside, layer.weight is layer.weight


def _remove(m: Any, leave: bool) -> Any:
    layer = parametrized(m)
    m.nn.utils.parametrize.remove_parametrizations(layer, "weight", leave_parametrized=leave)
    return layer.weight, type(layer).__name__, [n for n, _ in layer.named_parameters()]


def _two(m: Any) -> Any:
    layer = parametrized(m)

    class Double(m.nn.Module):
        def forward(self, x: Any) -> Any:
            return x * 2

    m.nn.utils.parametrize.register_parametrization(layer, "weight", Double())
    return layer.weight, len(layer.parametrizations.weight), list(layer.state_dict())


def _transfer(m: Any, make: Callable[[Any], Any], name: Any, target: Any = None) -> Any:
    source = make(square(m))
    target = square(m) if target is None else target
    with m.no_grad():
        if hasattr(target, "weight"):
            target.weight.zero_()
    out = m.nn.utils.parametrize.transfer_parametrizations_and_params(source, target, name)
    shared = [
        a is b
        for a, b in zip(
            source.parametrizations.parameters() if hasattr(source, "parametrizations") else [],
            getattr(target, "parametrizations", m.nn.Module()).parameters(),
        )
    ]
    return out is target, target.weight, list(target.state_dict()), shared


def _buffer(m: Any) -> Any:
    layer = square(m)
    layer.register_buffer("mask", m.arange(9, dtype=m.float64).reshape(3, 3))
    m.nn.utils.parametrize.register_parametrization(layer, "mask", symmetric(m))
    return layer.mask, list(layer.state_dict()), [n for n, _ in layer.named_buffers()]


@pytest.mark.parametrize("name", list(PARAMETRIZE))
def test_parametrize(backend: str, name: str) -> None:
    same(PARAMETRIZE[name])


def sequences(m: Any) -> list:
    return [m.tensor([1.0, 2.0, 3.0]), m.tensor([4.0]), m.tensor([5.0, 6.0])]


def unsorted_batch(m: Any) -> Any:
    return m.tensor([[1.0, 4.0, 5.0], [2.0, 0.0, 6.0], [3.0, 0.0, 0.0]]), [3, 1, 2]


RNN: dict[str, Callable[[Any], Any]] = {
    "pad": lambda m: m.nn.utils.rnn.pad_sequence(sequences(m)),
    "pad batch_first": lambda m: m.nn.utils.rnn.pad_sequence(sequences(m), batch_first=True),
    "pad value": lambda m: m.nn.utils.rnn.pad_sequence(sequences(m), padding_value=-1.0),
    "pad left": lambda m: m.nn.utils.rnn.pad_sequence(
        sequences(m), batch_first=True, padding_side="left"
    ),
    "pad left time first": lambda m: m.nn.utils.rnn.pad_sequence(sequences(m), padding_side="left"),
    "pad bad side": lambda m: m.nn.utils.rnn.pad_sequence(sequences(m), padding_side="middle"),
    "pad 2-D items": lambda m: m.nn.utils.rnn.pad_sequence(
        [m.ones(2, 3), m.zeros(1, 3)], batch_first=True
    ),
    "pad empty list": lambda m: m.nn.utils.rnn.pad_sequence([]),
    "pad tensor": lambda m: m.nn.utils.rnn.pad_sequence(m.ones(2, 3)),
    "unpad": lambda m: m.nn.utils.rnn.unpad_sequence(
        m.nn.utils.rnn.pad_sequence(sequences(m), batch_first=True),
        m.tensor([3, 1, 2]),
        batch_first=True,
    ),
    "unpad time first": lambda m: m.nn.utils.rnn.unpad_sequence(
        m.nn.utils.rnn.pad_sequence(sequences(m)), m.tensor([3, 1, 2])
    ),
    "pack unsorted enforce": lambda m: m.nn.utils.rnn.pack_padded_sequence(*unsorted_batch(m)),
    "pack unsorted": lambda m: tuple(
        m.nn.utils.rnn.pack_padded_sequence(*unsorted_batch(m), enforce_sorted=False)
    ),
    "pack sorted": lambda m: tuple(
        m.nn.utils.rnn.pack_padded_sequence(m.ones(3, 2), [3, 2], batch_first=False)
    ),
    "pack tensor lengths": lambda m: tuple(
        m.nn.utils.rnn.pack_padded_sequence(
            unsorted_batch(m)[0], m.tensor([3, 1, 2]), enforce_sorted=False
        )
    ),
    "pack zero length": lambda m: m.nn.utils.rnn.pack_padded_sequence(
        m.ones(3, 2), [3, 0], enforce_sorted=False
    ),
    "pack lengths count": lambda m: m.nn.utils.rnn.pack_padded_sequence(m.ones(3, 2), [3]),
    "pack batch_first": lambda m: tuple(
        m.nn.utils.rnn.pack_padded_sequence(
            unsorted_batch(m)[0].T, [3, 1, 2], batch_first=True, enforce_sorted=False
        )
    ),
    "pad_packed": lambda m: m.nn.utils.rnn.pad_packed_sequence(
        m.nn.utils.rnn.pack_padded_sequence(*unsorted_batch(m), enforce_sorted=False)
    ),
    "pad_packed total_length": lambda m: m.nn.utils.rnn.pad_packed_sequence(
        m.nn.utils.rnn.pack_padded_sequence(*unsorted_batch(m), enforce_sorted=False),
        batch_first=True,
        padding_value=9.0,
        total_length=5,
    ),
    "pad_packed total_length short": lambda m: m.nn.utils.rnn.pad_packed_sequence(
        m.nn.utils.rnn.pack_padded_sequence(*unsorted_batch(m), enforce_sorted=False),
        total_length=2,
    ),
    "pack_sequence": lambda m: tuple(
        m.nn.utils.rnn.pack_sequence(sequences(m), enforce_sorted=False)
    ),
    "pack_sequence unsorted enforce": lambda m: m.nn.utils.rnn.pack_sequence(sequences(m)),
    "unpack_sequence": lambda m: m.nn.utils.rnn.unpack_sequence(
        m.nn.utils.rnn.pack_sequence(sequences(m), enforce_sorted=False)
    ),
    "packed fields": lambda m: (
        lambda p: (p.data, p.batch_sizes, p.sorted_indices, p.unsorted_indices)
    )(m.nn.utils.rnn.pack_sequence(sequences(m), enforce_sorted=False)),
    "packed to double": lambda m: (
        m.nn.utils.rnn.pack_sequence(sequences(m), enforce_sorted=False).float().data.dtype
    ),
    "packed methods": lambda m: (
        lambda p: (
            p.is_cuda,
            p.is_pinned(),
            tuple(p.cpu()),
            p.short().data.dtype,
            p.char().data.dtype,
            p.byte().data.dtype,
            p.long().data.dtype,
            p.half().data.dtype,
        )
    )(m.nn.utils.rnn.pack_sequence(sequences(m), enforce_sorted=False)),
    "invert_permutation": lambda m: m.nn.utils.rnn.invert_permutation(m.tensor([2, 0, 1])),
    "pack gradient": lambda m: _pack_gradient(m),
}


def _pack_gradient(m: Any) -> Any:
    x = m.tensor([[1.0, 4.0, 5.0], [2.0, 0.0, 6.0], [3.0, 0.0, 0.0]], requires_grad=True)
    packed = m.nn.utils.rnn.pack_padded_sequence(x, [3, 1, 2], enforce_sorted=False)
    (packed.data * m.arange(6, dtype=m.float64)).sum().backward()
    return x.grad


@pytest.mark.parametrize("name", list(RNN))
def test_rnn_utils(backend: str, name: str) -> None:
    same(RNN[name])


def conv_bn(m: Any) -> Any:
    conv = m.nn.Conv2d(2, 3, 2)
    bn = m.nn.BatchNorm2d(3)
    with m.no_grad():
        conv.weight.copy_(m.arange(24, dtype=m.float64).reshape(3, 2, 2, 2) / 10 - 1)
        conv.bias.copy_(m.tensor([0.1, -0.2, 0.3]))
        bn.running_mean.copy_(m.tensor([0.5, -1.0, 2.0]))
        bn.running_var.copy_(m.tensor([1.5, 0.5, 2.0]))
        bn.weight.copy_(m.tensor([1.0, 2.0, -1.0]))
        bn.bias.copy_(m.tensor([0.0, 1.0, -1.0]))
    return conv.eval(), bn.eval()


def _fused_conv(m: Any, transpose: bool = False) -> Any:
    conv, bn = conv_bn(m)
    fused = m.nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    x = m.arange(32, dtype=m.float64).reshape(1, 2, 4, 4) / 7
    return fused.weight, fused.bias, fused(x) if not transpose else None, type(fused).__name__


FUSION: dict[str, Callable[[Any], Any]] = {
    "conv bn": _fused_conv,
    "conv bn matches unfused": lambda m: (lambda c, b: b(c(m.ones(1, 2, 3, 3))))(*conv_bn(m)),
    "linear bn": lambda m: (lambda f: (f.weight, f.bias, f(m.tensor([[1.0, 2.0]]))))(
        m.nn.utils.fuse_linear_bn_eval(linear(m).eval(), _bn1d(m))
    ),
    "conv bn training": lambda m: m.nn.utils.fuse_conv_bn_eval(*(x.train() for x in conv_bn(m))),
    "conv2d memory format": lambda m: _memory_format(m, 2),
    "conv3d memory format": lambda m: _memory_format(m, 3),
    "no bias conv": lambda m: (
        lambda c, b: (setattr(c, "bias", None), m.nn.utils.fuse_conv_bn_eval(c, b).bias)[1]
    )(*conv_bn(m)),
}


def _memory_format(m: Any, dims: int) -> Any:
    """The weights keep their values and Parameter objects, in a nested model."""
    conv, _ = conv_bn(m)
    model = m.nn.Sequential(
        conv, m.nn.Sequential(m.nn.ConvTranspose2d(3, 2, 2)), m.nn.Conv3d(1, 1, 1)
    )
    weights = [p for p in model.parameters()]
    if dims == 2:
        out = m.nn.utils.convert_conv2d_weight_memory_format(model, m.channels_last)
    else:
        out = m.nn.utils.convert_conv3d_weight_memory_format(model, m.channels_last_3d)
    return out is model, [a is b for a, b in zip(weights, model.parameters())], model[0].weight


def _bn1d(m: Any) -> Any:
    bn = m.nn.BatchNorm1d(3)
    with m.no_grad():
        bn.running_mean.copy_(m.tensor([0.5, -1.0, 2.0]))
        bn.running_var.copy_(m.tensor([1.5, 0.5, 2.0]))
    return bn.eval()


@pytest.mark.parametrize("name", list(FUSION))
def test_fusion(backend: str, name: str) -> None:
    same(FUSION[name])


def functional(m: Any, call: Callable[..., Any]) -> Any:
    layer = linear(m)
    replacement = {"weight": m.ones(3, 2), "bias": m.zeros(3)}
    return call(layer, replacement), layer.weight


FUNCTIONAL: dict[str, Callable[[Any], Any]] = {
    "replace all": lambda m: functional(
        m, lambda layer, p: m.func.functional_call(layer, p, (m.tensor([[1.0, 2.0]]),))
    ),
    "replace some": lambda m: functional(
        m,
        lambda layer, p: m.func.functional_call(layer, {"bias": p["bias"]}, m.tensor([[1.0, 2.0]])),
    ),
    "dicts tuple": lambda m: functional(
        m,
        lambda layer, p: m.func.functional_call(
            layer, ({"weight": p["weight"]}, {"bias": p["bias"]}), m.tensor([[1.0, 2.0]])
        ),
    ),
    "strict missing": lambda m: functional(
        m,
        lambda layer, p: m.func.functional_call(
            layer, {"bias": p["bias"]}, m.tensor([[1.0, 2.0]]), strict=True
        ),
    ),
    "unexpected": lambda m: functional(
        m,
        lambda layer, p: m.func.functional_call(
            layer, {**p, "extra": p["bias"]}, m.tensor([[1.0, 2.0]]), strict=True
        ),
    ),
    "kwargs": lambda m: functional(
        m,
        lambda layer, p: m.func.functional_call(layer, p, (), {"input": m.tensor([[1.0, 2.0]])}),
    ),
    "stateless": lambda m: functional(
        m,
        lambda layer, p: m.nn.utils.stateless.functional_call(layer, p, m.tensor([[1.0, 2.0]])),
    ),
    "gradient": lambda m: _functional_grad(m),
    "tied": lambda m: _tied(m, True),
    "untied": lambda m: _tied(m, False),
    "buffer": lambda m: _functional_buffer(m),
}


def _functional_grad(m: Any) -> Any:
    layer = linear(m)
    weight = m.ones(3, 2, requires_grad=True)
    m.func.functional_call(layer, {"weight": weight}, m.tensor([[1.0, 2.0]])).sum().backward()
    return weight.grad, layer.weight.grad


def _tied(m: Any, tie: bool) -> Any:
    first = linear(m, 2, 2)
    second = linear(m, 2, 2)
    second.weight = first.weight
    model = m.nn.Sequential(first, second)
    replaced = {"0.weight": m.eye(2) * 2}
    return m.func.functional_call(model, replaced, m.tensor([[1.0, 2.0]]), tie_weights=tie)


def _functional_buffer(m: Any) -> Any:
    bn = _bn1d(m)
    out = m.func.functional_call(bn, {"running_mean": m.zeros(3)}, m.tensor([[1.0, 2.0, 3.0]]))
    return out, bn.running_mean


@pytest.mark.parametrize("name", list(FUNCTIONAL))
def test_functional_call(backend: str, name: str) -> None:
    same(FUNCTIONAL[name])


def orthogonalized(m: Any, shape: tuple, orthogonal_map: Any, trivial: bool) -> Any:
    layer = m.nn.Linear(shape[1], shape[0], bias=False)
    with m.no_grad():
        # full rank, in the weight's shape (a flat copy raised in both: only the error class
        # was compared)
        values = m.arange(shape[0] * shape[1], dtype=m.float64) ** 2 * 1.7 + 0.3
        layer.weight.copy_(m.sin(values).reshape(shape))
    m.nn.utils.parametrizations.orthogonal(
        layer, orthogonal_map=orthogonal_map, use_trivialization=trivial
    )
    return layer


def orthogonal_case(m: Any, shape: tuple, orthogonal_map: Any, trivial: bool) -> Any:
    """Names always; values and gradients unless a random completion is involved
    (trivialization of a non-square matrix draws one)."""
    layer = orthogonalized(m, shape, orthogonal_map, trivial)
    names = ([n for n, _ in layer.named_parameters()], list(layer.state_dict()))
    weight = layer.weight
    gram = weight @ weight.mT if shape[0] < shape[1] else weight.mT @ weight
    orthonormal = bool(((gram - m.eye(min(shape))).abs() < 1e-12).all())
    if trivial and shape[0] != shape[1]:
        return names, orthonormal
    x = m.tensor([[1.0, -2.0, 0.5, 3.0][: shape[1]]], requires_grad=True)
    layer(x).sum().backward()
    return names, orthonormal, weight, x.grad, layer.parametrizations.weight.original.grad


@pytest.mark.parametrize("trivial", [True, False])
@pytest.mark.parametrize("orthogonal_map", [None, "matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("shape", [(3, 3), (4, 3), (3, 4)])
def test_orthogonal(backend: str, shape: tuple, orthogonal_map: Any, trivial: bool) -> None:
    same(lambda m: orthogonal_case(m, shape, orthogonal_map, trivial))


@pytest.mark.parametrize("orthogonal_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_assign(backend: str, orthogonal_map: str) -> None:
    def code(m: Any) -> Any:
        layer = orthogonalized(m, (3, 3), orthogonal_map, True)
        rotation = m.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        layer.weight = rotation
        first = layer.weight
        layer.weight = rotation * 2  # not orthogonal: made so
        return first, layer.weight

    same(code)


@pytest.mark.parametrize(
    "code",
    [
        lambda m: orthogonalized(m, (3, 3), "qr", True),
        lambda m: m.nn.utils.parametrizations.orthogonal(m.nn.Linear(2, 2), "bias"),
        lambda m: m.nn.utils.parametrizations.orthogonal(m.nn.Linear(2, 2), "nothing"),
        lambda m: (lambda layer: setattr(layer, "weight", m.eye(3)))(
            orthogonalized(m, (3, 3), "cayley", False)
        ),
        lambda m: (lambda layer: setattr(layer, "weight", m.eye(2)))(
            orthogonalized(m, (3, 3), "matrix_exp", True)
        ),
    ],
    ids=["bad map", "vector", "missing", "assign without trivialization", "wrong shape"],
)
def test_orthogonal_errors(backend: str, code: Callable) -> None:
    same(code)


def spectral_training(m: Any, old: bool, conv: bool, **kwargs: Any) -> Any:
    """torch's layer state (with its u and v) loaded; three training forwards (each a power
    iteration), then one in eval; outputs and the final state."""
    import torch

    def build(lib: Any) -> Any:
        layer = lib.nn.ConvTranspose2d(2, 3, 2) if conv else linear(lib, 4, 3)
        if conv:
            with lib.no_grad():
                layer.weight.copy_(lib.sin(lib.arange(24, dtype=lib.float64)).reshape(2, 3, 2, 2))
                layer.bias.zero_()
        norm = lib.nn.utils.spectral_norm if old else lib.nn.utils.parametrizations.spectral_norm
        return norm(layer, **kwargs)

    torch.manual_seed(0)
    state = {k: v.detach().numpy().copy() for k, v in build(torch).state_dict().items()}
    layer = build(m)
    layer.load_state_dict({k: m.tensor(v) for k, v in state.items()})
    x = m.ones(1, 2, 3, 3) if conv else m.tensor([[1.0, 2.0, -1.0]])
    outs = [layer(x) for _ in range(3)]
    layer.eval()
    outs.append(layer(x))
    return outs, layer.state_dict()


@pytest.mark.parametrize(
    "kwargs", [{}, {"dim": 1}, {"conv": True}, {"n_power_iterations": 3}], ids=str
)
@pytest.mark.parametrize("old", [True, False])
def test_spectral_norm_training(backend: str, old: bool, kwargs: dict) -> None:
    options = dict(kwargs)
    conv = options.pop("conv", False)
    same(lambda m: spectral_training(m, old, conv, **options))
