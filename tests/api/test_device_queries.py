"""PyTorch's device queries and switches that scripts call at start-up: ``tw.cuda`` (with the
deprecated ``tw.cuda.amp``), ``tw.backends.cudnn``, ``tw.distributed``, ``tw.version``.

This machine has no CUDA device, so the tests check what a script sees without one (what
PyTorch's CPU build answers) and that the CUDA answers come from the torch plugin's records.
"""

from __future__ import annotations

import sys
import warnings

import pytest
import tensorweaver as tw
import tensorweaver.backends.cudnn as cudnn
import torch
from tensorweaver.backends.torch_records import available


def test_no_cuda_answers_as_pytorch_cpu_build() -> None:
    assert tw.cuda.is_available() is torch.cuda.is_available() is False
    assert tw.cuda.device_count() == torch.cuda.device_count() == 0
    assert tw.cuda.is_bf16_supported() is False
    for query in (tw.cuda.get_device_name, tw.cuda.get_device_capability):
        with pytest.raises(RuntimeError, match="cuda"):
            query()
        with pytest.raises(RuntimeError):
            query(0)


def test_cuda_queries_read_the_torch_plugins_probed_records() -> None:
    # The probed CPU record carries the details a CUDA record's name and capability come from.
    cpu = available(("cpu",), probe=True)
    assert [r.name for r in cpu] == ["torch:cpu:0"]
    assert cpu[0].detail["torch_device"] == "cpu"


def test_cuda_amp_is_the_deprecated_spelling_of_amp() -> None:
    x = tw.ones(2, 2)
    with pytest.warns(FutureWarning, match=r"torch\.amp\.autocast\('cuda'"):
        block = tw.cuda.amp.autocast(dtype=tw.bfloat16)
    with tw.device("torch:cpu"):
        y = tw.ones(2, 2)
        with block:
            assert (y @ y).dtype is tw.bfloat16
    assert (x @ x).dtype is tw.float32
    with pytest.warns(FutureWarning, match=r"torch\.amp\.GradScaler\('cuda'"):
        scaler = tw.cuda.amp.GradScaler(init_scale=8.0)
    assert isinstance(scaler, tw.amp.GradScaler)
    # (torch's warns and disables itself without CUDA)
    assert scaler.get_scale() == (8.0 if tw.cuda.is_available() else 1.0)
    from tensorweaver.cuda.amp import GradScaler, autocast  # the import scripts write

    assert autocast is tw.cuda.amp.autocast and GradScaler is tw.cuda.amp.GradScaler


def test_cudnn_switches_default_like_torch_and_reach_torch() -> None:
    for name in cudnn.SWITCHES:
        assert getattr(cudnn, name) == getattr(torch.backends.cudnn, name), name
    assert cudnn.is_available() is False and cudnn.version() is None
    assert "torch" in sys.modules
    try:
        cudnn.benchmark = True
        cudnn.deterministic = True
        assert cudnn.benchmark and torch.backends.cudnn.benchmark
        assert torch.backends.cudnn.deterministic
    finally:
        cudnn.benchmark = torch.backends.cudnn.benchmark = False
        cudnn.deterministic = torch.backends.cudnn.deterministic = False
    assert tw.backends.cudnn is cudnn


def test_cuda_matmul_and_attention_switches_as_torch() -> None:
    # nanoGPT sets torch.backends.cuda.matmul.allow_tf32 first thing: it raised AttributeError.
    cuda = tw.backends.cuda
    assert cuda.is_built() is torch.backends.cuda.is_built() is False
    assert cuda.matmul.allow_tf32 is torch.backends.cuda.matmul.allow_tf32 is False
    for name in (
        "allow_fp16_reduced_precision_reduction",
        "allow_bf16_reduced_precision_reduction",
    ):
        assert getattr(cuda.matmul, name) == getattr(torch.backends.cuda.matmul, name)
    try:
        cuda.matmul.allow_tf32 = True  # the same setting as the float32 matmul precision
        assert tw.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "high"
        tw.set_float32_matmul_precision("highest")
        assert cuda.matmul.allow_tf32 is False
        cuda.enable_flash_sdp(False)
        assert not cuda.flash_sdp_enabled() and not torch.backends.cuda.flash_sdp_enabled()
        assert cuda.math_sdp_enabled() is torch.backends.cuda.math_sdp_enabled() is True
    finally:
        tw.set_float32_matmul_precision("highest")
        cuda.enable_flash_sdp(True)
    with pytest.raises(AttributeError, match="Unknown attribute"):
        cuda.matmul.allow_tf64 = True
    with pytest.raises(AttributeError, match="Unknown attribute"):
        cuda.matmul.allow_tf64  # noqa: B018


def test_single_process_distributed_and_build_facts() -> None:
    assert tw.distributed.is_available() is False
    assert tw.distributed.is_initialized() is False
    assert tw.version.cuda is None and tw.version.hip is None
    assert tw.version.__version__ == tw.__version__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import tensorweaver.distributed  # noqa: F401
