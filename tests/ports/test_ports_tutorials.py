"""Tutorial-style PyTorch programs (seq2seq with attention, a CIFAR ResNet, a char-RNN, a
tabular MLP, siamese/triplet metric learning, nanoGPT, DQN, style transfer,
fast neural style and super-resolution, a ViT) run unchanged on tensorweaver.

Each case runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws (shuffles, dropout masks,
crops, samples), and compares every number the program returns (each training step's loss,
then its evaluation losses and counts).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from port_harness import assert_losses_match, run_torch, run_tw
from tw_backends import FAST

pytestmark = [
    # torch's own notice about the inter-layer dropout of a one-layer RNN, not a failure.
    pytest.mark.filterwarnings("ignore:dropout option adds dropout after all but last"),
]

#: (program, argv, the reason it is expected to fail, or None). Sizes keep each run ~1 s.
CASES = {
    # Bidirectional GRU encoder over packed padded batches, Luong "general" attention
    # (masked_fill, bmm), teacher forcing by random.random(), topk, clip_grad_norm_ and
    # clip_grad_value_, two Adams, ReduceLROnPlateau; greedy decoding with torch.max.
    "seq2seq-general": ("seq2seq_attention", ["--iterations", "6"], None),
    # Bahdanau additive attention; 2-layer GRUs (without dropout: a multi-layer RNN's
    # inter-layer dropout is torch's own generator, which the harness cannot share).
    "seq2seq-bahdanau": (
        "seq2seq_attention",
        ["--attn-model", "bahdanau", "--encoder-n-layers", "2", "--decoder-n-layers", "2"]
        + ["--iterations", "5", "--teacher-forcing-ratio", "0.3"],
        None,
    ),
    # Luong "concat" attention with a raw nn.Parameter(torch.FloatTensor(n)), and dropout
    # on the decoder's embeddings.
    "seq2seq-concat": (
        "seq2seq_attention",
        ["--attn-model", "concat", "--dropout", "0.1", "--iterations", "4"]
        + ["--teacher-forcing-ratio", "1.0"],
        None,
    ),
    # BasicBlock ResNet (BatchNorm2d, shortcuts, ModuleList of Sequentials), tensor crop/flip
    # augmentation, label smoothing, Nesterov SGD + weight decay under OneCycleLR, gradient
    # accumulation, eval accuracy, checkpoint through io.BytesIO with the optimizer's state.
    "resnet-onecycle": ("resnet_cifar", [], None),
    # CosineAnnealingLR, a checkpoint file, and an EMA of the weights and buffers
    # (AveragedModel with get_ema_multi_avg_fn).
    "resnet-cosine-ema": (
        "resnet_cifar",
        ["--schedule", "cosine", "--checkpoint", "file", "--average", "ema"],
        None,
    ),
    # Stochastic weight averaging: AveragedModel, SWALR, update_bn.
    "resnet-swa": ("resnet_cifar", ["--epochs", "3", "--average", "swa"], None),
    # 2-layer LSTM with tied embedding/decoder weights, detached hidden state between batches,
    # Adam(betas=, eps=), clip_grad_norm_, then temperature sampling with torch.multinomial.
    "char_rnn": ("char_rnn", [], None),
    "char_rnn-untied-dropout": (
        "char_rnn",
        ["--no-tie", "--n-layers", "1", "--dropout", "0.2", "--epochs", "1"]
        + ["--temperature", "0.5"],
        None,
    ),
    # An adaptive softmax (nn.AdaptiveLogSoftmaxWithLoss) for the loss and log_prob sampling.
    "char_rnn-adaptive": ("char_rnn", ["--adaptive", "--epochs", "1"], None),
    # The pre-0.4 spelling of the hidden state: weight.new(*sizes).zero_().
    "char_rnn-legacy-new": (
        "char_rnn",
        ["--legacy-new", "--epochs", "1"],
        None,
    ),
    # Dict-returning Dataset over Subsets, embeddings + BatchNorm1d + LayerNorm/GELU residual
    # blocks, AdamW parameter groups, LambdaLR warmup + cosine, inference_mode, BCEWithLogits,
    # early stopping with copy.deepcopy(model.state_dict()).
    "tabular_mlp": ("tabular_mlp", [], None),
    # pos_weight, and early stopping that triggers.
    "tabular_mlp-early-stop": (
        "tabular_mlp",
        ["--pos-weight", "2.0", "--lr", "0.02", "--epochs", "6", "--patience", "0"],
        None,
    ),
    # Weight-normalized residual blocks (nn.utils.parametrizations.weight_norm).
    "tabular_mlp-weight-norm": ("tabular_mlp", ["--weight-norm", "--epochs", "2"], None),
    # Batch-hard triplet mining over torch.cdist (F.triplet_margin_loss), F.normalize, PReLU,
    # RMSprop(momentum) + StepLR, recall@1 by F.cosine_similarity and topk, einsum.
    "siamese-triplet": ("siamese", [], None),
    # Contrastive loss on F.pairwise_distance over a pair Dataset and shuffled DataLoader.
    "siamese-contrastive": ("siamese", ["--loss", "contrastive"], None),
    # The pytorch/examples siamese network: a head over both embeddings, Sigmoid + BCELoss.
    "siamese-bce": ("siamese", ["--loss", "bce"], None),
    # nanoGPT's model and training loop: causal SDPA, weight tying, self.apply init, AdamW
    # decay groups with an inspect.signature "fused" check, lr written into param_groups,
    # gradient accumulation through a disabled GradScaler, torch.backends.cuda.matmul switches,
    # a whole checkpoint (optimizer, model args, config) resumed with "_orig_mod." stripped,
    # crop_block_size, and top-k sampling with a masked setitem of -inf.
    "nano_gpt": ("nano_gpt", [], None),
    # The hand-written attention: a registered tril buffer, masked_fill(-inf), dropout, and
    # LayerNorm without bias.
    "nano_gpt-manual": ("nano_gpt", ["--manual-attention", "--no-bias", "--dropout", "0.1"], None),
    # The DQN tutorial: namedtuple replay memory, max(1).indices, a bool mask built from a
    # tuple of Python bools written through, gather, SmoothL1Loss, AdamW(amsgrad=True),
    # clip_grad_value_, and the soft target update through state dicts.
    "dqn": ("dqn", [], None),
    # The neural style transfer tutorial: a Sequential rebuilt with add_module while walking
    # children(), sliced after the last loss module, Gram matrices, and LBFGS on the image
    # through a closure that clamps it in place under no_grad.
    "style_transfer": ("style_transfer", [], None),
    # pytorch/examples' fast_neural_style TransformerNet (ReflectionPad2d, affine
    # InstanceNorm2d, nearest interpolate) with Gram-matrix style loss, and super_resolution
    # (PixelShuffle, orthogonal_ init with calculate_gain, PSNR).
    "image_transform": ("image_transform", [], None),
    # A small ViT: conv patches, an expanded class token, trunc_normal_ position embeddings,
    # pre-norm GELU TransformerEncoder, mixup, label smoothing, SequentialLR (LinearLR then
    # CosineAnnealingLR), and the ImageNet example's top-k accuracy.
    "vit": ("vit", [], None),
    # Patches by unfold twice and a Linear: the same numbers as the conv (same init draws).
    "vit-unfold": ("vit", ["--unfold", "--steps", "3"], None),
    # The hook-based nn.utils.weight_norm(dim=None) on the embedding's output layer.
    "siamese-weight-norm": ("siamese", ["--weight-norm", "--steps", "5"], None),
    # A spectrally normalized hidden layer (parametrizations.spectral_norm: power iteration
    # in each training forward, u and v loaded from the initial state dict).
    "siamese-spectral-norm": (
        "siamese",
        ["--spectral-norm", "--loss", "bce", "--steps", "5"],
        None,
    ),
}


def params() -> list:
    out = []
    for case, (_, _, reason) in CASES.items():
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out += [pytest.param(case, spec, marks=marks, id=f"{case}-{spec}") for spec in FAST]
    return out


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Torch (and tw's torch backend) on one intra-op thread: the ops are tiny, and on a
    busy machine torch's waiting pool threads slow the runs down several times."""
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
