"""Still more programs people write, run unchanged on tensorweaver: WGAN-GP (a gradient
penalty trained through ``autograd.grad(create_graph=True)``), U-Net segmentation, a RealNVP
flow, a CTC recognizer over packed sequences, a sparse mixture-of-experts layer, ESPCN
super-resolution, EmbeddingBag text classification, a TCN with weight norm, CPU mixed
precision, checkpoint-and-resume training, a one-cycle tabular model, matrix factorization
with SparseAdam, PointNet, a spectrally normalised conditional GAN, TransE, an LSTM
forecaster with gradient accumulation, mamba-minimal, and PPO.

Each case runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws, and compares every number
the program returns.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from port_harness import Port, port_params

#: Sizes keep each run under about a second on tensorweaver.
CASES = {
    # Critic steps with backward(mone)/backward(one), the penalty on random interpolates
    # through autograd.grad(create_graph=True, retain_graph=True), requires_grad toggled on
    # the critic's parameters around the generator step.
    "wgan-gp": Port("wgan_gp"),
    # ConvTranspose2d upsampling, F.pad to the skip's size, torch.cat skips, BCEWithLogits
    # + soft Dice, RMSprop(foreach=True) with momentum, clip_grad_norm_, ReduceLROnPlateau
    # ("max") on the evaluation Dice under inference_mode.
    "unet": Port("unet_segmentation"),
    # nn.Upsample(bilinear, align_corners=True) instead of transposed convolutions, the model
    # and its inputs in channels_last. (Not both at once: torch's own channels_last bilinear
    # kernel rounds differently from its contiguous one, and the run amplifies that float32
    # noise to ~3e-3 by the last step; torch against torch differs as much.)
    "unet-bilinear": Port("unet_segmentation", ["--bilinear", "--epochs", "1"]),
    "unet-channels-last": Port("unet_segmentation", ["--channels-last", "--epochs", "1"]),
    # Masks as a buffer, exp/tanh couplings, log-det sums, MultivariateNormal.log_prob,
    # backward(retain_graph=True), the inverse pass on torch.randn (shared draws).
    "realnvp": Port("realnvp_flow"),
    # pack_padded_sequence(enforce_sorted=False) into a 2-layer bidirectional LSTM,
    # pad_packed_sequence, CTCLoss(zero_infinity=True) on (T, N, C) log-probs with
    # concatenated targets, unique_consecutive greedy decoding.
    "ctc-lstm": Port("ctc_recognizer"),
    # topk routing renormalised in place, one_hot(...).permute masks, torch.where of a mask,
    # hidden_states[None, top_x], index_add_ of weighted expert outputs, RMSNorm, the
    # load-balancing and z losses, bincount of the routing.
    "mixture-of-experts": Port("mixture_of_experts"),
    # Conv2d tuple arguments, PixelShuffle, orthogonal_ init with calculate_gain, inputs
    # from F.interpolate(bicubic), PSNR from math.log10.
    "super-resolution": Port("super_resolution"),
    # EmbeddingBag with offsets from a cumsum in the collate_fn; SGD lr 5, clip 0.1, StepLR
    # stepped when validation accuracy falls.
    "text-embedding-bag": Port("text_classification_bag"),
    "text-embedding-bag-weighted-sum": Port(
        "text_classification_bag", ["--mode", "sum", "--weighted"]
    ),
    # Dilated causal Conv1d with Chomp1d, the hook-based nn.utils.weight_norm (weight_g,
    # weight_v), 1x1 downsample residuals.
    "tcn": Port("tcn"),
    # parametrizations.weight_norm, dropout (shared masks) and gradient clipping.
    "tcn-parametrized-dropout": Port(
        "tcn", ["--weight-norm", "parametrizations", "--dropout", "0.1", "--clip", "0.5"]
    ),
    # The AMP recipe's loop in float16 with an enabled GradScaler: scale/unscale_/step/
    # update, get_scale, its state_dict in a checkpoint through io.BytesIO.
    "amp-float16-scaler": Port("amp_training", ["--dtype", "float16", "--scaler"]),
    # ResNet with BatchNorm, checkpoint dicts through torch.save to files, shutil.copyfile of
    # the best, resume into fresh objects with map_location, topk accuracy; the program checks
    # that the resumed run equals an uninterrupted one.
    "checkpoint-resume": Port("checkpoint_resume"),
    # Embedding(padding_idx=0, max_norm=1.0) renormalising rows in place, embedding dropout,
    # CrossEntropyLoss(weight, label_smoothing), AdamW under OneCycleLR (linear anneal)
    # cycling the betas, bincount recalls.
    "tabular-onecycle-max-norm": Port(
        "tabular_onecycle", ["--max-norm", "1.0", "--anneal", "linear"]
    ),
    # Embedding(sparse=True) with SparseAdam on the tables and Adam on a dense parameter.
    "matrix-factorization": Port("matrix_factorization"),
    # PointNet: T-Nets adding torch.eye(k).view(1, k*k).repeat(...), bmm of the points,
    # torch.max over points, the feature-transform regularizer (norm over dim=(1, 2)),
    # log_softmax + nll_loss, StepLR. In float64: see the program's docstring.
    "pointnet-feature-transform": Port(
        "pointnet", ["--double", "--feature_transform"], rtol=1e-9, atol=1e-12
    ),
    # Conditional GAN: parametrizations.spectral_norm on Linear and Embedding layers (power
    # iteration each training forward, u/v in the state dict), a projection discriminator,
    # hinge losses, Adam betas (0.0, 0.9). In float64: see the program's docstring.
    "cgan-spectral-norm": Port(
        "cgan_spectral", ["--double", "--sn", "parametrizations"], rtol=1e-9, atol=1e-12
    ),
    # TransE: padding rows, in-place renormalisation through weight.data[:-1, :].div_(...),
    # L1 distances, MarginRankingLoss(reduction="none"), corrupted triples from randint
    # (shared draws) and torch.where, argsort ranks.
    "transe": Port("transe"),
    # LSTM forecaster: Tensor.unfold windows, HuberLoss, gradient accumulation,
    # clip_grad_value_, CosineAnnealingWarmRestarts stepped by fractional epochs, deepcopy of
    # the best state dict, an autoregressive forecast.
    "lstm-forecast": Port("lstm_forecast"),
    # mamba-minimal: Tensor.split(split_size=[...]), a depthwise causal Conv1d, softplus,
    # einsum discretisation ("bld,bln,bld->bldn"), the selective scan loop, tied embeddings.
    "mamba-minimal": Port("mamba_minimal"),
    # CleanRL's PPO loop: Categorical(logits).sample (shared draws), GAE, clipped surrogate
    # and value losses, lr annealed through param_groups.
    "ppo": Port("ppo"),
}


@pytest.mark.parametrize(("case", "spec"), port_params(CASES))
def test_program_losses_match_pytorch(case: str, spec: str, check_port: Callable) -> None:
    check_port(CASES[case], spec)


#: bfloat16 autocast (torch's CPU default), on torch:cpu only: NumPy has no bfloat16, and the
#: first autocast op there raises a TypeError that says so.
BF16 = Port("amp_training")


def test_bfloat16_autocast_program_matches_pytorch(check_port: Callable) -> None:
    check_port(BF16, "torch:cpu")
