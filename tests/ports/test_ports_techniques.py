"""Training techniques as plain PyTorch programs (a tiny DDPM with an EMA model, a spatial
transformer network, FGSM adversarial examples, REINFORCE and actor-critic, knowledge
distillation and a SimCLR contrastive loss, LoRA fine-tuning) run unchanged on tensorweaver.

Each case runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws, and compares every number
the program returns (each training step's loss, then its evaluation numbers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from port_harness import assert_losses_match, run_torch, run_tw
from tw_backends import FAST

#: (program, argv, the reason it is expected to fail, or None). Sizes keep each run ~1 s.
CASES = {
    # linspace/cumprod beta schedule, randint timesteps and gather, sinusoidal embedding,
    # GroupNorm + SiLU conv UNet with a skip, MSE on the noise, an EMA copy updated by
    # torch._foreach_lerp_, and ancestral sampling with the EMA model.
    "ddpm-foreach-ema": ("ddpm", [], None),
    # The EMA written as p.data.mul_(decay).add_(q.data, alpha=1 - decay).
    "ddpm-data-ema": ("ddpm", ["--ema", "data", "--steps", "4"], None),
    # diffusers' EMAModel: torch._foreach_sub_(ema, torch._foreach_sub(ema, params), alpha=).
    "ddpm-foreach-sub-ema": ("ddpm", ["--ema", "foreach-sub", "--steps", "3"], None),
    # A localisation net regressing theta, F.affine_grid + F.grid_sample (bilinear, zero
    # padding), Dropout2d, nll_loss, SGD with momentum, eval accuracy and the mean theta.
    "stn": ("stn", [], None),
    # align_corners=True with border padding, and reflection padding.
    "stn-align-border": (
        "stn",
        ["--align-corners", "--padding-mode", "border", "--epochs", "1"],
        None,
    ),
    "stn-reflection": ("stn", ["--padding-mode", "reflection", "--epochs", "1"], None),
    # FGSM: a LeNet in eval mode, data.requires_grad = True, loss.backward() to the input,
    # data.grad.data.sign(), denormalise, clamp, renormalise; accuracy under each epsilon.
    "fgsm": ("fgsm", [], None),
    # Adversarial training (torch.autograd.grad to the input inside the training loop) and
    # the requires_grad_() spelling.
    "fgsm-adversarial-training": (
        "fgsm",
        ["--adversarial-training", "--spelling", "method", "--epsilons", "0.1"],
        None,
    ),
    # REINFORCE: Categorical(probs) draws, log_prob, returns normalised by std + eps,
    # torch.cat of the per-step losses; a policy with dropout.
    "reinforce": ("reinforce", [], None),
    # Actor-critic: Categorical(logits=), entropy bonus, smooth_l1_loss of the values,
    # torch.stack(...).sum().
    "actor-critic": ("reinforce", ["--algo", "actor-critic"], None),
    # PPO's clipped surrogate over the rollout: exp of the log-ratio, clamp, torch.min,
    # advantages normalised under no_grad, clip_grad_norm_.
    "ppo": ("reinforce", ["--algo", "ppo", "--episodes", "4"], None),
    # Knowledge distillation: a frozen teacher with dropout in eval mode, F.kl_div of
    # log_softmax against softmax at a temperature, reduction="batchmean", times T**2.
    "distill-kl_div": ("distill_contrastive", [], None),
    "distill-log-target": ("distill_contrastive", ["--kd", "log_target"], None),
    "distill-module": ("distill_contrastive", ["--kd", "module", "--steps", "3"], None),
    # SimCLR's NT-Xent two ways: boolean-mask selection of positives and negatives, and the
    # diagonal masked_fill-ed with float("-inf") / -torch.inf; F.normalize, torch.cat of
    # views, arange labels; then a linear probe on the frozen encoder.
    "simclr": ("distill_contrastive", ["--task", "simclr"], None),
    "simclr-torch-inf": ("distill_contrastive", ["--task", "simclr", "--neg-inf", "torch"], None),
    # LoRA: a frozen base (requires_grad_(False)), nn.Linear layers found by named_modules
    # and replaced with setattr by low-rank wrappers, AdamW over filter(requires_grad), an
    # adapter-only state dict through io.BytesIO loaded with strict=False, and the weights
    # merged back under no_grad.
    "lora": ("lora", [], None),
    # Only the up projections adapted, the head trained too (requires_grad = True on a
    # frozen parameter).
    "lora-head": ("lora", ["--targets", "up", "--train-head", "--rank", "2"], None),
}


def params() -> list:
    out = []
    for case, (_, _, reason) in CASES.items():
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out += [pytest.param(case, spec, marks=marks, id=f"{case}-{spec}") for spec in FAST]
    return out


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Torch (and tw's torch backend) on one intra-op thread: the ops are tiny."""
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def torch_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], tuple[list[float], Path]]:
    """A case's torch losses and initial weights, computed once for both backends."""
    done: dict[str, tuple[list[float], Path]] = {}

    def run(case: str) -> tuple[list[float], Path]:
        if case not in done:
            name, argv, _ = CASES[case]
            done[case] = run_torch(name, argv, tmp_path_factory.mktemp(case))
        return done[case]

    return run


@pytest.mark.parametrize(("case", "spec"), params())
def test_program_losses_match_pytorch(
    case: str, spec: str, torch_run: Callable[[str], tuple[list[float], Path]]
) -> None:
    name, argv, _ = CASES[case]
    torch_losses, init = torch_run(case)
    tw_losses = run_tw(name, argv, spec, init)
    assert_losses_match(tw_losses, torch_losses, rtol=1e-4, atol=1e-6)
