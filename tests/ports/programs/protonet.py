"""Prototypical networks for few-shot classification (Snell et al.; after jakesnell/
prototypical-networks and orobix/Prototypical-Networks-for-Few-shot-Learning-PyTorch's
``prototypical_loss.py``), on synthetic "characters", in float64.

Episodes are sampled the way the batch sampler does it: ``torch.randperm`` over the classes,
then per class ``torch.randperm`` over its examples split into support and query indices
(``label == c``, ``nonzero``). A small conv encoder (Conv2d, BatchNorm2d, ReLU, MaxPool2d,
``x.view(x.size(0), -1)``); prototypes are the support embeddings' means (``stack`` of
``mean(0)``); squared Euclidean distances by broadcasting (``pow(2).sum(2)``), ``log_softmax``
of the negated distances, the loss by ``gather`` of each query's true class,
accuracy by ``max(2)`` and ``eq``. Adam and StepLR. Returns the losses, accuracies and the
distances of the last episode.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv_block(in_channels, out_channels):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(),
        nn.MaxPool2d(2),
    )


class ProtoNet(nn.Module):
    def __init__(self, x_dim=1, hid_dim=4, z_dim=4):
        super().__init__()
        self.encoder = nn.Sequential(conv_block(x_dim, hid_dim), conv_block(hid_dim, z_dim))

    def forward(self, x):
        x = self.encoder(x)
        return x.view(x.size(0), -1)


def euclidean_dist(x, y):
    n, m, d = x.size(0), y.size(0), x.size(1)
    if d != y.size(1):
        raise Exception
    x = x.unsqueeze(1).expand(n, m, d)
    y = y.unsqueeze(0).expand(n, m, d)
    return torch.pow(x - y, 2).sum(2)


def prototypical_loss(embeddings, labels, n_support):
    classes = torch.unique(labels)
    n_classes = len(classes)
    n_query = labels.eq(classes[0].item()).sum().item() - n_support
    support_idxs = [labels.eq(c).nonzero()[:n_support].squeeze(1) for c in classes]
    prototypes = torch.stack([embeddings[idx].mean(0) for idx in support_idxs])
    query_idxs = torch.stack([labels.eq(c).nonzero()[n_support:] for c in classes]).view(-1)
    queries = embeddings[query_idxs]
    dists = euclidean_dist(queries, prototypes)
    log_p_y = F.log_softmax(-dists, dim=1).view(n_classes, n_query, -1)
    target_inds = torch.arange(0, n_classes).view(n_classes, 1, 1).expand(n_classes, n_query, 1)
    loss_val = -log_p_y.gather(2, target_inds).squeeze().view(-1).mean()
    _, y_hat = log_p_y.max(2)
    acc_val = y_hat.eq(target_inds.squeeze(2)).double().mean()
    return loss_val, acc_val, dists


def make_characters(classes=8, per_class=6, size=8):
    templates = (torch.rand(classes, 1, size, size) > 0.6).double()
    images = templates.repeat_interleave(per_class, dim=0)
    images = images + 0.3 * torch.randn(images.shape)
    labels = torch.arange(classes).repeat_interleave(per_class)
    return images, labels


def sample_episode(labels, n_way, n_shot, n_query, n_classes):
    picked = torch.randperm(n_classes)[:n_way]
    batch = []
    for c in picked:
        members = (labels == c).nonzero().squeeze(1)
        batch.append(members[torch.randperm(members.numel())[: n_shot + n_query]])
    return torch.cat(batch)


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=3)
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
    images, labels = make_characters()
    model = ProtoNet()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, gamma=0.5, step_size=2)
    out = []
    for _ in range(args.episodes):
        model.train()
        idx = sample_episode(labels, n_way=3, n_shot=2, n_query=2, n_classes=8)
        loss, acc, _ = prototypical_loss(model(images[idx]), labels[idx], n_support=2)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        out += [loss.item(), acc.item(), scheduler.get_last_lr()[0]]
    model.eval()
    with torch.no_grad():
        idx = sample_episode(labels, n_way=4, n_shot=3, n_query=3, n_classes=8)
        loss, acc, dists = prototypical_loss(model(images[idx]), labels[idx], n_support=3)
    out += [loss.item(), acc.item()] + dists.flatten()[:8].tolist()
    return out
