"""Every layer type, and the ways models compose them, on the device against the NumPy
float64 reference: outputs, the gradients of inputs and parameters, buffers a forward
updates, and finite differences. Dropout is off (p=0), so each run is deterministic; the
VAE's noise is a fixed input."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import models, nn
from tensorweaver.check import trial
from tensorweaver.check.case import Case, Measure
from tensorweaver.check.context import Context
from tensorweaver.check.trial import Maker

Forward = Callable[[], Any]


def _linear(m: Maker) -> Forward:
    layer = m.module(nn.Linear(4, 3))
    x = m.input("x", 2, 5, 4)
    return lambda: layer(x)


def _conv(m: Maker) -> Forward:
    conv = m.module(nn.Conv2d(3, 4, 3, stride=2, padding=1), "conv.")
    conv1d = m.module(nn.Conv1d(3, 2, 2, dilation=2), "conv1d.")
    transposed = m.module(nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1), "transposed.")
    x = m.input("x", 2, 3, 6, 5)
    return lambda: (conv(x), conv1d(x[:, :, 0]), transposed(x))


def _resampling(m: Maker) -> Forward:
    """A 3-D encoder-decoder step, upsampling, shuffles and sliding blocks; the lazy layer
    takes its shape on the first forward, before its parameters are set."""
    lazy = nn.LazyConv1d(2, 2)
    lazy(tw.zeros(1, 4, 5))
    lazy = m.module(lazy, "lazy.")
    down = m.module(nn.Conv3d(2, 3, 2, padding=1, padding_mode="reflect"), "down.")
    up = m.module(nn.ConvTranspose3d(3, 2, 2, stride=2, padding=1), "up.")
    resample = (nn.Upsample(scale_factor=1.5, mode="bilinear"), nn.PixelShuffle(2))
    blocks = (nn.Unfold(2, padding=1), nn.Fold((4, 5), 2, padding=1))
    x = m.input("x", 2, 2, 3, 4, 3)
    image = m.input("image", 2, 4, 4, 5)
    return lambda: (
        up(down(x)),
        resample[0](resample[1](image)),
        blocks[1](blocks[0](image)),
        lazy(image[:, :, 0]),
    )


def _pooling(m: Maker) -> Forward:
    x = m.input("x", 2, 3, 7, 6)
    pools = (nn.MaxPool2d(3, stride=2, padding=1), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d((2, 3)))
    return lambda: tuple(pool(x) for pool in pools)


def _batch_norm(m: Maker) -> Forward:
    norm = m.module(nn.BatchNorm2d(3))
    x = m.input("x", 4, 3, 2, 2, low=-2, high=3)

    def forward() -> Any:
        # The statistics a forward updates are outputs too; each forward starts afresh, so
        # that the finite differences' extra forwards see the same state.
        norm.reset_running_stats()
        return norm(x), norm.running_mean * 1, norm.running_var * 1

    return forward


def _norms(m: Maker) -> Forward:
    layer = m.module(nn.LayerNorm((3, 4)), "layer.")
    rms = m.module(nn.RMSNorm(4), "rms.")
    group = m.module(nn.GroupNorm(2, 4), "group.")
    x = m.input("x", 2, 3, 4, low=-2, high=3)
    return lambda: (layer(x), rms(x), group(x.transpose(1, 2)))


def _lstm(m: Maker) -> Forward:
    lstm = m.module(nn.LSTM(3, 4, num_layers=2, batch_first=True))
    x = m.input("x", 2, 5, 3)
    h0 = m.input("h0", 2, 2, 4)
    c0 = m.input("c0", 2, 2, 4)

    def forward() -> Any:
        out, (h, c) = lstm(x, (h0, c0))
        return out, h, c

    return forward


def _gru(m: Maker) -> Forward:
    gru = m.module(nn.GRU(3, 4, bidirectional=True))
    x = m.input("x", 5, 2, 3)

    def forward() -> Any:
        out, h = gru(x)
        return out, h

    return forward


def _attention(m: Maker) -> Forward:
    attention = m.module(nn.MultiheadAttention(8, 2, batch_first=True))
    q = m.input("q", 2, 3, 8)
    kv = m.input("kv", 2, 5, 8)
    padding = tw.tensor([[False, False, False, False, True], [False, False, True, True, True]])

    def forward() -> Any:
        out, weights = attention(q, kv, kv, key_padding_mask=padding)
        return out, weights

    return forward


def _transformer(m: Maker) -> Forward:
    encoder = m.module(
        nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True),
        "encoder.",
    )
    decoder = m.module(
        nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0, norm_first=True),
        "decoder.",
    )
    src = m.input("src", 2, 4, 8)
    tgt = m.input("tgt", 3, 2, 8)
    causal = nn.Transformer.generate_square_subsequent_mask(3)

    def forward() -> Any:
        memory = encoder(src)
        return memory, decoder(tgt, memory.transpose(0, 1), tgt_mask=causal, tgt_is_causal=True)

    return forward


def _residual(m: Maker) -> Forward:
    block = m.module(models.BasicBlock(3, 4, stride=2))
    x = m.input("x", 2, 3, 6, 6)
    return lambda: block(x)


class _Dag(nn.Module):
    """Two branches from one input, one of them used twice, merged: a DAG, not a chain."""

    def __init__(self) -> None:
        super().__init__()
        self.left = nn.Linear(4, 3)
        self.right = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3))
        self.merge = nn.Linear(6, 2)

    def forward(self, x: tw.Tensor) -> tw.Tensor:
        a, b = self.left(x), self.right(x)
        return self.merge(tw.cat([a * b, F.gelu(a + b)], dim=-1))


def _dag(m: Maker) -> Forward:
    model = m.module(_Dag())
    x = m.input("x", 3, 4)
    return lambda: model(x)


def _shared_weights(m: Maker) -> Forward:
    layer = m.module(nn.Linear(4, 4))
    embedding = m.module(nn.Embedding(6, 4), "embedding.")
    tokens = tw.tensor([[1, 5, 1], [0, 2, 2]])
    # one Linear applied three times, and an output projection tied to the embedding
    return lambda: layer(layer(layer(embedding(tokens)).tanh())) @ embedding.weight.T


def _losses(m: Maker) -> Forward:
    logits = m.input("logits", 4, 5, low=-3, high=3)
    probs = m.input("probs", 4, 5, low=0.1, high=0.9)
    target = m.integers("target", (4,), 5)
    soft = m.input("soft", 4, 5, low=0.0, high=1.0, grad=False)
    return lambda: (
        F.cross_entropy(logits, target, label_smoothing=0.1),
        F.nll_loss(F.log_softmax(logits, dim=1), target, reduction="sum"),
        F.binary_cross_entropy(probs, soft),
        F.binary_cross_entropy_with_logits(logits, soft),
        F.mse_loss(logits, soft) + F.smooth_l1_loss(probs, soft) + F.huber_loss(logits, soft),
    )


#: (source, target) edges of a 5-node graph; the edge 1 -> 0 appears twice.
EDGES = [[0, 1, 2, 3, 4, 0, 1, 1], [1, 2, 3, 4, 0, 2, 0, 0]]


def _graph(make: Callable[[], nn.Module]) -> Callable[[Maker], Forward]:
    def build(m: Maker) -> Forward:
        layer = m.module(make())
        x = m.input("x", 5, 3)
        edges = tw.tensor(EDGES)
        return lambda: layer(x, edges)

    return build


def _gin() -> nn.Module:
    mlp = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    return nn.GINConv(mlp, train_eps=True)


def _vae(m: Maker) -> Forward:
    vae = m.module(models.VAE(6, hidden_features=5, latent_features=2))
    x = m.input("x", 3, 6, low=0.0, high=1.0, grad=False)
    noise = m.input("noise", 3, 2, grad=False)  # the reparameterization's sample, fixed

    def forward() -> Any:
        mu, logvar = vae.encode(x)
        logits = vae.decode(mu + (0.5 * logvar).exp() * noise)
        return models.elbo_loss((logits, mu, logvar), x), logits

    return forward


CASES: dict[str, Callable[[Maker], Forward]] = {
    "linear": _linear,
    "convolution": _conv,
    "resampling": _resampling,
    "pooling": _pooling,
    "batch-norm": _batch_norm,
    "layer-rms-group-norm": _norms,
    "lstm": _lstm,
    "gru": _gru,
    "attention": _attention,
    "transformer": _transformer,
    "residual": _residual,
    "dag": _dag,
    "shared-weights": _shared_weights,
    "losses": _losses,
    "gcn": _graph(lambda: nn.GCNConv(3, 4)),
    "sage": _graph(lambda: nn.SAGEConv(3, 4)),
    "gat": _graph(lambda: nn.GATConv(3, 2, heads=2)),
    "gin": _graph(_gin),
    "vae": _vae,
}


def _case(key: str) -> Callable[[Context], Iterator[Measure]]:
    return lambda ctx: trial.compare(ctx, f"layer/{key}", CASES[key])


def cases() -> list[Case]:
    return [Case(f"layer/{key}", _case(key)) for key in CASES]
