"""Training techniques as plain PyTorch programs (a tiny DDPM with an EMA model, a spatial
transformer network, FGSM adversarial examples, REINFORCE and actor-critic, knowledge
distillation and a SimCLR contrastive loss, LoRA fine-tuning) run unchanged on tensorweaver.

Each case runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws, and compares every number
the program returns (each training step's loss, then its evaluation numbers).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from port_harness import Port, port_params

#: Sizes keep each run ~1 s.
CASES = {
    # linspace/cumprod beta schedule, randint timesteps and gather, sinusoidal embedding,
    # GroupNorm + SiLU conv UNet with a skip, MSE on the noise, an EMA copy updated by
    # torch._foreach_lerp_, and ancestral sampling with the EMA model.
    "ddpm-foreach-ema": Port("ddpm"),
    # The EMA written as p.data.mul_(decay).add_(q.data, alpha=1 - decay).
    "ddpm-data-ema": Port("ddpm", ["--ema", "data", "--steps", "4"]),
    # diffusers' EMAModel: torch._foreach_sub_(ema, torch._foreach_sub(ema, params), alpha=).
    "ddpm-foreach-sub-ema": Port("ddpm", ["--ema", "foreach-sub", "--steps", "3"]),
    # A localisation net regressing theta, F.affine_grid + F.grid_sample (bilinear, zero
    # padding), Dropout2d, nll_loss, SGD with momentum, eval accuracy and the mean theta.
    "stn": Port("stn"),
    # align_corners=True with border padding, and reflection padding.
    "stn-align-border": Port(
        "stn", ["--align-corners", "--padding-mode", "border", "--epochs", "1"]
    ),
    "stn-reflection": Port("stn", ["--padding-mode", "reflection", "--epochs", "1"]),
    # FGSM: a LeNet in eval mode, data.requires_grad = True, loss.backward() to the input,
    # data.grad.data.sign(), denormalise, clamp, renormalise; accuracy under each epsilon.
    "fgsm": Port("fgsm"),
    # Adversarial training (torch.autograd.grad to the input inside the training loop) and
    # the requires_grad_() spelling.
    "fgsm-adversarial-training": Port(
        "fgsm", ["--adversarial-training", "--spelling", "method", "--epsilons", "0.1"]
    ),
    # REINFORCE: Categorical(probs) draws, log_prob, returns normalised by std + eps,
    # torch.cat of the per-step losses; a policy with dropout.
    # (atol: a loss is a sum of ~20 float32 terms of size ~1 that can cancel to ~1e-5, where
    # float32 rounding moved it by 2.5e-6 between the libraries at seed 0)
    "reinforce": Port("reinforce", atol=1e-5),
    # Actor-critic: Categorical(logits=), entropy bonus, smooth_l1_loss of the values,
    # torch.stack(...).sum().
    "actor-critic": Port("reinforce", ["--algo", "actor-critic"]),
    # PPO's clipped surrogate over the rollout: exp of the log-ratio, clamp, torch.min,
    # advantages normalised under no_grad, clip_grad_norm_.
    "ppo": Port("reinforce", ["--algo", "ppo", "--episodes", "4"]),
    # Knowledge distillation: a frozen teacher with dropout in eval mode, F.kl_div of
    # log_softmax against softmax at a temperature, reduction="batchmean", times T**2.
    "distill-kl_div": Port("distill_contrastive"),
    "distill-log-target": Port("distill_contrastive", ["--kd", "log_target"]),
    "distill-module": Port("distill_contrastive", ["--kd", "module", "--steps", "3"]),
    # SimCLR's NT-Xent two ways: boolean-mask selection of positives and negatives, and the
    # diagonal masked_fill-ed with float("-inf") / -torch.inf; F.normalize, torch.cat of
    # views, arange labels; then a linear probe on the frozen encoder.
    "simclr": Port("distill_contrastive", ["--task", "simclr"]),
    "simclr-torch-inf": Port("distill_contrastive", ["--task", "simclr", "--neg-inf", "torch"]),
    # LoRA: a frozen base (requires_grad_(False)), nn.Linear layers found by named_modules
    # and replaced with setattr by low-rank wrappers, AdamW over filter(requires_grad), an
    # adapter-only state dict through io.BytesIO loaded with strict=False, and the weights
    # merged back under no_grad.
    "lora": Port("lora"),
    # Only the up projections adapted, the head trained too (requires_grad = True on a
    # frozen parameter).
    "lora-head": Port("lora", ["--targets", "up", "--train-head", "--rank", "2"]),
}


@pytest.mark.parametrize(("case", "spec"), port_params(CASES))
def test_program_losses_match_pytorch(case: str, spec: str, check_port: Callable) -> None:
    check_port(CASES[case], spec)
