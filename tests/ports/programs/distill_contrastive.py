"""Knowledge distillation and a SimCLR-style contrastive loss, in the style of PyTorch's
"Knowledge Distillation" tutorial and the common SimCLR implementations.

``--task distill``: a larger teacher MLP is trained with cross-entropy, frozen
(``teacher.eval()``, ``torch.no_grad()``), and a small student learns from
``F.kl_div(F.log_softmax(student / T), F.softmax(teacher / T), reduction="batchmean") * T**2``
(or the ``log_target=True`` form over two log-softmaxes, or ``nn.KLDivLoss``) mixed with the
label loss. ``--task simclr``: two noisy augmented views of a batch, an encoder with a
projection head, ``F.normalize``, the cosine similarity matrix, the diagonal masked with
``masked_fill(mask, float("-inf"))`` (or ``-torch.inf``), labels built with ``torch.arange``
and ``torch.cat``, and ``F.cross_entropy`` at a temperature (the NT-Xent loss); then a linear
probe on the frozen features. The data are synthetic clusters.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp(sizes, dropout=0.0):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers += [nn.ReLU(), nn.Dropout(dropout)] if dropout else [nn.ReLU()]
    return nn.Sequential(*layers)


def clusters(rng, count, dim, classes):
    centers = rng.normal(0.0, 2.0, size=(classes, dim))
    labels = rng.integers(0, classes, size=count)
    x = centers[labels] + rng.normal(0.0, 1.0, size=(count, dim))
    return torch.tensor(x, dtype=torch.float32), torch.from_numpy(labels)


def distillation_loss(student_logits, teacher_logits, T, style):
    if style == "kl_div":
        soft_targets = F.softmax(teacher_logits / T, dim=-1)
        soft_prob = F.log_softmax(student_logits / T, dim=-1)
        return F.kl_div(soft_prob, soft_targets, reduction="batchmean") * (T**2)
    if style == "log_target":
        return F.kl_div(
            F.log_softmax(student_logits / T, dim=-1),
            F.log_softmax(teacher_logits / T, dim=-1),
            reduction="batchmean",
            log_target=True,
        ) * (T**2)
    # The tutorial's other spelling: soft targets times the student's log-probabilities
    criterion = nn.KLDivLoss(reduction="batchmean")
    return (
        criterion(F.log_softmax(student_logits / T, dim=1), F.softmax(teacher_logits / T, dim=1))
        * T
        * T
    )


def run_distill(args, x, y, teacher, student, losses):
    opt_t = torch.optim.Adam(teacher.parameters(), lr=args.lr)
    teacher.train()
    for step in range(args.steps):
        xb, yb = x[step :: args.steps], y[step :: args.steps]
        opt_t.zero_grad()
        loss = F.cross_entropy(teacher(xb), yb)
        loss.backward()
        opt_t.step()
        losses.append(loss.item())

    teacher.eval()  # the teacher's dropout off
    opt_s = torch.optim.SGD(student.parameters(), lr=args.lr * 10, momentum=0.9)
    student.train()
    for step in range(args.steps):
        xb, yb = x[step :: args.steps], y[step :: args.steps]
        with torch.no_grad():
            teacher_logits = teacher(xb)
        student_logits = student(xb)
        soft = distillation_loss(student_logits, teacher_logits, args.temperature, args.kd)
        label_loss = F.cross_entropy(student_logits, yb)
        loss = args.soft_weight * soft + (1 - args.soft_weight) * label_loss
        opt_s.zero_grad()
        loss.backward()
        opt_s.step()
        losses += [soft.item(), loss.item()]

    student.eval()
    with torch.no_grad():
        agree = (student(x).argmax(1) == teacher(x).argmax(1)).float().mean()
        acc = (student(x).argmax(1) == y).sum()
    losses += [agree.item(), float(acc.item())]


def info_nce_loss(features, batch_size, temperature, neg_inf):
    labels = torch.cat([torch.arange(batch_size) for _ in range(2)], dim=0)
    labels = (labels.unsqueeze(0) == labels.unsqueeze(1)).float()
    features = F.normalize(features, dim=1)
    similarity_matrix = torch.matmul(features, features.T)
    # discard the main diagonal from both the labels and the similarities matrix
    mask = torch.eye(labels.shape[0], dtype=torch.bool)
    labels = labels[~mask].view(labels.shape[0], -1)
    similarity_matrix = similarity_matrix[~mask].view(similarity_matrix.shape[0], -1)
    positives = similarity_matrix[labels.bool()].view(labels.shape[0], -1)
    negatives = similarity_matrix[~labels.bool()].view(similarity_matrix.shape[0], -1)
    logits = torch.cat([positives, negatives], dim=1) / temperature
    labels = torch.zeros(logits.shape[0], dtype=torch.long)
    # the same loss, written the other common way: mask the diagonal with -inf
    z = features
    sim = z @ z.T / temperature
    sim = sim.masked_fill(torch.eye(2 * batch_size, dtype=torch.bool), neg_inf)
    targets = torch.arange(2 * batch_size).roll(batch_size)
    return F.cross_entropy(logits, labels), F.cross_entropy(sim, targets)


def augment(x):
    return x + 0.3 * torch.randn_like(x)


def run_simclr(args, x, y, encoder, head, losses):
    neg_inf = float("-inf") if args.neg_inf == "float" else -torch.inf
    params = list(encoder.parameters()) + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=args.lr, weight_decay=1e-4)
    for step in range(args.steps):
        xb = x[step * args.batch_size : (step + 1) * args.batch_size]
        views = torch.cat([augment(xb), augment(xb)], dim=0)
        features = head(encoder(views))
        loss, loss_masked = info_nce_loss(features, xb.shape[0], args.temperature, neg_inf)
        optimizer.zero_grad()
        (loss if step % 2 == 0 else loss_masked).backward()
        optimizer.step()
        losses += [loss.item(), loss_masked.item()]

    # a linear probe on the frozen encoder
    encoder.requires_grad_(False)
    with torch.no_grad():
        feats = encoder(x)
    probe = nn.Linear(feats.shape[1], int(y.max()) + 1)
    nn.init.zeros_(probe.weight)
    nn.init.zeros_(probe.bias)
    opt = torch.optim.SGD(probe.parameters(), lr=0.5)
    for _ in range(5):
        loss = F.cross_entropy(probe(feats), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())


def main(argv=None):
    parser = argparse.ArgumentParser(description="distillation and contrastive learning")
    parser.add_argument("--task", choices=["distill", "simclr"], default="distill")
    parser.add_argument("--kd", choices=["kl_div", "log_target", "module"], default="kl_div")
    parser.add_argument("--neg-inf", choices=["float", "torch"], default="float")
    parser.add_argument("--dim", type=int, default=12)
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--soft-weight", type=float, default=0.75)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    x, y = clusters(rng, args.steps * args.batch_size, args.dim, args.classes)
    if args.task == "distill":
        models = {
            "teacher": mlp([args.dim, 48, 48, args.classes], dropout=0.2),
            "student": mlp([args.dim, 8, args.classes]),
        }
    else:
        args.temperature = 0.5
        models = {"encoder": mlp([args.dim, 32, 16]), "head": mlp([16, 16, 8])}
    if args.save_init:
        torch.save({k: m.state_dict() for k, m in models.items()}, args.save_init)
    if args.init:
        state = torch.load(args.init)
        for k, m in models.items():
            m.load_state_dict(state[k])

    losses = []
    if args.task == "distill":
        run_distill(args, x, y, models["teacher"], models["student"], losses)
    else:
        run_simclr(args, x, y, models["encoder"], models["head"], losses)
    return losses


if __name__ == "__main__":
    main()
