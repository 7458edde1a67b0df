"""The model zoo against PyTorch twins with the same weights, in float64, and by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver.models import GCN, MLP, VAE, ResNet, TransformerLM, elbo_loss, lm_loss

torch = pytest.importorskip("torch")
tnn, tF = torch.nn, torch.nn.functional


def _copy_weights(mine: tw.nn.Module, theirs: torch.nn.Module) -> None:
    """Load ``mine``'s state dict into ``theirs`` (same names), as float64."""
    state = {k: torch.from_numpy(np.asarray(v.numpy())) for k, v in mine.state_dict().items()}
    theirs.load_state_dict(state)


def _close(mine: tw.Tensor, theirs: torch.Tensor) -> None:
    np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), rtol=1e-9, atol=1e-9)


def test_mlp_is_linear_relu_linear(backend: str) -> None:
    model = MLP(3, [5, 4], 2).double()
    assert [type(m).__name__ for m in model] == ["Linear", "ReLU", "Linear", "ReLU", "Linear"]
    twin = tnn.Sequential(
        tnn.Linear(3, 5), tnn.ReLU(), tnn.Linear(5, 4), tnn.ReLU(), tnn.Linear(4, 2)
    ).double()
    _copy_weights(model, twin)
    x = np.random.default_rng(0).standard_normal((7, 3))
    _close(model(tw.tensor(x)), twin(torch.from_numpy(x)))


class _TorchBlock(tnn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = tnn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(cout)
        self.conv2 = tnn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(cout)
        self.shortcut = tnn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = tnn.Sequential(
                tnn.Conv2d(cin, cout, 1, stride, bias=False), tnn.BatchNorm2d(cout)
            )

    def forward(self, x):
        out = self.bn2(self.conv2(tF.relu(self.bn1(self.conv1(x)))))
        return tF.relu(out + self.shortcut(x))


class _TorchResNet(tnn.Module):
    def __init__(self) -> None:  # ResNet(1, 3, widths=(4, 8), blocks=2)
        super().__init__()
        self.stem = tnn.Sequential(
            tnn.Conv2d(1, 4, 3, 1, 1, bias=False), tnn.BatchNorm2d(4), tnn.ReLU()
        )
        self.stages = tnn.Sequential(
            _TorchBlock(4, 4, 1), _TorchBlock(4, 4, 1), _TorchBlock(4, 8, 2), _TorchBlock(8, 8, 1)
        )
        self.pool = tnn.AdaptiveAvgPool2d(1)
        self.head = tnn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.pool(self.stages(self.stem(x))).flatten(1))


def test_resnet_matches_its_pytorch_twin(backend: str) -> None:
    model = ResNet(1, 3, widths=(4, 8), blocks=2).double()
    twin = _TorchResNet().double()
    _copy_weights(model, twin)
    x = np.random.default_rng(0).standard_normal((4, 1, 8, 8))
    _close(model(tw.tensor(x)), twin(torch.from_numpy(x)))  # training mode: batch statistics
    model.eval()
    twin.eval()
    _close(model(tw.tensor(x)), twin(torch.from_numpy(x)))  # the running statistics moved alike
    with pytest.raises(ValueError, match=r"ResNet: expected images of shape \(N, C, H, W\)"):
        model(tw.zeros(4, 64, dtype=tw.float64))


class _TorchLM(tnn.Module):
    """TransformerLM written out in PyTorch, with the same parameter names."""

    def __init__(self, vocab: int, context: int, d: int, heads: int, layers: int) -> None:
        super().__init__()
        self.heads = heads
        self.tok_emb, self.pos_emb = tnn.Embedding(vocab, d), tnn.Embedding(context, d)
        self.blocks = tnn.ModuleList()
        for _ in range(layers):
            block = tnn.Module()
            block.ln1, block.ln2 = tnn.LayerNorm(d), tnn.LayerNorm(d)
            block.attn = tnn.Module()
            block.attn.qkv, block.attn.proj = tnn.Linear(d, 3 * d), tnn.Linear(d, d)
            block.mlp = tnn.Sequential(tnn.Linear(d, 4 * d), tnn.GELU(), tnn.Linear(4 * d, d))
            self.blocks.append(block)
        self.ln_f = tnn.LayerNorm(d)
        self.head = tnn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        n, t = idx.shape
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(t))
        for block in self.blocks:
            q, k, v = block.attn.qkv(block.ln1(x)).split(x.shape[-1], dim=-1)
            q, k, v = (z.reshape(n, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
            a = tF.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + block.attn.proj(a.transpose(1, 2).reshape(n, t, -1))
            x = x + block.mlp(block.ln2(x))
        return self.head(self.ln_f(x))


def test_transformer_lm_matches_its_pytorch_twin(backend: str) -> None:
    model = TransformerLM(11, 8, d_model=12, n_heads=3, n_layers=2).double()
    assert model.head.weight is model.tok_emb.weight  # tied: one parameter
    assert len(list(model.parameters())) == len(dict(model.named_parameters()))
    twin = _TorchLM(11, 8, 12, 3, 2).double()
    _copy_weights(model, twin)
    idx = np.random.default_rng(0).integers(0, 11, (3, 8))
    logits = model(tw.tensor(idx))
    expected = twin(torch.from_numpy(idx))
    _close(logits, expected)
    targets = np.roll(idx, -1, axis=1)
    _close(
        lm_loss(logits, tw.tensor(targets)),
        tF.cross_entropy(expected.reshape(-1, 11), torch.from_numpy(targets).reshape(-1)),
    )


def test_transformer_lm_is_causal_and_checks_its_input(backend: str) -> None:
    model = TransformerLM(7, 6, d_model=8, n_heads=2, n_layers=1).double()
    a = tw.tensor([[1, 2, 3, 4, 5, 6]])
    b = tw.tensor([[1, 2, 3, 0, 0, 0]])  # differs from position 3 on
    np.testing.assert_allclose(model(a)[:, :3].detach().numpy(), model(b)[:, :3].detach().numpy())
    with pytest.raises(ValueError, match="exceeds context_length 6"):
        model(tw.zeros(1, 7, dtype=tw.int64))
    with pytest.raises(ValueError, match="integer token ids"):
        model(tw.zeros(1, 3))


def test_generate_greedy_sampled_and_repeatable(backend: str) -> None:
    model = TransformerLM(9, 4, d_model=8, n_heads=2, n_layers=1)
    prompt = tw.tensor([[1, 2], [3, 4]])
    greedy = model.generate(prompt, 5, temperature=0)  # runs past the context of 4
    assert tuple(greedy.shape) == (2, 7) and greedy[:, :2].tolist() == prompt.tolist()
    with tw.no_grad():
        first = model(prompt)[:, -1].argmax(-1)
    assert greedy[:, 2].tolist() == first.tolist()
    assert model.generate(prompt, 5, top_k=1).tolist() == greedy.tolist()  # k=1 is greedy
    tw.manual_seed(5)
    sampled = model.generate(prompt, 5, temperature=1.5, top_k=4)
    tw.manual_seed(5)
    assert model.generate(prompt, 5, temperature=1.5, top_k=4).tolist() == sampled.tolist()
    assert 0 <= min(sampled.flatten().tolist()) and max(sampled.flatten().tolist()) < 9


def test_sampling_follows_the_distribution() -> None:
    from tensorweaver.models.transformer_lm import _next_token

    probs = np.array([0.1, 0.6, 0.0, 0.3])
    logits = tw.tensor(np.log(np.maximum(probs, 1e-30))).reshape(1, 4).expand(4000, 4)
    tw.manual_seed(0)
    counts = np.bincount(_next_token(logits, 1.0, None).flatten().numpy(), minlength=4) / 4000
    np.testing.assert_allclose(counts, probs, atol=0.03)
    top2 = np.bincount(_next_token(logits, 1.0, 2).flatten().numpy(), minlength=4) / 4000
    np.testing.assert_allclose(top2, [0, 2 / 3, 0, 1 / 3], atol=0.03)


def test_elbo_loss_matches_the_formula(backend: str) -> None:
    rng = np.random.default_rng(0)
    logits, mu, logvar = (rng.standard_normal((5, d)) for d in (6, 2, 2))
    target = rng.random((5, 6))
    loss = elbo_loss(tuple(tw.tensor(a) for a in (logits, mu, logvar)), tw.tensor(target), 0.5)
    bce = np.maximum(logits, 0) - logits * target + np.log1p(np.exp(-np.abs(logits)))
    kl = -0.5 * (1 + logvar - mu**2 - np.exp(logvar))
    assert loss.item() == pytest.approx((bce.sum() + 0.5 * kl.sum()) / 5, rel=1e-12)
    with pytest.raises(ValueError, match=r"elbo_loss: target \(5, 3\)"):
        elbo_loss(tuple(tw.tensor(a) for a in (logits, mu, logvar)), tw.zeros(5, 3))


def test_vae_reparameterises_differentiably(backend: str) -> None:
    model = VAE(6, 8, 2).double()
    x = tw.tensor(np.random.default_rng(0).random((4, 6)))
    tw.manual_seed(1)
    logits, mu, logvar = model(x)
    tw.manual_seed(1)
    eps = tw.randn_like(mu)
    # The code is mu + sigma * eps, so decoding it by hand gives the same logits.
    np.testing.assert_allclose(
        logits.detach().numpy(),
        model.decode(mu + (0.5 * logvar).exp() * eps).detach().numpy(),
        rtol=1e-12,
    )
    elbo_loss((logits, mu, logvar), x).backward()
    assert all(p.grad is not None for p in model.parameters())
    samples = model.sample(3)
    assert tuple(samples.shape) == (3, 6) and 0 <= samples.amin().item() <= 1


def test_gcn_is_two_normalised_propagations(backend: str) -> None:
    rng = np.random.default_rng(0)
    n = 6
    edges = np.array([[0, 1, 1, 2, 3, 4, 4, 5], [1, 0, 2, 1, 4, 3, 5, 4]])
    model = GCN(3, 4, 2, edge_index=tw.tensor(edges)).double().eval()
    x = rng.standard_normal((n, 3))
    adjacency = np.eye(n)
    adjacency[edges[1], edges[0]] += 1
    scale = 1 / np.sqrt(adjacency.sum(1))
    propagate = scale[:, None] * adjacency * scale[None, :]
    w1, b1 = model.conv1.lin.weight.detach().numpy(), model.conv1.bias.detach().numpy()
    w2, b2 = model.conv2.lin.weight.detach().numpy(), model.conv2.bias.detach().numpy()
    hidden = np.maximum(propagate @ x @ w1.T + b1, 0)
    expected = propagate @ hidden @ w2.T + b2
    np.testing.assert_allclose(model(tw.tensor(x)).detach().numpy(), expected, rtol=1e-10)
    assert "edge_index" not in model.state_dict()
    with pytest.raises(ValueError, match="GCN: no graph"):
        GCN(3, 4, 2)(tw.tensor(x))


def test_the_vocabulary_sized_loss_starts_near_uniform() -> None:
    model = TransformerLM(13, 4)
    idx, targets = (tw.tensor(a) for a in np.random.default_rng(0).integers(0, 13, (2, 64, 4)))
    assert lm_loss(model(idx), targets).item() == pytest.approx(math.log(13), rel=0.05)
