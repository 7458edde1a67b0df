"""tw.autocast and GradScaler: low-precision matrix products, float32 master weights."""

from __future__ import annotations

import numpy as np
import pytest
import tensorweaver as tw

pytest.importorskip("torch")


def test_bf16_matmul_on_torch_computes_low_and_promotes_back() -> None:
    rng = np.random.default_rng(0)
    a_host, b_host = rng.standard_normal((8, 16)), rng.standard_normal((16, 4))
    with tw.device("torch:cpu"):
        a = tw.tensor(a_host, dtype=tw.float32, requires_grad=True)
        b = tw.tensor(b_host, dtype=tw.float32)
        bias = tw.zeros(4)
        with tw.autocast("bf16"):
            y = a @ b
            z = y + bias
    assert y.dtype is tw.bfloat16 and z.dtype is tw.float32
    # bf16 keeps 8 bits of mantissa: agreement to about 1e-2 relative
    np.testing.assert_allclose(z.detach().numpy(), a_host @ b_host, rtol=0.05, atol=0.1)
    z.sum().backward()
    assert a.grad.dtype is tw.float32
    np.testing.assert_allclose(a.grad.numpy(), np.ones((8, 4)) @ b_host.T, rtol=0.05, atol=0.1)


def test_outside_the_block_nothing_changes() -> None:
    with tw.device("torch:cpu"):
        a = tw.ones(2, 2)
        with tw.autocast("bf16"):
            pass
        assert (a @ a).dtype is tw.float32


@pytest.mark.parametrize(
    ("precision", "device", "message"),
    [
        ("bf16", "numpy", "no bfloat16"),
        ("tf32", "torch:cpu", "tensor cores"),
        ("fp8", "numpy", "unknown precision"),
    ],
)
def test_precisions_a_device_cannot_do_are_clear_errors(precision, device, message) -> None:
    with pytest.raises(ValueError, match=message):
        with tw.autocast(precision, device=device):
            pass


def test_grad_scaler_skips_overflowing_steps_and_backs_off() -> None:
    w = tw.tensor([1.0, 2.0], requires_grad=True)
    opt = tw.optim.SGD([w], lr=0.1)
    scaler = tw.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    scaler.scale((w * w).sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), [8.0, 16.0])  # scaled by 4
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(w.detach().numpy(), [0.8, 1.6])  # unscaled gradient used
    opt.zero_grad()
    scaler.scale((w * float("inf")).sum()).backward()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(w.detach().numpy(), [0.8, 1.6])  # skipped
    assert scaler.get_scale() == 2.0
    for _ in range(2):
        opt.zero_grad()
        scaler.scale(w.sum()).backward()
        scaler.step(opt)
        scaler.update()
    assert scaler.get_scale() == 4.0  # grew after growth_interval clean steps


def _cuda_available() -> bool:
    return any(d.kind == "cuda" and d.status == "available" for d in tw.devices())


@pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA device (none on this machine)")
def test_tf32_and_bf16_on_cuda() -> None:
    with tw.device("torch:cuda"):
        a = tw.randn(64, 64)
        with tw.autocast("tf32"):
            y = a @ a
        assert y.dtype is tw.float32
        with tw.autocast("bf16"):
            assert (a @ a).dtype is tw.bfloat16


@pytest.mark.parametrize("device", ["numpy", "torch:cpu"])
def test_linear_and_attention_take_mixed_dtypes_under_autocast_like_torch(device) -> None:
    # A float16 activation met a float32 weight in F.linear (MultiheadAttention's output
    # projection, any bias-free Linear) and raised instead of casting both, as autocast does.
    import torch

    rng = np.random.default_rng(1)
    x_host = rng.standard_normal((2, 5, 16)).astype(np.float32)
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    with tw.device(device):
        ours = tw.nn.MultiheadAttention(16, 4, batch_first=True)
        ours.load_state_dict({k: tw.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
        x = tw.tensor(x_host)
        w = tw.tensor(rng.standard_normal((3, 16)).astype(np.float32))
        with tw.autocast("cpu", dtype=tw.float16):
            got = ours(x, x, x, need_weights=False)[0]
            half = tw.nn.functional.linear(x.half(), w)  # a bias-free projection
    with torch.autocast("cpu", dtype=torch.float16):
        want = theirs(*(torch.tensor(x_host),) * 3, need_weights=False)[0]
        twant = torch.nn.functional.linear(torch.tensor(x_host).half(), torch.tensor(w.numpy()))
    assert got.dtype is tw.float16 and want.dtype is torch.float16
    assert half.dtype is tw.float16 and twant.dtype is torch.float16
    np.testing.assert_allclose(
        got.detach().float().numpy(), want.detach().float().numpy(), rtol=2e-2, atol=2e-2
    )
