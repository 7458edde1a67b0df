"""tw.fit trains every model of the zoo, on NumPy and on PyTorch's CPU."""

from __future__ import annotations

import math

import numpy as np
import tensorweaver as tw
from tensorweaver.models import GCN, MLP, VAE, ResNet, TransformerLM, elbo_loss, lm_loss
from tensorweaver.training import evaluate, fit
from training_data import blobs


def test_mlp_learns_blobs(backend: str) -> None:
    x, y = blobs()
    history = fit(MLP(4, [16], 3), (x, y), epochs=15, lr=1e-2, seed=0, progress=False)
    assert history.device.startswith(backend)
    assert history.train_loss[-1] < 0.3 * history.train_loss[0]
    assert history.metrics["accuracy"][-1] >= 0.95


def test_resnet_learns_where_the_bright_square_is(backend: str) -> None:
    rng = np.random.default_rng(0)
    n = 64
    y = np.arange(n) % 2
    images = 0.3 * rng.standard_normal((n, 1, 8, 8))
    for i, label in enumerate(y):
        row, col = rng.integers(0, 6), rng.integers(0, 2) + 4 * label
        images[i, 0, row : row + 2, col : col + 2] += 2.0  # left half: 0, right half: 1
    model = ResNet(1, 2, widths=(4, 8))
    history = fit(
        model, (images.astype(np.float32), y), epochs=8, lr=1e-2, batch_size=16, progress=False
    )
    assert history.train_loss[-1] < 0.5 * history.train_loss[0]
    assert evaluate(model, (images, y))["accuracy"] >= 0.9


def test_transformer_lm_learns_a_cyclic_sequence(backend: str) -> None:
    vocab, context = 5, 8
    stream = np.arange(200) % vocab
    starts = np.arange(0, 190, 2)
    inputs = stream[starts[:, None] + np.arange(context)]
    model = TransformerLM(vocab, context, d_model=16, n_heads=2, n_layers=1)
    history = fit(
        model,
        (inputs, (inputs + 1) % vocab),
        loss=lm_loss,
        metrics=(),
        epochs=15,
        lr=1e-2,
        progress=False,
    )
    assert history.train_loss[0] > 0.5 * math.log(vocab)
    assert history.train_loss[-1] < 0.1
    greedy = model.generate(tw.tensor([[2]]), 6, temperature=0)
    assert greedy[0].tolist() == [2, 3, 4, 0, 1, 2, 3]


def test_vae_lowers_the_negative_elbo(backend: str) -> None:
    rng = np.random.default_rng(0)
    prototypes = rng.random((4, 16)) > 0.5
    x = prototypes[np.arange(128) % 4].astype(np.float32)
    history = fit(
        VAE(16, 32, 2), (x, x), loss=elbo_loss, metrics=(), epochs=10, lr=1e-2, progress=False
    )
    assert history.train_loss[-1] < 0.5 * history.train_loss[0]


def test_gcn_separates_two_communities(backend: str) -> None:
    rng = np.random.default_rng(0)
    n = 60
    labels = np.arange(n) % 2
    linked = np.triu(rng.random((n, n)) < np.where(labels[:, None] == labels, 0.3, 0.02), 1)
    edges = np.stack(np.nonzero(linked | linked.T))
    x = (0.2 * (2 * labels[:, None] - 1) + rng.standard_normal((n, 4))).astype(np.float32)
    train = np.where(np.arange(n) < 20, labels, -100)  # 20 labelled nodes
    test = np.where(np.arange(n) >= 20, labels, -100)
    model = GCN(4, 8, 2, edge_index=tw.tensor(edges), dropout=0.0)
    history = fit(
        model,
        (x, train),
        val=(x, test),
        epochs=40,
        batch_size=n,
        shuffle=False,
        lr=2e-2,
        progress=False,
    )
    assert history.train_loss[-1] < 0.5 * history.train_loss[0]
    assert history.metrics["val_accuracy"][-1] >= 0.9
