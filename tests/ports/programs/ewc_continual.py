"""Continual learning with elastic weight consolidation (Kirkpatrick et al.; after
moskomule/ewc.pytorch's ``EWC`` class and the permuted-MNIST scripts), on two synthetic tasks
where the second permutes the first's input features, in float64.

After task A: ``copy.deepcopy`` of the dict ``{n: p for n, p in model.named_parameters() if
p.requires_grad}`` keeps the parameters' ``.data``; the diagonal Fisher information from
per-sample log-likelihood gradients (``model.zero_grad()``, the model's own predictions
``output.max(1)[1]`` as labels, ``p.grad.data ** 2`` accumulated into dicts of
``p.data.zero_()``-ed deep copies), and during task B the penalty
``sum(F[n] * (p - p*)^2)``. A plain fine-tuned copy (``load_state_dict(copy.deepcopy(
state_dict()))``) is trained beside it to show the forgetting EWC prevents. SGD; Dropout in
train mode. Returns the losses, Fisher statistics and both tasks' accuracies.
"""

from __future__ import annotations

import argparse
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    def __init__(self, d_in=10, hidden=16, classes=3):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, classes)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x = self.drop(F.relu(self.fc1(x)))
        return self.fc3(F.relu(self.fc2(x)))


class EWC:
    def __init__(self, model, dataset):
        self.model = model
        self.dataset = dataset
        self.params = {n: p for n, p in self.model.named_parameters() if p.requires_grad}
        self._means = {}
        self._precision_matrices = self._diag_fisher()
        for n, p in copy.deepcopy(self.params).items():
            self._means[n] = p.data

    def _diag_fisher(self):
        precision_matrices = {}
        for n, p in copy.deepcopy(self.params).items():
            p.data.zero_()
            precision_matrices[n] = p.data
        self.model.eval()
        for x in self.dataset:
            self.model.zero_grad()
            output = self.model(x.unsqueeze(0)).view(1, -1)
            label = output.max(1)[1].view(-1)
            loss = F.nll_loss(F.log_softmax(output, dim=1), label)
            loss.backward()
            for n, p in self.model.named_parameters():
                precision_matrices[n].data += p.grad.data**2 / len(self.dataset)
        return {n: p for n, p in precision_matrices.items()}

    def penalty(self, model):
        loss = 0
        for n, p in model.named_parameters():
            _loss = self._precision_matrices[n] * (p - self._means[n]) ** 2
            loss += _loss.sum()
        return loss


def task(prototypes, permutation, count=48):
    labels = torch.randint(0, 3, (count,))
    x = prototypes[labels] + 0.5 * torch.randn(count, prototypes.size(1))
    return x[:, permutation], labels


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        return (model(x).argmax(1) == y).double().mean().item()


def fit(model, optimizer, x, y, steps, ewc=None, importance=0.0):
    losses = []
    for _ in range(steps):
        model.train()
        for xb, yb in zip(x.split(16), y.split(16)):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            if ewc is not None:
                loss = loss + importance * ewc.penalty(model)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    return losses


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=2)
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
    model = MLP()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    prototypes = 2 * torch.randn(3, 10)
    xa, ya = task(prototypes, torch.arange(10))
    xb, yb = task(prototypes, torch.randperm(10))
    out = fit(model, torch.optim.SGD(model.parameters(), lr=0.1), xa, ya, args.epochs)
    out.append(accuracy(model, xa, ya))
    ewc = EWC(model, xa[:12])
    fisher = ewc._precision_matrices
    out += [fisher["fc1.weight"].sum().item(), fisher["fc3.bias"].max().item()]
    plain = MLP()
    plain.load_state_dict(copy.deepcopy(model.state_dict()))
    for net, guard in ((plain, None), (model, ewc)):
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        out += fit(net, optimizer, xb, yb, args.epochs, guard, importance=50.0)
        out += [accuracy(net, xa, ya), accuracy(net, xb, yb)]
    out += [ewc.penalty(model).item(), ewc.penalty(plain).item()]
    return out
