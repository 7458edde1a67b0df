"""PyTorch's spellings of autocast and GradScaler: ``tw.autocast(device_type, dtype=,
enabled=)``, ``tw.amp.autocast``, ``tw.amp.GradScaler("cpu")``, compared with PyTorch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch

A = np.random.default_rng(0).standard_normal((4, 8))
B = np.random.default_rng(1).standard_normal((8, 3))


def _product_dtypes(m: Any, make_block: Any) -> list[str]:
    a = m.tensor(A, dtype=m.float32)
    b = m.tensor(B, dtype=m.float32)
    seen = []
    with make_block(m):
        seen.append(str((a @ b).dtype).rsplit(".", 1)[-1])
        with m.autocast("cpu", enabled=False):  # switched off inside a block
            seen.append(str((a @ b).dtype).rsplit(".", 1)[-1])
        seen.append(str(((a @ b) + a.sum()).dtype).rsplit(".", 1)[-1])
    seen.append(str((a @ b).dtype).rsplit(".", 1)[-1])
    return seen


@pytest.mark.parametrize(
    "make_block",
    [
        lambda m: m.autocast("cpu"),
        lambda m: m.autocast(device_type="cpu", dtype=m.bfloat16),
        lambda m: m.amp.autocast("cpu"),
        lambda m: m.autocast("cpu", dtype=m.bfloat16, enabled=False),
    ],
)
def test_autocast_blocks_like_torch(make_block: Any) -> None:
    with tw.device("torch:cpu"):
        ours = _product_dtypes(tw, make_block)
    assert ours == _product_dtypes(torch, make_block)


def test_autocast_as_decorator_and_values() -> None:
    def run(m: Any) -> Any:
        @m.autocast("cpu", dtype=m.bfloat16)
        def product(a: Any, b: Any) -> Any:
            return a @ b

        return product(m.tensor(A, dtype=m.float32), m.tensor(B, dtype=m.float32))

    with tw.device("torch:cpu"):
        ours = run(tw)
    theirs = run(torch)
    assert ours.dtype is tw.bfloat16 and theirs.dtype is torch.bfloat16
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


def test_existing_precision_names_still_work() -> None:
    with tw.device("torch:cpu"):
        a = tw.ones(2, 2)
        with tw.autocast("bf16"):
            assert (a @ a).dtype is tw.bfloat16
        with tw.autocast("fp16"):
            assert (a @ a).dtype is tw.float16


@pytest.mark.parametrize("name", ["int32", "float32", "float64"])
def test_cpu_autocast_with_an_unsupported_dtype_warns_and_disables_like_torch(name: str) -> None:
    # Raised ValueError for int32 (and silently did nothing for float32) where PyTorch warns.
    def run(m: Any) -> tuple:
        with pytest.warns(UserWarning, match="target dtype is not supported. Disabling"):
            block = m.autocast("cpu", dtype=getattr(m, name))
        with block:
            enabled = (tw.amp if m is tw else m).is_autocast_enabled("cpu")
            return enabled, _product_dtypes(m, lambda m: block)

    with tw.device("torch:cpu"):
        assert run(tw) == run(torch)


def test_autocast_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="not both"), tw.autocast("bf16", dtype=tw.float16):
        pass


def _scaler_run(m: Any, make_scaler: Any) -> tuple:
    """Three steps, the second with an overflowing gradient: weights and scales after each."""
    w = m.tensor([1.0, -2.0], requires_grad=True)
    opt = m.optim.SGD([w], lr=0.1)
    scaler = make_scaler(m)
    scales, weights = [], []
    for step in range(3):
        opt.zero_grad()
        loss = (w * w).sum() * (float("inf") if step == 1 else 1.0)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        weights.append(w.detach().numpy().copy())
    return scales, weights


@pytest.mark.parametrize(
    "make_scaler",
    [
        lambda m: m.amp.GradScaler("cpu", init_scale=8.0, growth_interval=1),
        lambda m: m.amp.GradScaler(device="cpu", init_scale=4.0, backoff_factor=0.25),
    ],
)
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_grad_scaler_with_a_device_like_torch(make_scaler: Any) -> None:
    ours_scales, ours_weights = _scaler_run(tw, make_scaler)
    their_scales, their_weights = _scaler_run(torch, make_scaler)
    assert ours_scales == their_scales
    np.testing.assert_allclose(ours_weights, their_weights, rtol=1e-6)


def test_grad_scaler_rejects_a_positional_scale() -> None:
    with pytest.raises(TypeError, match="init_scale"):
        tw.amp.GradScaler(1024.0)


def test_autocast_takes_a_device_spec_and_names_unknown_ones() -> None:
    with tw.device("torch:cpu"):
        a = tw.ones(2, 2)
        with tw.autocast("torch:cpu", dtype=tw.bfloat16):
            assert (a @ a).dtype is tw.bfloat16
    with pytest.raises(ValueError, match="'gpu0' is not a device type"), tw.autocast("gpu0"):
        pass
