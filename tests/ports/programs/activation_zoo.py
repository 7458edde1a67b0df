"""An activation-function and loss sweep, as in the "which activation works best"
comparisons people run on a small MLP: the same network and data trained once per
activation module, then with the less common losses of ``torch.nn.functional``, in float64.

Activations: ``Hardtanh(-2, 2)``, ``RReLU`` (in ``eval()``, where it is a fixed leaky
slope), ``Softshrink``, ``Hardshrink``, ``Tanhshrink``, ``Threshold``, ``LogSigmoid``,
``CELU(alpha=0.5)``, ``ReLU6``, ``Hardsigmoid``, ``Softsign``, ``PReLU(num_parameters)``,
``SiLU``, ``GELU(approximate="tanh")``, ``Softplus(beta, threshold)``, ``LeakyReLU``,
``ELU``, and ``Softmin``/``Softmax2d``/``LogSoftmax`` heads. Losses: ``huber_loss(delta)``,
``soft_margin_loss``, ``multilabel_margin_loss`` (targets padded with -1),
``poisson_nll_loss(log_input=False)``, ``margin_ranking_loss``, ``kl_div(reduction=
"batchmean")``, ``nll_loss`` and ``cross_entropy`` with ``ignore_index`` and class weights
(``reduction="none"`` and ``"mean"``), ``smooth_l1_loss(beta)``, ``l1_loss``,
``multi_margin_loss(weight)``, ``hinge_embedding_loss``, ``triplet_margin_loss(p=1)``.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

ACTIVATIONS = {
    "hardtanh": lambda: nn.Hardtanh(-2.0, 2.0),
    "rrelu": lambda: nn.RReLU(0.1, 0.3),
    "softshrink": lambda: nn.Softshrink(0.3),
    "hardshrink": lambda: nn.Hardshrink(0.2),
    "tanhshrink": nn.Tanhshrink,
    "threshold": lambda: nn.Threshold(0.1, -0.5),
    "logsigmoid": nn.LogSigmoid,
    "celu": lambda: nn.CELU(alpha=0.5),
    "relu6": nn.ReLU6,
    "hardsigmoid": nn.Hardsigmoid,
    "softsign": nn.Softsign,
    "prelu": lambda: nn.PReLU(8, init=0.2),
    "silu": nn.SiLU,
    "gelu-tanh": lambda: nn.GELU(approximate="tanh"),
    "softplus": lambda: nn.Softplus(beta=2.0, threshold=1.0),
    "leaky": lambda: nn.LeakyReLU(0.05),
    "elu": lambda: nn.ELU(alpha=0.7),
}


def mlp(act):
    return nn.Sequential(nn.Linear(4, 8), act(), nn.Linear(8, 3))


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
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
    models = {name: mlp(act) for name, act in ACTIVATIONS.items()}
    models["losses"] = mlp(nn.Tanh)
    if args.init:
        state = torch.load(args.init)
        for k, m in models.items():
            m.load_state_dict(state[k])
    if args.save_init:
        torch.save({k: m.state_dict() for k, m in models.items()}, args.save_init)
    x = torch.randn(10, 4) * 1.5
    y = torch.randint(0, 3, (10,))
    out = []
    for name in ACTIVATIONS:
        model = models[name]
        if name == "rrelu":
            model.eval()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        for _ in range(args.steps):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            out.append(loss.item())
        out.append(sum(p.grad.abs().sum().item() for p in model.parameters()))
    head = torch.randn(2, 3, 2, 2)
    out += nn.Softmin(dim=1)(head)[0, :, 0, 0].tolist() + nn.Softmax2d()(head)[1, :, 1, 0].tolist()
    out += nn.LogSoftmax(dim=-1)(head)[0, 0, 0].tolist()

    model = models["losses"]
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    y_ignored = y.clone()
    y_ignored[::4] = -100
    weight = torch.tensor([1.0, 2.0, 0.5])
    multi = torch.tensor([[0, 2, -1], [1, -1, 0]]).repeat(5, 1)
    signs = torch.where(torch.rand(10) > 0.5, 1.0, -1.0)
    for _ in range(args.steps):
        opt.zero_grad()
        z = model(x)
        terms = [
            F.huber_loss(z[:, 0], x[:, 0], delta=0.5),
            F.soft_margin_loss(z[:, 1], signs),
            F.multilabel_margin_loss(z, multi),
            F.poisson_nll_loss(F.softplus(z[:, 2]), y.double(), log_input=False),
            F.margin_ranking_loss(z[:, 0], z[:, 1], signs, margin=0.2),
            F.kl_div(F.log_softmax(z, 1), F.softmax(x[:, :3], 1), reduction="batchmean"),
            F.nll_loss(F.log_softmax(z, 1), y_ignored, weight=weight),
            F.cross_entropy(z, y_ignored, weight=weight, reduction="none").sum() / 10,
            F.smooth_l1_loss(z[:, 2], x[:, 2], beta=0.3),
            F.l1_loss(z[:, 1], x[:, 1]),
            F.multi_margin_loss(z, y, weight=weight, margin=0.5),
            F.hinge_embedding_loss(z[:, 0].abs(), signs, margin=1.5),
            F.triplet_margin_loss(z[:4], z[4:8], z[6:10], p=1, margin=0.3),
        ]
        loss = sum(terms)
        loss.backward()
        opt.step()
        out += [loss.item()] + [t.item() for t in terms]
    out += [p.grad.abs().sum().item() for p in model.parameters()]
    return out


if __name__ == "__main__":
    main()
