"""Normalization of float16 and bfloat16 inputs with parameters of the input's dtype (what
``model.half()`` / ``model.bfloat16()`` gives), bit for bit against PyTorch 2.13's CPU
kernels; found by the ports of ``tests/ports/test_ports_session16.py``.

PyTorch keeps such layers' statistics in the half type: the mean and inverse standard
deviation it saves for the backward pass are rounded to it (batch norm's forward pass uses
the rounded ones too), and it moves the running statistics in its own per-dtype arithmetic.
Before, tensorweaver normalized in float32 throughout: batch norm's bfloat16 output differed
in 73 of 640 elements, its running statistics in 1-3 channels of 4, and the input gradients of
all three layers in 30-45% of elements.

The inputs, output gradients, biases and running means are multiples of 1/4 of at most 2 in
size, the weights multiples of 1/8, in groups whose sizes are powers of two: the means are then
exact in the half types and every float32 sum (statistics, and the backward passes' sums of
gradients and their products with inputs and weights) is exact in any order, so that no
library's summation order, which depends on the vector width and thread count, enters the
bit-exact comparisons. (Before the review the output gradients, weights and running means
were normal draws, whose float32 sums were not exact.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

#: (device, dtype) pairs that have the dtype: NumPy has no bfloat16.
LOW = [("numpy", "float16"), ("torch:cpu", "float16"), ("torch:cpu", "bfloat16")]


def _quarters(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return (rng.integers(-8, 9, size=shape) / 4).astype(np.float32)


def _scales(rng: np.random.Generator, size: int) -> np.ndarray:
    """Weights: multiples of 1/8 between -1.5 and 1.5 (few significant bits, so that sums of
    their products with quarters stay exact too)."""
    return (rng.integers(-12, 13, size=size) / 8).astype(np.float32)


def _torch(a: np.ndarray, dtype: str, grad: bool = False) -> torch.Tensor:
    return torch.tensor(a).to(getattr(torch, dtype)).requires_grad_(grad)


def _tw(a: np.ndarray, dtype: str, grad: bool = False) -> tw.Tensor:
    return tw.tensor(a).to(getattr(tw, dtype)).requires_grad_(grad)


def _same(
    got: tw.Tensor | None, expected: torch.Tensor | None, what: str, fused: bool = False
) -> None:
    """Bit for bit; where ``fused``, up to 1 in 64 elements may be one unit in the last place
    of the half type apart: PyTorch's vectorised kernels compute outputs and input gradients
    as ``a * b + c`` chains that the compiler fuses into one rounding where the CPU has a
    fused multiply-add (1 of 192-384 values here round the other way then), a property of
    the machine and not of the formula."""
    assert (got is None) == (expected is None), what
    if got is None:
        return
    assert got.dtype.name == str(expected.dtype).removeprefix("torch."), what
    g = got.detach().float().numpy()
    e = expected.detach().float().numpy()
    differ = g != e
    if fused:
        digits = 10 if expected.dtype == torch.float16 else 7
        tiny = 2.0**-24 if expected.dtype == torch.float16 else 2.0**-133
        magnitude = np.maximum(np.maximum(np.abs(g), np.abs(e)), tiny)
        ulp = 2.0 ** (np.floor(np.log2(magnitude)) - digits)
        assert np.all(np.abs(g - e) <= ulp), f"{what}: more than one unit in the last place"
        assert np.sum(differ) <= e.size // 64, f"{what}: {np.sum(differ)} of {e.size} differ"
        return
    assert not differ.any(), f"{what}: {int(np.sum(differ))} of {e.size} elements differ"


def _run(spec: str, dtype: str, call, arrays: dict, grads: tuple[str, ...], out_grad, output=True):  # noqa: ANN001, ANN202, E501
    """``call(lib, **tensors)`` on torch and tensorweaver; compares the output (where
    ``output``), the gradients of ``grads`` and every tensor afterwards (running statistics
    move in place)."""
    expected_t = {k: _torch(v, dtype, k in grads) for k, v in arrays.items()}
    y = call(torch, **expected_t)
    y.backward(torch.tensor(out_grad).to(y.dtype))
    with entered(spec, seed=0):
        got_t = {k: _tw(v, dtype, k in grads) for k, v in arrays.items()}
        z = call(tw, **got_t)
        z.backward(tw.tensor(out_grad).to(z.dtype))
        if output:
            _same(z, y, "output", fused=True)
        for k in arrays:
            _same(got_t[k], expected_t[k], k)
            if k in grads:
                _same(got_t[k].grad, expected_t[k].grad, f"gradient of {k}", fused=k == "x")


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_batch_norm_matches_pytorch(spec: str, dtype: str, training: bool, affine: bool):
    rng = np.random.default_rng(16)
    shape = (8, 4, 2, 4)  # 64 values per channel, as the port's 2-d convolutions
    arrays = {
        "x": _quarters(rng, shape) + 0.25,
        "rm": _quarters(rng, (4,)),
        "rv": rng.uniform(0.5, 2.0, size=4).astype(np.float32),
    }
    if affine:
        arrays["w"] = _scales(rng, 4)
        arrays["b"] = _quarters(rng, (4,))
    grads = ("x", "w", "b") if affine else ("x",)

    def call(lib, x, rm, rv, w=None, b=None):  # noqa: ANN001, ANN202
        return lib.nn.functional.batch_norm(x, rm, rv, w, b, training, 0.1, 1e-5)

    _run(spec, dtype, call, arrays, grads, _quarters(rng, shape))


def test_half_batch_norm_running_stats_over_steps() -> None:
    # Five training steps of a bfloat16 BatchNorm1d: its running statistics move in bfloat16
    # products (PyTorch's), and float16 ones in float64 from float32 statistics.
    rng = np.random.default_rng(5)
    batches = [_quarters(rng, (16, 6)) for _ in range(5)]
    for spec, dtype in LOW:
        ref = torch.nn.BatchNorm1d(6).to(getattr(torch, dtype))
        with entered(spec, seed=0):
            layer = tw.nn.BatchNorm1d(6).to(getattr(tw, dtype))
            for x in batches:
                _same(layer(_tw(x, dtype)), ref(_torch(x, dtype)), f"{spec} {dtype}", fused=True)
            _same(layer.running_mean, ref.running_mean, f"{spec} {dtype} running_mean")
            _same(layer.running_var, ref.running_var, f"{spec} {dtype} running_var")


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_layer_norm_input_gradient_matches_pytorch(spec: str, dtype: str, affine: bool):
    rng = np.random.default_rng(7)
    shape = (6, 4, 16)
    arrays = {"x": _quarters(rng, shape)}
    if affine:
        arrays["w"] = _scales(rng, 16)
        arrays["b"] = _quarters(rng, (16,))

    def call(lib, x, w=None, b=None):  # noqa: ANN001, ANN202
        return lib.nn.functional.layer_norm(x, (16,), w, b)

    # Only the input's gradient: PyTorch sums the weight's and bias's row by row in the half
    # type, per thread (its result depends on the thread count); tensorweaver rounds once.
    # The output ends in a fused multiply-add (x * rstd - rstd * mean) * w + b where the CPU
    # has one (1 of these 384 float16 outputs rounds the other way): see _same's ``fused``.
    out_grad = _quarters(rng, shape)
    _run(spec, dtype, call, arrays, ("x",), out_grad)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_group_norm_matches_pytorch(spec: str, dtype: str, affine: bool) -> None:
    rng = np.random.default_rng(9)
    shape = (4, 6, 8)  # 3 groups of 2 channels: 16 values a group
    arrays = {"x": _quarters(rng, shape)}
    if affine:
        arrays["w"] = _scales(rng, 6)
        arrays["b"] = _quarters(rng, (6,))
    grads = ("x", "w", "b") if affine else ("x",)

    def call(lib, x, w=None, b=None):  # noqa: ANN001, ANN202
        return lib.nn.functional.group_norm(x, 3, w, b)

    _run(spec, dtype, call, arrays, grads, _quarters(rng, shape))


@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_layer_norm_double_backward_is_close_to_float32s(spec: str, dtype: str) -> None:
    # The backward formula on rounded statistics still differentiates as the float32 one.
    rng = np.random.default_rng(3)
    x = _quarters(rng, (3, 8))
    g = rng.normal(size=(3, 8)).astype(np.float32)
    results = []
    with entered(spec, seed=0):
        for low in (True, False):
            t = tw.tensor(x)
            t = (t.to(getattr(tw, dtype)) if low else t).requires_grad_()
            y = tw.nn.functional.layer_norm(t, (8,))
            (gx,) = tw.autograd.grad(y, t, tw.tensor(g).to(y.dtype), create_graph=True)
            (ggx,) = tw.autograd.grad((gx.float() ** 2).sum(), t)
            results.append(ggx.float().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=0.1, atol=0.05)


@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_batch_norm_without_running_stats(spec: str, dtype: str) -> None:
    # Training with no running statistics to move (F.batch_norm(x, None, None, training=True))
    rng = np.random.default_rng(4)
    shape = (8, 3, 8)

    def call(lib, x):  # noqa: ANN001, ANN202
        return lib.nn.functional.batch_norm(x, None, None, training=True)

    out_grad = _quarters(rng, shape)
    _run(spec, dtype, call, {"x": _quarters(rng, shape)}, ("x",), out_grad)


#: (input dtype, weight dtype) where the weight's is wider or other: PyTorch 2.13 multiplies
#: in the dtype both promote to and rounds the result to the input's dtype.
RMS_MIXES = [
    ("numpy", "float16", "float64"),
    ("numpy", "float32", "float64"),
    ("torch:cpu", "float16", "float64"),
    ("torch:cpu", "bfloat16", "float16"),
    ("torch:cpu", "bfloat16", "float64"),
    ("torch:cpu", "float32", "float64"),
]


@pytest.mark.filterwarnings("ignore:Mismatch dtype between input and weight")
@pytest.mark.parametrize(("spec", "dtype", "weight_dtype"), RMS_MIXES)
def test_rms_norm_result_has_the_inputs_dtype(spec: str, dtype: str, weight_dtype: str) -> None:
    # Before: the result took the promoted dtype (float64 for a float64 weight, float32 for a
    # bfloat16 input with a float16 weight, whose statistics were computed in bfloat16).
    rng = np.random.default_rng(12)
    x = _quarters(rng, (6, 32))
    w = _scales(rng, 32)
    g = _quarters(rng, (6, 32))
    tx = _torch(x, dtype, grad=True)
    expected = torch.nn.functional.rms_norm(tx, (32,), _torch(w, weight_dtype))
    expected.backward(torch.tensor(g).to(expected.dtype))
    with entered(spec, seed=0):
        gx = _tw(x, dtype, grad=True)
        got = tw.nn.functional.rms_norm(gx, (32,), _tw(w, weight_dtype))
        got.backward(tw.tensor(g).to(got.dtype))
        if dtype == "float32":  # float32's last bits: rsqrt and sums of two libraries
            assert got.dtype is tw.float32
            np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), 1e-6)
        else:
            _same(got, expected, "output")
            _same(gx.grad, tx.grad, "gradient of the input", fused=True)


def test_port_harness_randint_takes_torchs_keywords(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: the harness's stand-in took no low=/high= keywords (TypeError on
    # torch.randint(high=2, size=...)), though torch's randint does.
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "ports"))
    from port_harness import shared_randomness

    calls = [
        ((3, (4,)), {}),
        ((3,), {"size": (4,)}),
        ((), {"high": 3, "size": (4,)}),
        ((), {"low": 1, "high": 3, "size": (4,)}),
        ((1,), {"high": 3, "size": (4,)}),
        ((1, 3, (4,)), {"dtype": torch.int32}),
    ]
    for args, kwargs in calls:
        with shared_randomness(torch, 0):
            drawn = torch.randint(*args, **kwargs)
        low = args[0] if len(args) == 3 or "high" in kwargs and args else kwargs.get("low", 0)
        assert tuple(drawn.shape) == (4,)
        assert drawn.dtype == kwargs.get("dtype", torch.int64)
        assert int(drawn.min()) >= low and int(drawn.max()) < 3


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_instance_norm_matches_pytorch(spec: str, dtype: str, affine: bool) -> None:
    # PyTorch's instance norm is its batch norm over (1, N * C, ...) with the parameters and
    # running statistics repeated per sample: the same half arithmetic (before: the output
    # differed in 30-67 of 192 elements, the input gradient in 73-94).
    rng = np.random.default_rng(11)
    shape = (4, 3, 16)
    arrays = {
        "x": _quarters(rng, shape),
        "rm": _quarters(rng, (3,)),
        "rv": rng.uniform(0.5, 2.0, size=3).astype(np.float32),
    }
    if affine:
        arrays["w"] = _scales(rng, 3)
        arrays["b"] = _quarters(rng, (3,))
    grads = ("x", "w", "b") if affine else ("x",)

    def call(lib, x, rm, rv, w=None, b=None):  # noqa: ANN001, ANN202
        return lib.nn.functional.instance_norm(x, rm, rv, w, b, use_input_stats=True)

    _run(spec, dtype, call, arrays, grads, _quarters(rng, shape))


def test_bfloat16_batch_norm_divides_its_sum_of_squares_in_bfloat16() -> None:
    # PyTorch's bfloat16 kernel rounds the sum of squared deviations and then its quotient by
    # the count to bfloat16 (c10's BFloat16 arithmetic); with eps=0.6 (op_db's instance_norm
    # sample) 2 of these 16 channels' inverse standard deviations round the other way when
    # only the sum is rounded: their outputs differed.
    rng = np.random.default_rng(6)
    shape = (4, 16, 3)

    def call(lib, x):  # noqa: ANN001, ANN202
        return lib.nn.functional.batch_norm(x, None, None, training=True, momentum=0.5, eps=0.6)

    x = _quarters(rng, shape)
    _run("torch:cpu", "bfloat16", call, {"x": x}, ("x",), _quarters(rng, shape))
