"""Optimizers written by users as ``torch.optim.Optimizer`` subclasses (after the lucidrains
``lion-pytorch`` package and the ``Lookahead`` wrappers of timm / the paper's reference code),
with the scheduler combinations of the "LR scheduling" recipes, in float64.

``Lion``: ``super().__init__(params, defaults)``, ``@torch.no_grad()`` ``step(closure=None)``
with ``torch.enable_grad()`` around the closure, ``self.state[p]`` initialised lazily with
``torch.zeros_like``, ``p.data.mul_(1 - lr * wd)``, ``update.sign_()``, ``exp_avg.lerp_``.
``Lookahead`` wrapping it: ``param_groups`` shared with the inner optimizer, slow weights in
its own ``state``, ``state_dict``/``load_state_dict`` of the pair into fresh objects. Also
``register_step_pre_hook``/``register_step_post_hook``, the optimizer-in-backward pattern by
``Tensor.register_post_accumulate_grad_hook`` (one SGD per parameter stepped as its gradient
arrives), and ``SequentialLR`` of ``LinearLR`` then ``CosineAnnealingLR``, ``ChainedScheduler``
of ``ExponentialLR`` with ``PolynomialLR``, ``CyclicLR(mode="triangular2")``.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Optimizer


class Lion(Optimizer):
    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        defaults = dict(lr=lr, betas=betas, weight_decay=weight_decay)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in filter(lambda p: p.grad is not None, group["params"]):
                grad, lr, wd = p.grad, group["lr"], group["weight_decay"]
                beta1, beta2 = group["betas"]
                state = self.state[p]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros_like(p)
                exp_avg = state["exp_avg"]
                p.data.mul_(1 - lr * wd)
                update = exp_avg.clone().mul_(beta1).add(grad, alpha=1 - beta1).sign_()
                p.add_(update, alpha=-lr)
                exp_avg.lerp_(grad, 1 - beta2)
        return loss


class Lookahead(Optimizer):
    # NOTE: Optimizer.__init__ is not called, as in timm's Lookahead
    def __init__(self, base_optimizer, alpha=0.5, k=2):
        self.base_optimizer = base_optimizer
        self.alpha, self.k = alpha, k
        self.param_groups = base_optimizer.param_groups
        self.defaults = base_optimizer.defaults
        self.state = {}
        self._step = 0
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = {"slow": p.detach().clone()}

    def zero_grad(self, set_to_none=True):
        self.base_optimizer.zero_grad(set_to_none=set_to_none)

    @torch.no_grad()
    def step(self, closure=None):
        loss = self.base_optimizer.step(closure)
        self._step += 1
        if self._step % self.k == 0:
            for group in self.param_groups:
                for p in group["params"]:
                    slow = self.state[p]["slow"]
                    slow.add_(p - slow, alpha=self.alpha)
                    p.copy_(slow)
        return loss

    def state_dict(self):
        return {
            "base": self.base_optimizer.state_dict(),
            "slow": [self.state[p]["slow"] for g in self.param_groups for p in g["params"]],
            "step": self._step,
        }

    def load_state_dict(self, state_dict):
        self.base_optimizer.load_state_dict(state_dict["base"])
        params = [p for g in self.param_groups for p in g["params"]]
        for p, slow in zip(params, state_dict["slow"]):
            self.state[p]["slow"].copy_(slow)
        self._step = state_dict["step"]


def make_model():
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))


def flat(model):
    return [v for p in model.parameters() for v in p.detach().flatten()[:4].tolist()]


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
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
    models = {"lion": make_model(), "inbackward": make_model(), "sched": make_model()}
    if args.init:
        state = torch.load(args.init)
        for k, m in models.items():
            m.load_state_dict(state[k])
    if args.save_init:
        torch.save({k: m.state_dict() for k, m in models.items()}, args.save_init)
    x, y = torch.randn(16, 4), torch.randn(16, 2)
    out = []

    # Lion inside Lookahead, with step hooks, then a checkpoint round trip
    model = models["lion"]
    opt = Lookahead(Lion(model.parameters(), lr=1e-2, weight_decay=0.1), alpha=0.5, k=2)
    calls = []
    opt.base_optimizer.register_step_pre_hook(lambda o, a, kw: calls.append("pre"))
    opt.base_optimizer.register_step_post_hook(lambda o, a, kw: calls.append("post"))
    for _ in range(args.steps):

        def closure():
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            return loss

        out.append(opt.step(closure).item())
    saved = opt.state_dict()
    fresh = make_model()
    fresh.load_state_dict(model.state_dict())
    opt2 = Lookahead(Lion(fresh.parameters(), lr=1e-2, weight_decay=0.1), alpha=0.5, k=2)
    opt2.load_state_dict(saved)
    for _ in range(2):
        opt2.zero_grad()
        loss = F.mse_loss(fresh(x), y)
        loss.backward()
        opt2.step()
        out.append(loss.item())
    out += flat(fresh) + [float(len(calls)), float(opt2._step)]
    exp_avg = opt2.base_optimizer.state[next(fresh.parameters())]["exp_avg"]
    out += exp_avg.flatten()[:4].tolist()

    # the optimizer-in-backward pattern: one optimizer per parameter, stepped by a hook
    model = models["inbackward"]
    per_param = {p: torch.optim.SGD([p], lr=0.05, momentum=0.9) for p in model.parameters()}

    def optimizer_hook(p):
        per_param[p].step()
        per_param[p].zero_grad()

    handles = [p.register_post_accumulate_grad_hook(optimizer_hook) for p in model.parameters()]
    for _ in range(args.steps):
        loss = F.smooth_l1_loss(model(x), y)
        loss.backward()
        out.append(loss.item())
    for h in handles:
        h.remove()
    out += flat(model) + [float(all(p.grad is None for p in model.parameters()))]

    # scheduler combinations
    model = models["sched"]
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
    warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=2)
    cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.01)
    seq = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[2])
    for _ in range(args.steps + 1):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        seq.step()
        out += [loss.item(), seq.get_last_lr()[0]]
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    chained = torch.optim.lr_scheduler.ChainedScheduler(
        [
            torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9),
            torch.optim.lr_scheduler.PolynomialLR(opt, total_iters=4, power=2.0),
        ]
    )
    cyc_opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    cyclic = torch.optim.lr_scheduler.CyclicLR(
        cyc_opt, base_lr=0.01, max_lr=0.1, step_size_up=2, mode="triangular2"
    )
    for _ in range(args.steps + 1):
        opt.step()
        chained.step()
        cyc_opt.step()
        cyclic.step()
        out += [opt.param_groups[0]["lr"], cyc_opt.param_groups[0]["lr"]]
        out.append(cyc_opt.param_groups[0]["momentum"])
    out += flat(model)
    return out


if __name__ == "__main__":
    main()
