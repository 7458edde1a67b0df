"""A capsule network with dynamic routing (after the popular CapsNet-PyTorch ports of Sabour
et al. 2017), on small random "images", in float64.

Primary capsules from a strided ``Conv2d`` reshaped by ``view``/``permute``/``contiguous``;
``squash`` with ``norm(dim=-1, keepdim=True)``; prediction vectors
``torch.matmul(self.W, x[:, None, :, :, None])`` with the batch broadcast and ``squeeze(-1)``;
three routing iterations over logits ``b = torch.zeros(...)`` with ``F.softmax(b, dim=1)``,
the agreement added in place (``b += (u_hat_detached * v).sum(-1, keepdim=True)``) and
``u_hat.detach()`` in all but the last; class lengths, the margin loss
``T * F.relu(0.9 - v)**2 + 0.5 * (1 - T) * F.relu(v - 0.1)**2`` with one-hot targets from
``torch.eye(n).index_select``; a reconstruction decoder fed the capsules masked by the true
class, ``MSELoss(reduction="sum")`` scaled by 0.0005. Adam with ``ExponentialLR``; accuracy
counted by ``argmax``. Returns every loss, the accuracy, gradients and parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


def squash(s, dim=-1):
    norm = s.norm(dim=dim, keepdim=True)
    sq = norm**2
    return sq / (1 + sq) * s / (norm + 1e-8)


class PrimaryCaps(nn.Module):
    def __init__(self, in_channels, num_caps=4, caps_dim=4):
        super().__init__()
        self.caps_dim = caps_dim
        self.conv = nn.Conv2d(in_channels, num_caps * caps_dim, kernel_size=3, stride=2)

    def forward(self, x):
        out = self.conv(x)  # (B, caps*dim, H, W)
        b, _, h, w = out.shape
        out = out.view(b, -1, self.caps_dim, h, w).permute(0, 1, 3, 4, 2).contiguous()
        return squash(out.view(b, -1, self.caps_dim))


class DigitCaps(nn.Module):
    def __init__(self, in_caps, in_dim, num_caps, out_dim, routings=3):
        super().__init__()
        self.num_caps = num_caps
        self.routings = routings
        self.W = nn.Parameter(0.1 * torch.randn(1, num_caps, in_caps, out_dim, in_dim))

    def forward(self, x):
        u_hat = torch.matmul(self.W, x[:, None, :, :, None]).squeeze(-1)  # (B, J, I, D)
        u_hat_detached = u_hat.detach()
        b = torch.zeros(x.size(0), self.num_caps, x.size(1), 1)
        for i in range(self.routings):
            c = F.softmax(b, dim=1)
            if i == self.routings - 1:
                v = squash((c * u_hat).sum(dim=2, keepdim=True))
            else:
                v = squash((c * u_hat_detached).sum(dim=2, keepdim=True))
                b += (u_hat_detached * v).sum(dim=-1, keepdim=True)
        return v.squeeze(2)  # (B, J, D)


class CapsNet(nn.Module):
    def __init__(self, classes=3, image=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3)
        self.primary = PrimaryCaps(8)
        side = ((image - 2) - 3) // 2 + 1
        self.digits = DigitCaps(4 * side * side, 4, classes, 6)
        self.decoder = nn.Sequential(
            nn.Linear(6 * classes, 24),
            nn.ReLU(inplace=True),
            nn.Linear(24, image * image),
            nn.Sigmoid(),
        )
        self.classes = classes

    def forward(self, x, y=None):
        x = F.relu(self.conv1(x), inplace=True)
        v = self.digits(self.primary(x))
        lengths = v.norm(dim=-1)
        if y is None:
            index = lengths.argmax(dim=1)
            y = torch.eye(self.classes).index_select(dim=0, index=index)
        recon = self.decoder((v * y[:, :, None]).view(v.size(0), -1))
        return lengths, recon.view(x.size(0), 1, 10, 10)


def margin_loss(lengths, targets):
    left = F.relu(0.9 - lengths) ** 2
    right = F.relu(lengths - 0.1) ** 2
    loss = targets * left + 0.5 * (1.0 - targets) * right
    return loss.sum(dim=1).mean()


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:6].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:6].tolist() + [p.grad.abs().sum().item()]
    return out


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
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
    model = CapsNet()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    recon_loss = nn.MSELoss(reduction="sum")
    out = []
    for _ in range(args.steps):
        x = torch.rand(4, 1, 10, 10)
        labels = torch.randint(0, 3, (4,))
        x[torch.arange(4), 0, labels * 3, :] += 1.0  # a class-dependent stripe
        x = x.clamp(max=1.0)
        y = torch.eye(3).index_select(dim=0, index=labels)
        optimizer.zero_grad()
        lengths, recon = model(x, y)
        loss_m = margin_loss(lengths, y)
        loss_r = recon_loss(recon, x) * 0.0005
        loss = loss_m + loss_r
        loss.backward()
        optimizer.step()
        scheduler.step()
        correct = (lengths.argmax(1) == labels).sum().item()
        out += [loss_m.item(), loss_r.item(), float(correct)] + values(model)
    model.eval()
    with torch.no_grad():
        lengths, recon = model(x)
    return out + lengths.flatten().tolist() + recon.flatten()[:20].tolist()


if __name__ == "__main__":
    main()
