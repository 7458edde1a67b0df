"""Vision and L-BFGS PyTorch programs (pytorch/examples mnist, dcgan, vae,
time_sequence_prediction) run unchanged on tensorweaver.

Each case runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws (shuffles, dropout masks,
noise), and compares every loss the program returns (each training step's and each
evaluation's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import tensorweaver as tw
import torch
from port_harness import assert_losses_match, run_torch, run_tw
from tw_backends import FAST

#: (program, argv, rtol (every loss is far from 0, so no atol), the reason it is expected to
#: fail, or None). Sizes keep a run ~1 s.
CASES = {
    # BatchNorm2d, Dropout2d/Dropout, Adadelta (lr=1) with StepLR over 2 shuffled epochs,
    # then an eval-mode test pass (batch-norm running statistics) after each.
    "mnist_cnn": ("mnist_cnn", ["--steps", "3", "--epochs", "2"], 1e-4, None),
    # ConvTranspose2d generator, BCELoss, two Adams, fake.detach(): D and G loss per step.
    "dcgan": ("dcgan", ["--steps", "2", "--niter", "2"], 1e-4, None),
    # randn_like reparameterization, summed binary_cross_entropy + KLD, Adam.
    "vae": ("vae", ["--steps", "2", "--epochs", "2"], 1e-4, None),
    # float64 LSTMCells unrolled in Python, L-BFGS closure: every closure's loss.
    "lbfgs_sine": ("lbfgs_sine", ["--steps", "2", "--max-iter", "3"], 1e-9, None),
    "lbfgs_sine-small": (
        "lbfgs_sine",
        ["--steps", "1", "--max-iter", "2", "--length", "16", "--future", "4"],
        1e-9,
        None,
    ),
}
#: Also run on cuPyNumeric (about 0.4 ms an op): the smallest run.
ON_CUNUMERIC = ("lbfgs_sine-small",)


def params() -> list:
    out = []
    for case, (_, _, _, reason) in CASES.items():
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        specs = ["cunumeric"] if case in ON_CUNUMERIC else FAST
        for spec in specs:
            extra = [pytest.mark.cunumeric] if spec == "cunumeric" else []
            out.append(pytest.param(case, spec, marks=marks + extra, id=f"{case}-{spec}"))
    return out


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Torch (and tw's torch backend) on one intra-op thread while these run: their ops are
    tiny, and on a busy machine torch's waiting pool threads made the runs 3-4x slower."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def torch_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], tuple[list[float], Path]]:
    """A case's torch losses and initial weights, computed once for all backends."""
    done: dict[str, tuple[list[float], Path]] = {}

    def run(case: str) -> tuple[list[float], Path]:
        if case not in done:
            name, argv, _, _ = CASES[case]
            done[case] = run_torch(name, argv, tmp_path_factory.mktemp(case))
        return done[case]

    return run


@pytest.mark.parametrize(("case", "spec"), params())
def test_program_losses_match_pytorch(
    case: str, spec: str, torch_run: Callable[[str], tuple[list[float], Path]]
) -> None:
    name, argv, rtol, _ = CASES[case]
    torch_losses, init = torch_run(case)
    tw_losses = run_tw(name, argv, spec, init)
    assert_losses_match(tw_losses, torch_losses, rtol=rtol, atol=0.0)


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
