"""Defects PyTorch's module database (tests/moduleinfo) found in ``tw.nn``, each against torch.

Each test runs on NumPy and torch:cpu (the ``backend`` fixture, float64 default dtype).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch

RNG = np.random.default_rng(0)


def _pair(shape: tuple[int, ...], grad: bool = True) -> tuple[torch.Tensor, tw.Tensor]:
    data = RNG.standard_normal(shape)
    return torch.tensor(data, requires_grad=grad), tw.tensor(data, requires_grad=grad)


def _close(actual: tw.Tensor, expected: torch.Tensor) -> None:
    assert tuple(actual.shape) == tuple(expected.shape)
    np.testing.assert_allclose(np.asarray(actual.detach()), expected.detach().numpy(), rtol=1e-12)


def test_prelu_of_a_0d_input_keeps_its_shape(backend: str) -> None:
    """Was: shape (1,) (the one-element weight broadcast the 0-d input)."""
    x, xt = _pair(())
    module, twin = torch.nn.PReLU().double(), tw.nn.PReLU()
    out, got = module(x), twin(xt)
    _close(got, out)
    out.backward()
    got.backward()
    _close(xt.grad, x.grad)
    _close(twin.weight.grad, module.weight.grad)


@pytest.mark.parametrize("shape", [(0, 5, 9), (0, 5, 2, 2), (0, 5, 2, 2, 2)])
def test_batch_norm_of_an_empty_batch_in_training(backend: str, shape: tuple) -> None:
    """Was: ValueError 'expected more than 1 value per channel' (PyTorch gives an empty
    output and leaves the running statistics alone)."""
    cls = f"BatchNorm{len(shape) - 2}d"
    module = getattr(torch.nn, cls)(shape[1]).double()
    twin = getattr(tw.nn, cls)(shape[1])
    x, xt = _pair(shape)
    out, got = module(x), twin(xt)
    _close(got, out)
    _close(twin.running_mean, module.running_mean)
    _close(twin.running_var, module.running_var)
    assert int(twin.num_batches_tracked) == int(module.num_batches_tracked)
    out.sum().backward()
    got.sum().backward()
    _close(xt.grad, x.grad)
    _close(twin.weight.grad, module.weight.grad)


@pytest.mark.parametrize(("eps", "training"), [(-1.0, False), (-1.0, True), (0.0, True)])
def test_batch_norm_refuses_a_non_positive_eps_as_torch(
    backend: str, eps: float, training: bool
) -> None:
    """Was: no error (PyTorch: ValueError for eps < 0, and for eps == 0 in training)."""
    x, xt = _pair((2, 10), grad=False)
    mean, var = torch.zeros(10, dtype=torch.float64), torch.ones(10, dtype=torch.float64)
    with pytest.raises(ValueError):
        torch.nn.functional.batch_norm(x, mean, var, training=training, eps=eps)
    with pytest.raises(ValueError, match="eps"):
        tw.nn.functional.batch_norm(xt, tw.zeros(10), tw.ones(10), training=training, eps=eps)


def test_batch_norm_eval_with_zero_eps_runs(backend: str) -> None:
    x, xt = _pair((2, 10), grad=False)
    stats = RNG.uniform(0.5, 1.5, 10)
    out = torch.nn.functional.batch_norm(
        x, torch.zeros(10, dtype=torch.float64), torch.tensor(stats), eps=0.0
    )
    _close(tw.nn.functional.batch_norm(xt, tw.zeros(10), tw.tensor(stats), eps=0.0), out)


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_max_pool_takes_the_first_rows_of_longer_random_samples(
    backend: str, nd: int
) -> None:
    """Was: RuntimeError for an unbatched (C, ...) input with ``_random_samples`` of shape
    (2, C, nd): PyTorch wants at least N rows and uses the first N."""
    x, xt = _pair((4, *([7] * nd)))
    samples = RNG.uniform(size=(2, 4, nd))
    cls = f"FractionalMaxPool{nd}d"
    module = getattr(torch.nn, cls)(2, output_ratio=0.5, _random_samples=torch.tensor(samples))
    twin = getattr(tw.nn, cls)(2, output_ratio=0.5, _random_samples=tw.tensor(samples))
    out, got = module(x), twin(xt)
    _close(got, out)
    out.sum().backward()
    got.sum().backward()
    _close(xt.grad, x.grad)


@pytest.mark.parametrize("rows", [1, 3])
def test_fractional_max_pool_refuses_too_few_random_samples(backend: str, rows: int) -> None:
    x, xt = _pair((2, 4, 5, 5, 5), grad=False)
    samples = RNG.uniform(size=(rows, 4 if rows == 1 else 5, 3))
    F = torch.nn.functional
    with pytest.raises(RuntimeError):
        F.fractional_max_pool3d(x, 2, output_ratio=0.5, _random_samples=torch.tensor(samples))
    with pytest.raises(RuntimeError, match="_random_samples"):
        tw.nn.functional.fractional_max_pool3d(
            xt, 2, output_ratio=0.5, _random_samples=tw.tensor(samples)
        )


@pytest.mark.parametrize("delta", [1 + 0j, "1", None])
def test_huber_loss_refuses_a_delta_that_is_no_number(backend: str, delta: object) -> None:
    """Was: accepted (PyTorch: TypeError at construction)."""
    with pytest.raises(TypeError):
        torch.nn.HuberLoss(delta=delta)
    with pytest.raises(TypeError, match="delta"):
        tw.nn.HuberLoss(delta=delta)


def test_cross_entropy_probabilities_of_another_batch_size_raise_value_error(
    backend: str,
) -> None:
    """Was: RuntimeError (PyTorch: ValueError 'Expected input batch_size (4) to match target
    batch_size (5)'); another class count stays a RuntimeError."""
    for target_shape, error in (((5, 2), ValueError), ((4, 3), RuntimeError)):
        x, xt = _pair((4, 2), grad=False)
        t, tt = _pair(target_shape, grad=False)
        with pytest.raises(error):
            torch.nn.functional.cross_entropy(x, t.softmax(1))
        with pytest.raises(error):
            tw.nn.functional.cross_entropy(xt, tt.softmax(1))


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("shape", [(3, 2), (0, 0)])
def test_class_weight_of_another_dtype_is_refused(backend: str, fn: str, shape: tuple) -> None:
    """Was: computed (PyTorch: RuntimeError 'expected scalar type Double but found ...')."""
    x, xt = _pair(shape, grad=False)
    target = RNG.integers(0, max(shape[1], 1), shape[0])
    with pytest.raises(RuntimeError):
        getattr(torch.nn.functional, fn)(
            x, torch.tensor(target), weight=torch.ones(shape[1], dtype=torch.float32)
        )
    with pytest.raises(RuntimeError, match="scalar type"):
        getattr(tw.nn.functional, fn)(
            xt, tw.tensor(target), weight=tw.ones(shape[1], dtype=tw.float32)
        )


def _autocast_dtype(m: object, cls: str, low: str, given: str) -> str:
    """The dtype of ``m.nn.<cls>``'s output and final state under CPU autocast to ``low``
    for an input in ``given`` (float32 weights), or the exception's class name."""
    m.manual_seed(0)
    module = getattr(m.nn, cls)(4, 3).float()
    x = m.tensor(RNG.standard_normal((5, 2, 4))).to(getattr(m, given))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with m.autocast("cpu", dtype=getattr(m, low)):
                out, state = module(x)
    except RuntimeError as error:
        if "primitive descriptor" in str(error):  # (PyTorch's oneDNN lacks the kernel here)
            pytest.skip(f"torch's oneDNN {cls} has no {low} kernel on this CPU: {error}")
        return "RuntimeError"
    state = state[0] if isinstance(state, tuple) else state
    return f"{str(out.dtype).split('.')[-1]}/{str(state.dtype).split('.')[-1]}"


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("low", ["bfloat16", "float16"])
@pytest.mark.parametrize("given", ["float32", "bfloat16", "float16", "float64"])
def test_recurrent_layers_under_autocast_compute_in_torchs_dtype(
    backend: str, cls: str, low: str, given: str
) -> None:
    """Was: ValueError for a low-precision input against float32 weights, and an RNN's
    float32 input computed in float32 (PyTorch: an RNN's matrix products are on autocast's
    list, as is the oneDNN layer of an LSTM with a float32 input; a GRU computes in the
    autocast dtype only for an input in it). Where PyTorch's oneDNN has no kernel for the
    dtype on this CPU it raises, and the case is skipped (see the next test)."""
    if "bfloat16" in (low, given) and tw.bfloat16 not in tw.zeros(1).backend.dtypes:
        pytest.skip(f"{backend} has no bfloat16")
    assert _autocast_dtype(tw, cls, low, given) == _autocast_dtype(torch, cls, low, given)


@pytest.mark.parametrize("low", ["bfloat16", "float16"])
def test_lstm_under_autocast_computes_a_float32_input_in_the_autocast_dtype(
    backend: str, low: str
) -> None:
    """As PyTorch's oneDNN LSTM layer (on CPU autocast's list) does wherever the CPU has its
    kernel (bfloat16 on an Intel Xeon here; on CPUs without one PyTorch raises): tw computed
    it in float32."""
    if tw.bfloat16 not in tw.zeros(1).backend.dtypes and low == "bfloat16":
        pytest.skip(f"{backend} has no bfloat16")
    assert _autocast_dtype(tw, "LSTM", low, "float32") == f"{low}/{low}"


def test_rnn_under_autocast_gradients_reach_float32_weights(backend: str) -> None:
    """The cast weights pass their gradients back to the float32 parameters."""
    twin = tw.nn.RNN(4, 3).float()
    x = tw.tensor(RNG.standard_normal((5, 2, 4)), dtype=tw.float32)
    with tw.autocast("cpu", dtype=tw.float16):
        out, _ = twin(x)
    assert out.dtype is tw.float16
    out.float().sum().backward()
    assert twin.weight_ih_l0.grad is not None and twin.weight_ih_l0.grad.dtype is tw.float32


def test_linear_second_order_gradient_when_its_input_depends_on_its_bias(backend: str) -> None:
    """Found by the module database (RNN, GRU, LSTM with biases, test_gradgrad): the fused
    linear's double backward took total derivatives and counted the bias's path twice."""
    data = [RNG.standard_normal(s) for s in ((2, 2), (2,), (2,), (2,))]

    def second(m: object) -> list:
        w, b = (m.tensor(data[0], requires_grad=True), m.tensor(data[1], requires_grad=True))
        y = m.nn.functional.linear(m.tanh(m.tensor(data[2]) + b), w, b)
        (gw, gb) = m.autograd.grad((y * m.tensor(data[3])).sum(), [w, b], create_graph=True)
        return [np.asarray(g.detach()) for g in m.autograd.grad(gb.sum(), [w, b])]

    for got, want in zip(second(tw), second(torch)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
