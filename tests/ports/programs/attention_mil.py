"""Attention-based multiple-instance learning (Ilse et al.; after AMLab-Amsterdam/AttentionDeepMIL's
``model.py`` and ``main.py``), on bags of varying size whose label says whether any instance
is a "positive" pattern, in float64.

A feature extractor over the ``squeeze(0)``-ed bag; the gated attention ``attention_weights(
attention_V(H) * attention_U(H))`` (``Tanh`` and ``Sigmoid`` branches), ``torch.transpose(A,
1, 0)``, ``F.softmax(A, dim=1)`` and the bag embedding ``torch.mm(A, H)``; the classifier's
probability clamped and its Bernoulli negative log-likelihood written out, the error from
``torch.ge(Y_prob, 0.5).float()`` and ``Y_hat.eq(Y).cpu().float().mean().item()``. With
``--padded``: bags padded by ``pad_sequence`` and the attention masked by ``masked_fill(~mask,
float("-inf"))``. Adam with ``betas`` and ``weight_decay=10e-5``. Returns every loss, error,
gradient, parameter and attention weight.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence


class GatedAttention(nn.Module):
    def __init__(self, in_dim=6, M=12, L=8, K=1):
        super().__init__()
        self.feature_extractor = nn.Sequential(nn.Linear(in_dim, M), nn.ReLU())
        self.attention_V = nn.Sequential(nn.Linear(M, L), nn.Tanh())
        self.attention_U = nn.Sequential(nn.Linear(M, L), nn.Sigmoid())
        self.attention_weights = nn.Linear(L, K)
        self.classifier = nn.Sequential(nn.Linear(M * K, 1), nn.Sigmoid())

    def forward(self, x):
        x = x.squeeze(0)
        H = self.feature_extractor(x)  # N x M
        A = self.attention_weights(self.attention_V(H) * self.attention_U(H))  # N x K
        A = torch.transpose(A, 1, 0)  # K x N
        A = F.softmax(A, dim=1)
        M = torch.mm(A, H)  # K x M
        Y_prob = self.classifier(M)
        Y_hat = torch.ge(Y_prob, 0.5).float()
        return Y_prob, Y_hat, A

    def forward_padded(self, x, mask):
        H = self.feature_extractor(x)  # B x N x M
        A = self.attention_weights(self.attention_V(H) * self.attention_U(H)).transpose(1, 2)
        A = F.softmax(A.masked_fill(~mask.unsqueeze(1), float("-inf")), dim=2)  # B x K x N
        M = torch.bmm(A, H).flatten(1)
        return self.classifier(M), A

    def calculate_objective(self, X, Y):
        Y = Y.float()
        Y_prob, _, A = self.forward(X)
        Y_prob = torch.clamp(Y_prob, min=1e-5, max=1.0 - 1e-5)
        neg_log_likelihood = -1.0 * (Y * torch.log(Y_prob) + (1.0 - Y) * torch.log(1.0 - Y_prob))
        return neg_log_likelihood, A

    def calculate_classification_error(self, X, Y):
        Y = Y.float()
        _, Y_hat, _ = self.forward(X)
        return 1.0 - Y_hat.eq(Y).cpu().float().mean().item()


def make_bags(n_bags, pattern):
    bags, labels = [], []
    for _ in range(n_bags):
        size = int(torch.randint(3, 7, (1,)).item())
        bag = torch.randn(size, 6) * 0.5
        positive = bool(torch.rand(()) < 0.5)
        if positive:
            bag[int(torch.randint(0, size, (1,)).item())] += pattern
        bags.append(bag)
        labels.append(torch.tensor(float(positive)))
    return bags, labels


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:5].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:5].tolist() + [p.grad.norm().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--padded", action="store_true")
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return train(args)
    finally:
        torch.set_default_dtype(previous)


def train(args):
    torch.manual_seed(0)
    model = GatedAttention()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(
        model.parameters(), lr=5e-3, betas=(0.9, 0.999), weight_decay=10e-5
    )
    bags, labels = make_bags(6, pattern=torch.linspace(1.0, 2.0, 6))
    out = []
    for _ in range(args.epochs):
        if args.padded:
            x = pad_sequence(bags, batch_first=True)
            lengths = torch.tensor([len(b) for b in bags])
            mask = torch.arange(x.size(1))[None, :] < lengths[:, None]
            y_prob, A = model.forward_padded(x, mask)
            loss = F.binary_cross_entropy(y_prob.squeeze(1), torch.stack(labels))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            out += [loss.item()] + A[:, 0].flatten().tolist()
        else:
            train_loss, train_error = 0.0, 0.0
            for data, label in zip(bags, labels):
                data = data.unsqueeze(0)
                optimizer.zero_grad()
                loss, attention = model.calculate_objective(data, label)
                train_loss += loss.data[0].item()
                train_error += model.calculate_classification_error(data, label)
                loss.backward()
                optimizer.step()
            out += [train_loss / len(bags), train_error / len(bags)] + attention.flatten().tolist()
        out += values(model)
    return out


if __name__ == "__main__":
    main()
