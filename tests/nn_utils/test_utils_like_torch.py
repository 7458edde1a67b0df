"""``tw.nn.utils`` against ``torch.nn.utils`` 2.13: gradient clipping over norm orders,
dtypes, ``foreach`` and ``error_if_nonfinite``; parameters as one vector; parametrize's
shape check; the old ``weight_norm``'s deprecation warning."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

SHAPES = [(3, 4), (5,), (2, 2, 2), (1,)]


def params_with_grads(m: Any, dtype: str, none_at: tuple = (), scale: float = 3.0) -> list:
    rs = np.random.RandomState(0)
    params = []
    for i, shape in enumerate(SHAPES):
        p = m.tensor(rs.randn(*shape), dtype=getattr(m, dtype)).requires_grad_()
        if i not in none_at:
            p.grad = m.tensor(rs.randn(*shape) * scale, dtype=getattr(m, dtype))
        params.append(p)
    return params


def host(t: Any) -> np.ndarray:
    return (
        np.asarray(t.detach().double()) if isinstance(t, tw.Tensor) else t.detach().double().numpy()
    )


@pytest.mark.parametrize("foreach", [None, False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm_type", [2, 1, 0, 3, 0.5, math.inf, "inf", -math.inf, -1.0])
def test_clip_grad_norm_like_torch(backend: str, norm_type: Any, dtype: str, foreach: Any) -> None:
    results = []
    for m in (torch, tw):
        ps = params_with_grads(m, dtype, none_at=(1,))
        total = m.nn.utils.clip_grad_norm_(ps, 1.5, norm_type=norm_type, foreach=foreach)
        assert str(total.dtype).split(".")[-1] == dtype and total.shape == ()
        assert not total.requires_grad
        results.append([host(total)] + [host(p.grad) for p in ps if p.grad is not None])
    for got, expected in zip(results[1], results[0]):
        np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("error", [False, True])
@pytest.mark.parametrize("bad", [math.nan, math.inf])
@pytest.mark.parametrize("norm_type", [2.0, math.inf, 1.0])
def test_clip_grad_norm_nonfinite(norm_type: float, bad: float, error: bool) -> None:
    outcomes = []
    for m in (torch, tw):
        ps = params_with_grads(m, "float64")
        ps[0].grad[0, 0] = bad
        try:
            total = m.nn.utils.clip_grad_norm_(ps, 1.0, norm_type, error_if_nonfinite=error)
        except RuntimeError:
            outcomes.append("RuntimeError")
            continue
        outcomes.append([host(total)] + [host(p.grad) for p in ps])
    if outcomes[0] == "RuntimeError":
        assert outcomes[1] == "RuntimeError"
        return
    for got, expected in zip(outcomes[1], outcomes[0]):
        np.testing.assert_array_equal(got, expected)


CLIP_CALLS: dict[str, Any] = {
    "single tensor": lambda m, ps: m.nn.utils.clip_grad_norm_(ps[0], 0.5),
    "generator": lambda m, ps: m.nn.utils.clip_grad_norm_((p for p in ps), 0.5),
    "all grads None": lambda m, ps: m.nn.utils.clip_grad_norm_([m.zeros(2)], 0.5),
    "empty list": lambda m, ps: m.nn.utils.clip_grad_norm_([], 0.5),
    "max_norm tensor": lambda m, ps: m.nn.utils.clip_grad_norm_(ps, m.tensor(0.5)),
    "max_norm 0": lambda m, ps: m.nn.utils.clip_grad_norm_(ps, 0.0),
    "value": lambda m, ps: m.nn.utils.clip_grad_value_(ps, 0.7),
    "value single": lambda m, ps: m.nn.utils.clip_grad_value_(ps[0], 0.7),
    "value foreach": lambda m, ps: m.nn.utils.clip_grad_value_(ps, 0.7, foreach=False),
    "total norm": lambda m, ps: m.nn.utils.get_total_norm([p.grad for p in ps], 3.0),
    "with norm": lambda m, ps: m.nn.utils.clip_grads_with_norm_(ps, 1.0, m.tensor(10.0)),
    "with small norm": lambda m, ps: m.nn.utils.clip_grads_with_norm_(ps, 1.0, m.tensor(0.5)),
}


@pytest.mark.parametrize("name", list(CLIP_CALLS))
def test_clip_calls_like_torch(name: str) -> None:
    results = []
    for m in (torch, tw):
        ps = params_with_grads(m, "float64")
        out = CLIP_CALLS[name](m, ps)
        results.append([None if out is None else host(out)] + [host(p.grad) for p in ps])
    for got, expected in zip(results[1], results[0]):
        if expected is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_vector_to_parameters_takes_the_vector_dtype() -> None:
    """PyTorch replaces each parameter's data by a slice of the vector, so a float32 vector
    makes float32 parameters (tw copied into the float64 parameters before)."""
    got = []
    for m in (torch, tw):
        ps = params_with_grads(m, "float64")
        vec = m.arange(30, dtype=m.float32)
        m.nn.utils.vector_to_parameters(vec, ps)
        got.append([(str(p.dtype).split(".")[-1], host(p), p.is_leaf, p.requires_grad) for p in ps])
    for (dt, value, leaf, grad), (dt_t, value_t, leaf_t, grad_t) in zip(got[1], got[0]):
        assert (dt, leaf, grad) == (dt_t, leaf_t, grad_t)
        np.testing.assert_array_equal(value, value_t)


def test_vector_to_parameters_shares_memory() -> None:
    """The parameters share the vector's memory afterwards, as torch's (``p.data =``)."""
    seen = []
    for m in (torch, tw):
        ps = params_with_grads(m, "float64")
        vec = m.arange(sum(p.numel() for p in ps), dtype=m.float64)
        m.nn.utils.vector_to_parameters(vec, ps)
        vec[0] = 100.0
        with m.no_grad():
            ps[-1].mul_(-1)  # and back into the vector
        seen.append((ps[0].flatten()[0].item(), vec[-1].item()))
    assert seen[0] == seen[1] and seen[0][0] == 100.0 and seen[0][1] < 0


def test_parameters_to_vector_like_torch() -> None:
    ps = [params_with_grads(m, "float64") for m in (torch, tw)]
    expected = torch.nn.utils.parameters_to_vector(ps[0])
    got = tw.nn.utils.parameters_to_vector(ps[1])
    np.testing.assert_array_equal(host(got), host(expected))
    assert got.requires_grad and not got.is_leaf


def test_parametrize_right_inverse_may_not_change_shape() -> None:
    """Registering checks the parametrized tensor against the shape before registering
    (it was compared with ``original`` after right_inverse had reshaped it)."""
    for m in (torch, tw):

        class Rows(m.nn.Module):
            def forward(self, x: Any) -> Any:
                return x

            def right_inverse(self, x: Any) -> Any:
                return x[:1]

        layer = m.nn.Linear(3, 3)
        with pytest.raises(ValueError, match="may not change the shape"):
            m.nn.utils.parametrize.register_parametrization(layer, "weight", Rows())


def test_parametrize_right_inverse_reshape_unsafe() -> None:
    """With ``unsafe=True`` the same parametrization is accepted, as in PyTorch."""
    shapes = []
    for m in (torch, tw):

        class Rows(m.nn.Module):
            def forward(self, x: Any) -> Any:
                return x.repeat(3, 1)

            def right_inverse(self, x: Any) -> Any:
                return x[:1]

        layer = m.nn.Linear(3, 3)
        m.nn.utils.parametrize.register_parametrization(layer, "weight", Rows(), unsafe=True)
        shapes.append(
            (tuple(layer.weight.shape), tuple(layer.parametrizations.weight.original.shape))
        )
    assert shapes[0] == shapes[1]


def test_old_weight_norm_warns_deprecated() -> None:
    messages = []
    for m in (torch, tw):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            m.nn.utils.weight_norm(m.nn.Linear(2, 3))
        messages.append([(w.category, str(w.message).replace("torch", "tw")) for w in seen])
    assert messages[1] == messages[0] != []


def test_weight_norm_parametrization_loads_old_state_dict() -> None:
    """A state dict saved with the old hook (``weight_g``, ``weight_v``) loads into the
    parametrization, as PyTorch's compat hook allows (it raised missing keys before)."""
    results = []
    for m in (torch, tw):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            old = m.nn.Sequential(m.nn.utils.weight_norm(m.nn.Linear(3, 2).double()))
        new = m.nn.Sequential(m.nn.utils.parametrizations.weight_norm(m.nn.Linear(3, 2).double()))
        with m.no_grad():
            old[0].weight_v.copy_(m.tensor(np.arange(6.0).reshape(2, 3)))
            old[0].weight_g.copy_(m.tensor([[2.0], [-0.5]]))
        report = new.load_state_dict(old.state_dict())
        assert not report.missing_keys and not report.unexpected_keys
        results.append(host(new[0].weight))
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)


def spectral_run(m: Any, hooks: bool, transposed: bool, kwargs: dict) -> list:
    m.manual_seed(0)
    rs = np.random.RandomState(2)
    layer = (m.nn.ConvTranspose2d if transposed else m.nn.Conv2d)(2, 3, 3).double()
    with m.no_grad():
        for p in layer.parameters():
            p.copy_(m.tensor(rs.randn(*p.shape)))
    if hooks:
        layer = m.nn.utils.spectral_norm(layer, **kwargs)
    else:
        layer = m.nn.utils.parametrizations.spectral_norm(layer, **kwargs)
    x = m.tensor(rs.randn(1, 2, 4, 4))
    outs = []
    for _ in range(2):
        y = layer(x)
        y.pow(2).sum().backward()
        outs.append(y)
    layer.eval()
    outs.append(layer(x))
    state = [v for _, v in sorted(layer.state_dict().items())]
    return [*outs, *state, *(p.grad for p in layer.parameters()), m.rand(2)]


@pytest.mark.parametrize("kwargs", [{}, {"n_power_iterations": 3, "eps": 1e-3}, {"dim": 1}])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("hooks", [False, True])
def test_spectral_norm_like_torch(hooks: bool, transposed: bool, kwargs: dict) -> None:
    """On torch:cpu (PyTorch's stream for the starting vectors): outputs in training and
    eval, state dict, gradients and the stream afterwards equal PyTorch's."""
    with entered("torch:cpu"):
        expected = spectral_run(torch, hooks, transposed, kwargs)
        got = spectral_run(tw, hooks, transposed, kwargs)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(host(g), host(e), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("trivialization", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (4, 4)], ids=str)
@pytest.mark.parametrize("orthogonal_map", [None, "matrix_exp", "cayley", "householder"])
def test_orthogonal_like_torch(orthogonal_map: Any, shape: tuple, trivialization: bool) -> None:
    results = []
    with entered("torch:cpu"):
        for m in (torch, tw):
            m.manual_seed(0)
            layer = m.nn.Linear(shape[1], shape[0], bias=False).double()
            with m.no_grad():
                layer.weight.copy_(m.tensor(np.random.RandomState(1).randn(*shape)))
            layer = m.nn.utils.parametrizations.orthogonal(
                layer, orthogonal_map=orthogonal_map, use_trivialization=trivialization
            )
            y = layer(m.tensor(np.random.RandomState(2).randn(2, shape[1])))
            (y * m.arange(1.0, shape[0] + 1, dtype=m.float64)).sum().backward()
            state = [v for _, v in sorted(layer.state_dict().items())]
            results.append([y, *state, *(p.grad for p in layer.parameters()), m.rand(2)])
    assert len(results[1]) == len(results[0])
    for g, e in zip(results[1], results[0]):
        np.testing.assert_allclose(host(g), host(e), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dim", [2, -3, 5])
@pytest.mark.parametrize("hooks", [False, True])
def test_weight_norm_dim_out_of_range(hooks: bool, dim: int) -> None:
    """IndexError as in PyTorch (both forms accepted any ``dim`` before)."""
    for m in (torch, tw):
        make = m.nn.utils.weight_norm if hooks else m.nn.utils.parametrizations.weight_norm
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            with pytest.raises(IndexError, match="out of range"):
                make(m.nn.Linear(3, 2), dim=dim)


def test_old_spectral_norm_of_a_vector() -> None:
    """The hook form on a 1-d parameter treats it as one column, as PyTorch does (it raised
    IndexError from flatten before)."""
    results = []
    with entered("torch:cpu"):
        for m in (torch, tw):
            m.manual_seed(0)
            layer = m.nn.Linear(3, 3).double()
            with m.no_grad():
                layer.bias.copy_(m.tensor([0.5, -2.0, 1.0]))
            layer = m.nn.utils.spectral_norm(layer, name="bias")
            x = m.ones(2, 3, dtype=m.float64)
            trained = layer(x)
            layer.eval()
            state = [v for _, v in sorted(layer.state_dict().items()) if v.ndim == 1]
            results.append([trained, layer(x), layer.bias, *state, m.rand(2)])
    for g, e in zip(results[1], results[0]):
        np.testing.assert_allclose(host(g), host(e), rtol=1e-12)


def test_parametrize_right_inverse_may_store_another_shape() -> None:
    """A right_inverse that stores a vector, with a forward that gives the matrix back, is
    accepted without ``unsafe`` as in PyTorch (tw compared the parametrized tensor with the
    reshaped ``original`` and refused it before)."""
    results = []
    for m in (torch, tw):

        class Flat(m.nn.Module):
            def forward(self, v: Any) -> Any:
                return v.reshape(3, 3)

            def right_inverse(self, w: Any) -> Any:
                return w.reshape(-1)

        layer = m.nn.Linear(3, 3).double()
        with m.no_grad():
            layer.weight.copy_(m.tensor(np.arange(9.0).reshape(3, 3)))
        m.nn.utils.parametrize.register_parametrization(layer, "weight", Flat())
        original = layer.parametrizations.weight.original
        results.append((tuple(original.shape), host(original), host(layer.weight)))
    assert results[1][0] == results[0][0]
    np.testing.assert_array_equal(results[1][1], results[0][1])
    np.testing.assert_array_equal(results[1][2], results[0][2])


def test_convert_conv2d_weight_memory_format_like_torch() -> None:
    layouts = []
    for m in (torch, tw):
        net = m.nn.Sequential(m.nn.Conv2d(2, 3, 3), m.nn.ConvTranspose2d(3, 2, 3))
        assert m.nn.utils.convert_conv2d_weight_memory_format(net, m.channels_last) is net
        layouts.append(
            [p.is_contiguous(memory_format=m.channels_last) for p in (net[0].weight, net[1].weight)]
        )
    assert layouts[1] == layouts[0] == [True, True]
