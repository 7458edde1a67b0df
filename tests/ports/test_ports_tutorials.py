"""Tutorial-style PyTorch programs (seq2seq with attention, a CIFAR ResNet, a char-RNN, a
tabular MLP, siamese/triplet metric learning, nanoGPT, DQN, style transfer,
fast neural style and super-resolution, a ViT) run unchanged on tensorweaver.

Each case runs a program of ``programs/`` on torch, then import-rewritten on a tensorweaver
device from torch's initial weights and with the same random draws (shuffles, dropout masks,
crops, samples), and compares every number the program returns (each training step's loss,
then its evaluation losses and counts).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from port_harness import Port, port_params

pytestmark = [
    # torch's own notice about the inter-layer dropout of a one-layer RNN, not a failure.
    pytest.mark.filterwarnings("ignore:dropout option adds dropout after all but last"),
]

#: Sizes keep each run ~1 s.
CASES = {
    # Bidirectional GRU encoder over packed padded batches, Luong "general" attention
    # (masked_fill, bmm), teacher forcing by random.random(), topk, clip_grad_norm_ and
    # clip_grad_value_, two Adams, ReduceLROnPlateau; greedy decoding with torch.max.
    "seq2seq-general": Port("seq2seq_attention", ["--iterations", "6"]),
    # Bahdanau additive attention; 2-layer GRUs (without dropout: a multi-layer RNN's
    # inter-layer dropout is torch's own generator, which the harness cannot share).
    "seq2seq-bahdanau": Port(
        "seq2seq_attention",
        ["--attn-model", "bahdanau", "--encoder-n-layers", "2", "--decoder-n-layers", "2"]
        + ["--iterations", "5", "--teacher-forcing-ratio", "0.3"],
    ),
    # Luong "concat" attention with a raw nn.Parameter(torch.FloatTensor(n)), and dropout
    # on the decoder's embeddings.
    "seq2seq-concat": Port(
        "seq2seq_attention",
        ["--attn-model", "concat", "--dropout", "0.1", "--iterations", "4"]
        + ["--teacher-forcing-ratio", "1.0"],
    ),
    # BasicBlock ResNet (BatchNorm2d, shortcuts, ModuleList of Sequentials), tensor crop/flip
    # augmentation, label smoothing, Nesterov SGD + weight decay under OneCycleLR, gradient
    # accumulation, eval accuracy, checkpoint through io.BytesIO with the optimizer's state.
    "resnet-onecycle": Port("resnet_cifar"),
    # CosineAnnealingLR, a checkpoint file, and an EMA of the weights and buffers
    # (AveragedModel with get_ema_multi_avg_fn).
    "resnet-cosine-ema": Port(
        "resnet_cifar", ["--schedule", "cosine", "--checkpoint", "file", "--average", "ema"]
    ),
    # Stochastic weight averaging: AveragedModel, SWALR, update_bn.
    "resnet-swa": Port("resnet_cifar", ["--epochs", "3", "--average", "swa"]),
    # 2-layer LSTM with tied embedding/decoder weights, detached hidden state between batches,
    # Adam(betas=, eps=), clip_grad_norm_, then temperature sampling with torch.multinomial.
    "char_rnn": Port("char_rnn"),
    "char_rnn-untied-dropout": Port(
        "char_rnn",
        ["--no-tie", "--n-layers", "1", "--dropout", "0.2", "--epochs", "1"]
        + ["--temperature", "0.5"],
    ),
    # An adaptive softmax (nn.AdaptiveLogSoftmaxWithLoss) for the loss and log_prob sampling.
    "char_rnn-adaptive": Port("char_rnn", ["--adaptive", "--epochs", "1"]),
    # The pre-0.4 spelling of the hidden state: weight.new(*sizes).zero_().
    "char_rnn-legacy-new": Port("char_rnn", ["--legacy-new", "--epochs", "1"]),
    # Dict-returning Dataset over Subsets, embeddings + BatchNorm1d + LayerNorm/GELU residual
    # blocks, AdamW parameter groups, LambdaLR warmup + cosine, inference_mode, BCEWithLogits,
    # early stopping with copy.deepcopy(model.state_dict()).
    "tabular_mlp": Port("tabular_mlp"),
    # pos_weight, and early stopping that triggers.
    "tabular_mlp-early-stop": Port(
        "tabular_mlp", ["--pos-weight", "2.0", "--lr", "0.02", "--epochs", "6", "--patience", "0"]
    ),
    # Weight-normalized residual blocks (nn.utils.parametrizations.weight_norm).
    "tabular_mlp-weight-norm": Port("tabular_mlp", ["--weight-norm", "--epochs", "2"]),
    # Batch-hard triplet mining over torch.cdist (F.triplet_margin_loss), F.normalize, PReLU,
    # RMSprop(momentum) + StepLR, recall@1 by F.cosine_similarity and topk, einsum.
    "siamese-triplet": Port("siamese"),
    # Contrastive loss on F.pairwise_distance over a pair Dataset and shuffled DataLoader.
    "siamese-contrastive": Port("siamese", ["--loss", "contrastive"]),
    # The pytorch/examples siamese network: a head over both embeddings, Sigmoid + BCELoss.
    "siamese-bce": Port("siamese", ["--loss", "bce"]),
    # nanoGPT's model and training loop: causal SDPA, weight tying, self.apply init, AdamW
    # decay groups with an inspect.signature "fused" check, lr written into param_groups,
    # gradient accumulation through a disabled GradScaler, torch.backends.cuda.matmul switches,
    # a whole checkpoint (optimizer, model args, config) resumed with "_orig_mod." stripped,
    # crop_block_size, and top-k sampling with a masked setitem of -inf.
    "nano_gpt": Port("nano_gpt"),
    # The hand-written attention: a registered tril buffer, masked_fill(-inf), dropout, and
    # LayerNorm without bias.
    "nano_gpt-manual": Port("nano_gpt", ["--manual-attention", "--no-bias", "--dropout", "0.1"]),
    # The DQN tutorial: namedtuple replay memory, max(1).indices, a bool mask built from a
    # tuple of Python bools written through, gather, SmoothL1Loss, AdamW(amsgrad=True),
    # clip_grad_value_, and the soft target update through state dicts.
    "dqn": Port("dqn"),
    # The neural style transfer tutorial: a Sequential rebuilt with add_module while walking
    # children(), sliced after the last loss module, Gram matrices, and LBFGS on the image
    # through a closure that clamps it in place under no_grad.
    "style_transfer": Port("style_transfer"),
    # pytorch/examples' fast_neural_style TransformerNet (ReflectionPad2d, affine
    # InstanceNorm2d, nearest interpolate) with Gram-matrix style loss, and super_resolution
    # (PixelShuffle, orthogonal_ init with calculate_gain, PSNR).
    "image_transform": Port("image_transform"),
    # A small ViT: conv patches, an expanded class token, trunc_normal_ position embeddings,
    # pre-norm GELU TransformerEncoder, mixup, label smoothing, SequentialLR (LinearLR then
    # CosineAnnealingLR), and the ImageNet example's top-k accuracy.
    "vit": Port("vit"),
    # Patches by unfold twice and a Linear: the same numbers as the conv (same init draws).
    "vit-unfold": Port("vit", ["--unfold", "--steps", "3"]),
    # The hook-based nn.utils.weight_norm(dim=None) on the embedding's output layer.
    "siamese-weight-norm": Port("siamese", ["--weight-norm", "--steps", "5"]),
    # A spectrally normalized hidden layer (parametrizations.spectral_norm: power iteration
    # in each training forward, u and v loaded from the initial state dict).
    "siamese-spectral-norm": Port("siamese", ["--spectral-norm", "--loss", "bce", "--steps", "5"]),
}


@pytest.mark.parametrize(("case", "spec"), port_params(CASES))
def test_program_losses_match_pytorch(case: str, spec: str, check_port: Callable) -> None:
    check_port(CASES[case], spec)
