"""float16 and bfloat16 activations, forward and backward, bit for bit against PyTorch 2.13's
CPU kernels (numpy has no bfloat16).

PyTorch's kernels widen a half input (and the output's gradient) to float32, evaluate their
own formula there and round once; a few round an intermediate to the half type too
(logsigmoid's saved exp(-|x|), glu's sigmoid in its backward). Before, tensorweaver composed
the formulas in the half type (every op rounding), or differentiated a float32 composition
op by op: 50-330 of 512 elements differed for gelu, silu, mish, softplus, elu, celu, selu,
hardswish, hardsigmoid, logsigmoid and glu; softshrink's forward with a lambd the half type
cannot hold in 35-96, and its bfloat16 backward at x = lambd rounded.

Two libraries' float32 exp/erf/tanh may differ in their last bit, which flips a half
rounding where the float32 value lies next to a tie: there (torch's own float32 result within
2**-17 of a tie, relatively) one half ulp of difference is allowed, elsewhere none. The inputs
avoid the regions where float32 cancellation turns a last-bit difference into a large one
(gelu below -2.5 and near its derivative's zero at -0.75; exp(x) - 1 for |x| < 0.1).
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered

#: (device, dtype) pairs that have the dtype.
LOW = [("numpy", "float16"), ("torch:cpu", "float16"), ("torch:cpu", "bfloat16")]
#: How close (relatively) to a half rounding tie a float32 result may be flipped by libm.
TIE_WINDOW = 2.0**-17
#: The spacing of each dtype's values in [1, 2), and between its subnormals.
ULP = {torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}
SUBNORMAL = {torch.float16: 2.0**-24, torch.bfloat16: 2.0**-133}

#: name -> (functional name, keyword arguments, input kind)
CASES = {
    "gelu": ("gelu", {}, "gelu"),
    "gelu_tanh": ("gelu", {"approximate": "tanh"}, "gelu"),
    "silu": ("silu", {}, "wide"),
    "mish": ("mish", {}, "wide"),
    "softplus": ("softplus", {}, "wide"),
    "softplus_beta_threshold": ("softplus", {"beta": 2.5, "threshold": 3.0}, "wide"),
    "elu": ("elu", {"alpha": 1.3}, "off_zero"),
    "celu": ("celu", {"alpha": 0.7}, "off_zero"),
    "selu": ("selu", {}, "off_zero"),
    "hardswish": ("hardswish", {}, "wide"),
    "hardsigmoid": ("hardsigmoid", {}, "wide"),
    "logsigmoid": ("logsigmoid", {}, "wide"),
    "glu": ("glu", {}, "wide"),
    "softshrink": ("softshrink", {"lambd": 0.3}, "wide"),
    "hardshrink": ("hardshrink", {"lambd": 0.3}, "wide"),
    "leaky_relu": ("leaky_relu", {"negative_slope": 0.013}, "wide"),
    "rrelu_eval": ("rrelu", {"lower": 0.11, "upper": 0.3}, "wide"),
    "hardtanh": ("hardtanh", {"min_val": -0.3, "max_val": 0.7}, "wide"),
    "relu6": ("relu6", {}, "wide"),
    "threshold": ("threshold", {"threshold": 0.3, "value": 0.7}, "wide"),
}
#: The kinks, thresholds and overflow points every input includes.
SPECIAL = [0.0, 3.0, -3.0, 6.0, -6.0, 0.3, -0.3, 0.7, 1.2, 20.0, -20.0, 30.0, 90.0, -90.0]


def _inputs(kind: str) -> np.ndarray:
    rng = np.random.default_rng(16)
    x = rng.normal(size=256) * 3
    if kind == "gelu":
        x = np.concatenate([rng.uniform(-2.5, -0.95, 64), rng.uniform(-0.55, 8, 192)])
    elif kind == "off_zero":
        x = np.where(np.abs(x) < 0.1, x + np.sign(x + 1e-9) * 0.1, x)
    specials = [s for s in SPECIAL if kind != "gelu" or s >= -0.55]
    if kind == "off_zero":
        specials = [s for s in specials if s != 0.0]
    x = np.concatenate([x, specials, np.zeros(32 - len(specials) % 32)])[:256]
    return x.reshape(4, 64).astype(np.float32)


def _near_tie(r32: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Where float32 values within TIE_WINDOW of ``r32`` round to different half values."""
    r = r32.double()
    return (r * (1 - TIE_WINDOW)).to(dtype) != (r * (1 + TIE_WINDOW)).to(dtype)


def _torch_run(name: str, x: np.ndarray, g: np.ndarray, dtype: torch.dtype) -> tuple:
    fn_name, kwargs, _ = CASES[name]
    fn = getattr(torch.nn.functional, fn_name)
    xt = torch.tensor(x).to(dtype).requires_grad_()
    y = fn(xt, **kwargs)
    y.backward(torch.tensor(g[:, : y.shape[1]]).to(dtype))
    return y.detach(), xt.grad


def _assert_as_torch(got: np.ndarray, expected: torch.Tensor, r32: torch.Tensor) -> None:
    dtype = expected.dtype
    want = expected.float().numpy()
    tie = _near_tie(r32, dtype).numpy()
    differ = (got != want) & ~(np.isnan(got) & np.isnan(want))
    assert not (differ & ~tie).any(), (
        f"{int((differ & ~tie).sum())} elements differ from torch away from a rounding tie: "
        f"got {got[differ & ~tie][:5]}, torch {want[differ & ~tie][:5]}"
    )
    # at a tie: one half ulp apart at most (the spacing is at most |value| * ULP, or the
    # subnormal spacing)
    bound = np.abs(want) * ULP[dtype] + SUBNORMAL[dtype]
    assert (np.abs(got - want)[differ] <= bound[differ]).all()


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_activation_forward_and_backward_match_pytorch(
    spec: str, dtype: str, name: str
) -> None:
    x = _inputs(CASES[name][2])
    g = np.random.default_rng(61).normal(size=x.shape).astype(np.float32)
    low = getattr(torch, dtype)
    y_t, gx_t = _torch_run(name, x, g, low)
    # torch's float32 kernel on the widened half values: what its half kernel rounds
    y32, gx32 = _torch_run(
        name,
        torch.tensor(x).to(low).float().numpy(),
        torch.tensor(g).to(low).float().numpy(),
        torch.float32,
    )
    fn_name, kwargs, _ = CASES[name]
    with entered(spec, seed=0):
        xw = tw.tensor(x).to(getattr(tw, dtype)).requires_grad_()
        y = getattr(tw.nn.functional, fn_name)(xw, **kwargs)
        y.backward(tw.tensor(g[:, : y.shape[1]]).to(xw.dtype))
        assert y.dtype is xw.dtype and xw.grad.dtype is xw.dtype
        got_y, got_g = y.detach().float().numpy(), xw.grad.float().numpy()
    _assert_as_torch(got_y, y_t, y32)
    _assert_as_torch(got_g, gx_t, gx32)


#: The in-place forms: the same values and gradients as torch's (the input a non-leaf).
#: Before, elu_, celu_ and selu_ differed in 164-184 of 256 gradient elements: PyTorch's
#: in-place elu backward reads the rounded output, not the overwritten input.
INPLACE = {
    "elu": {"alpha": 1.3},
    "celu": {"alpha": 0.7},
    "selu": {},
    "silu": {},
    "mish": {},
    "hardswish": {},
    "hardsigmoid": {},
    "leaky_relu": {"negative_slope": 0.013},
    "hardtanh": {"min_val": -0.3, "max_val": 0.7},
    "relu6": {},
}


@pytest.mark.parametrize("name", list(INPLACE))
@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_inplace_activation_matches_pytorch(spec: str, dtype: str, name: str) -> None:
    x = _inputs("off_zero")
    g = np.random.default_rng(62).normal(size=x.shape).astype(np.float32)
    low = getattr(torch, dtype)
    xt = torch.tensor(x).to(low).requires_grad_()
    yt = getattr(torch.nn.functional, name)(xt * 1, inplace=True, **INPLACE[name])
    yt.backward(torch.tensor(g).to(low))
    x32 = torch.tensor(x).to(low).float().requires_grad_()
    y32 = getattr(torch.nn.functional, name)(x32, **INPLACE[name])
    y32.backward(torch.tensor(g).to(low).float())
    with entered(spec, seed=0):
        xw = tw.tensor(x).to(getattr(tw, dtype)).requires_grad_()
        y = getattr(tw.nn.functional, name)(xw * 1, inplace=True, **INPLACE[name])
        y.backward(tw.tensor(g).to(xw.dtype))
        got_y, got_g = y.detach().float().numpy(), xw.grad.float().numpy()
    _assert_as_torch(got_y, yt.detach(), y32.detach())
    _assert_as_torch(got_g, xt.grad, x32.grad)


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "tanhshrink", "softsign"])
@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_tanh_sigmoid_gradients_match_pytorch(spec: str, dtype: str, name: str) -> None:
    # 75-300 of 256 gradient elements differed: tanh's and sigmoid's rules (and the
    # divisor's gradient, which softsign's takes) composed in the half type in another order
    x = _inputs("wide")
    g = np.random.default_rng(63).normal(size=x.shape).astype(np.float32)
    low = getattr(torch, dtype)
    xt = torch.tensor(x).to(low).requires_grad_()
    yt = getattr(torch.nn.functional, name)(xt)
    yt.backward(torch.tensor(g).to(low))
    x32 = torch.tensor(x).to(low).float().requires_grad_()
    y32 = getattr(torch.nn.functional, name)(x32)
    y32.backward(torch.tensor(g).to(low).float())
    with entered(spec, seed=0):
        xw = tw.tensor(x).to(getattr(tw, dtype)).requires_grad_()
        y = getattr(tw.nn.functional, name)(xw)
        y.backward(tw.tensor(g).to(xw.dtype))
        got_y, got_g = y.detach().float().numpy(), xw.grad.float().numpy()
    _assert_as_torch(got_y, yt.detach(), y32.detach())
    _assert_as_torch(got_g, xt.grad, x32.grad)


#: Module forms: (torch/tensorweaver class name, constructor arguments).
MODULES = [
    ("GELU", {"approximate": "tanh"}),
    ("SiLU", {}),
    ("Mish", {}),
    ("ELU", {"alpha": 0.5}),
    ("CELU", {"alpha": 1.5}),
    ("SELU", {}),
    ("Softplus", {"beta": 0.5}),
    ("Hardswish", {}),
    ("Hardsigmoid", {}),
    ("LogSigmoid", {}),
    ("GLU", {"dim": 0}),
    ("Softshrink", {"lambd": 0.7}),
]


@pytest.mark.parametrize(("module", "kwargs"), MODULES, ids=[m for m, _ in MODULES])
@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_activation_module_matches_pytorch(
    spec: str, dtype: str, module: str, kwargs: dict
) -> None:
    x = _inputs("gelu" if module == "GELU" else "off_zero")
    low = getattr(torch, dtype)
    expected = getattr(torch.nn, module)(**kwargs)(torch.tensor(x).to(low))
    r32 = getattr(torch.nn, module)(**kwargs)(torch.tensor(x).to(low).float())
    with entered(spec, seed=0):
        got = getattr(tw.nn, module)(**kwargs)(tw.tensor(x).to(getattr(tw, dtype)))
        got = got.float().numpy()
    _assert_as_torch(got, expected, r32)


@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_activation_differentiates_twice(spec: str, dtype: str) -> None:
    # The half kernel's backward is made of tensor ops: a gradient penalty differentiates it,
    # as PyTorch's (gelu_backward has a derivative); values as torch's within a few ulps.
    x = _inputs("gelu")
    low = getattr(torch, dtype)
    xt = torch.tensor(x).to(low).requires_grad_()
    (gt,) = torch.autograd.grad(torch.nn.functional.gelu(xt).sum(), xt, create_graph=True)
    (ht,) = torch.autograd.grad((gt * gt).sum(), xt)
    with entered(spec, seed=0):
        xw = tw.tensor(x).to(getattr(tw, dtype)).requires_grad_()
        (gw,) = tw.autograd.grad(tw.nn.functional.gelu(xw).sum(), xw, create_graph=True)
        (hw,) = tw.autograd.grad((gw * gw).sum(), xw)
        assert hw.dtype is xw.dtype
        got = hw.float().numpy()
    np.testing.assert_allclose(got, ht.float().numpy(), rtol=0.05, atol=0.05)


@pytest.mark.parametrize("name", ["gelu", "silu", "elu", "logsigmoid", "glu"])
@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_float32_activation_keeps_its_dtype_and_values(spec: str, name: str) -> None:
    # float32 takes the composition it took before (no widening, no second rounding)
    x = _inputs("wide")
    expected = getattr(torch.nn.functional, name)(torch.tensor(x).double()).numpy()
    with entered(spec, seed=0):
        got = getattr(tw.nn.functional, name)(tw.tensor(x))
        assert got.dtype is tw.float32
        got = got.numpy()
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["sigmoid", "tanh"])
@pytest.mark.parametrize(("spec", "dtype"), LOW)
def test_half_sigmoid_and_tanh_forward_match_pytorch(spec: str, dtype: str, name: str) -> None:
    # NumPy's float16 sigmoid composed e^-|x| and 1 / (1 + e) in float16 (209 of 512
    # differed); PyTorch rounds its float32 result once
    x = _inputs("wide")
    low = getattr(torch, dtype)
    expected = getattr(torch, name)(torch.tensor(x).to(low))
    r32 = getattr(torch, name)(torch.tensor(x).to(low).float())
    with entered(spec, seed=0):
        got = getattr(tw, name)(tw.tensor(x).to(getattr(tw, dtype))).float().numpy()
    _assert_as_torch(got, expected, r32)
