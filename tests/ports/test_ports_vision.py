"""Vision and L-BFGS PyTorch programs (pytorch/examples mnist, dcgan, vae,
time_sequence_prediction) run unchanged on tensorweaver.

Each case runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws (shuffles, dropout masks,
noise), and compares every loss the program returns (each training step's and each
evaluation's).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import tensorweaver as tw
import torch
from port_harness import Port, port_params, run_torch, run_tw

#: Every loss is far from 0, so no atol. Sizes keep a run ~1 s.
CASES = {
    # BatchNorm2d, Dropout2d/Dropout, Adadelta (lr=1) with StepLR over 2 shuffled epochs,
    # then an eval-mode test pass (batch-norm running statistics) after each.
    "mnist_cnn": Port("mnist_cnn", ["--steps", "3", "--epochs", "2"], atol=0.0),
    # ConvTranspose2d generator, BCELoss, two Adams, fake.detach(): D and G loss per step.
    "dcgan": Port("dcgan", ["--steps", "2", "--niter", "2"], atol=0.0),
    # randn_like reparameterization, summed binary_cross_entropy + KLD, Adam.
    "vae": Port("vae", ["--steps", "2", "--epochs", "2"], atol=0.0),
    # float64 LSTMCells unrolled in Python, L-BFGS closure: every closure's loss.
    "lbfgs_sine": Port("lbfgs_sine", ["--steps", "2", "--max-iter", "3"], rtol=1e-9, atol=0.0),
    "lbfgs_sine-small": Port(
        "lbfgs_sine",
        ["--steps", "1", "--max-iter", "2", "--length", "16", "--future", "4"],
        rtol=1e-9,
        atol=0.0,
        cunumeric=True,
    ),
}


@pytest.mark.parametrize(("case", "spec"), port_params(CASES))
def test_program_losses_match_pytorch(case: str, spec: str, check_port: Callable) -> None:
    check_port(CASES[case], spec)


def test_dcgan_checkpoints_match_pytorch(tmp_path: Path) -> None:
    """The generator dcgan.py checkpoints with ``torch.save`` after training holds torch's
    weights: every parameter and batch-norm statistic, not only the losses."""
    argv = ["--steps", "2", "--niter", "1"]
    (tmp_path / "torch").mkdir()
    (tmp_path / "tw").mkdir()
    _, init = run_torch("dcgan", [*argv, "--outf", str(tmp_path / "torch")], tmp_path)
    run_tw("dcgan", [*argv, "--outf", str(tmp_path / "tw")], "numpy", init)
    expected = torch.load(tmp_path / "torch" / "netG_epoch_0.pth", weights_only=True)
    got = tw.load(tmp_path / "tw" / "netG_epoch_0.pth")
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(
            got[key].numpy(), value.numpy(), rtol=1e-4, atol=1e-6, err_msg=key
        )
