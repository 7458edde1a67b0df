"""Module-API features of model-building libraries: lazy modules, parameter containers,
hooks with keyword arguments, and a hypernetwork whose generated weights run a target network
through ``torch.func.functional_call`` (after the FiLM / HyperNetworks tutorials and the
"Lazy Modules" notes), in float64.

``nn.LazyLinear``, ``nn.LazyConv1d`` and ``nn.LazyBatchNorm1d`` materialised by a dry run on a
dummy batch (as the docs advise before building the optimizer); ``nn.ParameterDict`` of FiLM
scales and shifts per task name, ``nn.ParameterList``; ``register_forward_pre_hook
(with_kwargs=True)`` rewriting a keyword argument, ``register_forward_hook(with_kwargs=True)``,
``register_full_backward_pre_hook`` scaling the incoming gradient and
``register_full_backward_hook`` recording norms; a hypernetwork producing the target
network's weights, split with ``torch.split`` and ``view``-ed into a dict for
``functional_call(target, params, (x,))``, its gradient flowing to the hypernetwork;
``named_modules``/``named_parameters(recurse=False)``/``get_submodule``/``get_parameter``;
BatchNorm1d running statistics; Adam with one group per module.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

TASKS = ("sum", "max")


class LazyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.LazyConv1d(4, 3, padding=1, bias=False)  # BatchNorm follows
        self.bn = nn.LazyBatchNorm1d()
        self.fc = nn.LazyLinear(5)
        self.film = nn.ParameterDict(
            {t: nn.Parameter(torch.stack([torch.ones(4), torch.zeros(4)])) for t in TASKS}
        )

    def forward(self, x, task="sum", scale=1.0):
        h = self.bn(self.conv(x))
        gamma, beta = self.film[task]
        h = F.relu(gamma[:, None] * h + beta[:, None]) * scale
        return self.fc(h.flatten(1))


class HyperNet(nn.Module):
    def __init__(self, target):
        super().__init__()
        self.shapes = {n: p.shape for n, p in target.named_parameters()}
        total = sum(s.numel() for s in self.shapes.values())
        self.embeds = nn.ParameterList(nn.Parameter(torch.randn(3) * 0.5) for _ in TASKS)
        self.gen = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, total))

    def forward(self, task_id):
        flat = self.gen(self.embeds[task_id]) * 0.5
        pieces = torch.split(flat, [s.numel() for s in self.shapes.values()])
        return {n: p.view(s) for (n, s), p in zip(self.shapes.items(), pieces)}


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
    lazy = LazyNet()
    lazy(torch.zeros(2, 2, 6))  # materialise the lazy parameters
    target = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 1))
    hyper = HyperNet(target)
    models = {"lazy": lazy, "hyper": hyper}
    if args.init:
        state = torch.load(args.init)
        for k, m in models.items():
            m.load_state_dict(state[k])
    if args.save_init:
        torch.save({k: m.state_dict() for k, m in models.items()}, args.save_init)
    out = [float(type(lazy.fc) is nn.Linear), float(lazy.conv.weight.shape[1])]
    seen = []

    def pre(module, args, kwargs):
        return args, {**kwargs, "scale": kwargs.get("scale", 1.0) * 0.5}

    def post(module, args, kwargs, output):
        seen.append(kwargs["task"])

    def grad_pre(module, grad_output):
        return (grad_output[0] * 2.0,)

    norms = []
    lazy.register_forward_pre_hook(pre, with_kwargs=True)
    lazy.register_forward_hook(post, with_kwargs=True)
    lazy.fc.register_full_backward_pre_hook(grad_pre)
    lazy.bn.register_full_backward_hook(lambda m, gi, go: norms.append(gi[0].norm().item()))
    opt = torch.optim.Adam(
        [{"params": lazy.parameters(), "lr": 1e-2}, {"params": hyper.parameters(), "lr": 5e-3}]
    )
    x = torch.randn(6, 2, 6)
    y = torch.randint(0, 5, (6,))
    xs = torch.randn(8, 4)
    ys = {"sum": xs.sum(1, keepdim=True), "max": xs.amax(1, keepdim=True)}
    for step in range(args.steps):
        opt.zero_grad()
        task = TASKS[step % 2]
        l1 = F.cross_entropy(lazy(x, task=task), y)
        l2 = sum(
            F.mse_loss(functional_call(target, hyper(i), (xs,)), ys[t]) for i, t in enumerate(TASKS)
        )
        loss = l1 + l2
        loss.backward()
        opt.step()
        out += [loss.item(), l1.item(), l2.item()]
    out += norms + [float(len(seen)), float(seen[-1] == "sum")]
    out += lazy.bn.running_mean.tolist() + lazy.bn.running_var.tolist()
    out += [float(lazy.bn.num_batches_tracked.item())]
    out += [p.grad.abs().sum().item() for p in hyper.parameters()]
    out += [
        float(len(dict(lazy.named_modules()))),
        float(len(list(lazy.named_parameters(recurse=False)))),
    ]
    out += lazy.get_parameter("film.max").flatten().tolist()
    out += [lazy.get_submodule("fc").weight.abs().sum().item()]
    out += [float(all(p.grad is None for p in target.parameters()))]
    return out


if __name__ == "__main__":
    main()
