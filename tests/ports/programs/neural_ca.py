"""Growing neural cellular automata (Mordvintsev et al.), in float64, as the PyTorch re-
implementations write it: perception by a depthwise ``F.conv2d`` (``groups`` = channels)
with identity and Sobel kernels stacked and ``repeat``-ed per channel, the update rule by
1x1 convolutions whose last layer is ``nn.init.zeros_``-initialised, a stochastic update
mask ``(torch.rand(...) <= fire_rate)``, the alive mask by ``F.max_pool2d`` of the alpha
channel, a random number of steps from ``torch.randint``, a sample pool indexed by
``randperm`` with the worst sample (``argsort(descending=True)``) replaced by the seed and
the results written back by ``pool[idx] = x.detach()``; per-parameter gradient
normalisation (``p.grad.div_(p.grad.norm() + 1e-8)``), Adam with ``MultiStepLR``. Returns the
losses, the living cells and some parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

CHANNELS, SIZE = 6, 9


class CAModel(nn.Module):
    def __init__(self, channels=CHANNELS, hidden=16, fire_rate=0.5):
        super().__init__()
        self.channels, self.fire_rate = channels, fire_rate
        identity = torch.tensor([[0.0, 0, 0], [0, 1, 0], [0, 0, 0]])
        sobel_x = torch.tensor([[-1.0, 0, 1], [-2, 0, 2], [-1, 0, 1]]) / 8
        kernels = torch.stack([identity, sobel_x, sobel_x.T])  # (3, 3, 3)
        self.register_buffer("kernel", kernels.repeat(channels, 1, 1).unsqueeze(1))
        self.fc0 = nn.Conv2d(channels * 3, hidden, 1)
        self.fc1 = nn.Conv2d(hidden, channels, 1, bias=False)
        nn.init.zeros_(self.fc1.weight)

    def alive(self, x):
        return F.max_pool2d(x[:, 3:4], kernel_size=3, stride=1, padding=1) > 0.1

    def perceive(self, x):
        return F.conv2d(F.pad(x, (1, 1, 1, 1), mode="circular"), self.kernel,
                        groups=self.channels)  # fmt: skip

    def step(self, x):
        pre_life = self.alive(x)
        dx = self.fc1(F.relu(self.fc0(self.perceive(x))))
        fire = (torch.rand(x.shape[0], 1, x.shape[2], x.shape[3]) <= self.fire_rate).to(x.dtype)
        x = x + dx * fire
        life = pre_life & self.alive(x)
        return x * life.to(x.dtype)

    def forward(self, x, steps):
        for _ in range(steps):
            x = self.step(x)
        return x


def make_target():
    yy, xx = torch.meshgrid(torch.arange(SIZE), torch.arange(SIZE), indexing="ij")
    disc = ((yy - SIZE // 2) ** 2 + (xx - SIZE // 2) ** 2 <= 9).to(torch.get_default_dtype())
    rgb = torch.stack([disc * 0.8, disc * (xx / SIZE), disc * (yy / SIZE)])
    return torch.cat([rgb, disc.unsqueeze(0)])  # RGBA


def make_seed():
    seed = torch.zeros(CHANNELS, SIZE, SIZE)
    seed[3:, SIZE // 2, SIZE // 2] = 1.0
    return seed


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
    model = CAModel()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    target = make_target()
    pool = make_seed().repeat(8, 1, 1, 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, [2], 0.3)
    out = []
    for _ in range(args.steps):
        idx = torch.randperm(len(pool))[:3]
        x = pool[idx]
        with torch.no_grad():
            per_sample = ((x[:, :4] - target) ** 2).mean(dim=(1, 2, 3))
            worst = per_sample.argsort(descending=True)[0]
        x[worst] = make_seed()
        steps = int(torch.randint(4, 7, (1,)))
        y = model(x, steps)
        loss = F.mse_loss(y[:, :4], target.expand(3, -1, -1, -1))
        optimizer.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p.grad.div_(p.grad.norm() + 1e-8)
        optimizer.step()
        scheduler.step()
        pool[idx] = y.detach()
        out += [loss.item(), steps, int(worst), model.alive(y).sum().item()]
    out += model.fc1.weight.flatten()[:6].tolist() + pool[:, 3].sum(dim=(1, 2)).tolist()
    return out
