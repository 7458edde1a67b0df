"""A TabNet-style attentive tabular classifier (Arik & Pfister; after dreamquark-ai's
pytorch-tabnet ``tab_network.py`` and ``sparsemax.py``), at a small size, in float64.

Sparsemax written as its forward/backward ``torch.autograd.Function``: ``sort(descending=
True)``, ``cumsum``, ``torch.arange`` support sizes (``view`` + ``transpose`` to the working
dimension), the threshold ``tau`` by ``gather``, ``clamp(min=0)``; its backward from the saved
output's support. Ghost batch normalisation by ``chunk`` into virtual batches through one
``BatchNorm1d(momentum=0.02)``; gated linear units by ``F.glu``; residual feature
transformers scaled by ``sqrt(0.5)``; an attentive transformer with the prior updated by
``(gamma - mask)``; the masks' entropy as a sparsity regulariser; step outputs summed after
``ReLU``. Adam with ``ExponentialLR``, ``clip_grad_norm_``; then feature importances from the
masks (``sum`` over steps and samples, normalised). Returns the losses, the masks' sparsity,
importances and a gradient check of sparsemax against torch's autograd of a dense formula.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def _make_ix_like(input, dim=0):
    d = input.size(dim)
    rho = torch.arange(1, d + 1, device=input.device, dtype=input.dtype)
    view = [1] * input.dim()
    view[0] = -1
    return rho.view(view).transpose(0, dim)


def _threshold_and_support(input, dim=-1):
    input_srt, _ = torch.sort(input, descending=True, dim=dim)
    input_cumsum = input_srt.cumsum(dim) - 1
    rhos = _make_ix_like(input, dim)
    support = rhos * input_srt > input_cumsum
    support_size = support.sum(dim=dim).unsqueeze(dim)
    tau = input_cumsum.gather(dim, support_size - 1)
    tau /= support_size.to(input.dtype)
    return tau, support_size


class SparsemaxFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, dim=-1):
        ctx.dim = dim
        max_val, _ = input.max(dim=dim, keepdim=True)
        input -= max_val  # same numerical stability trick as for softmax
        tau, supp_size = _threshold_and_support(input, dim=dim)
        output = torch.clamp(input - tau, min=0)
        ctx.save_for_backward(supp_size, output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        supp_size, output = ctx.saved_tensors
        dim = ctx.dim
        grad_input = grad_output.clone()
        grad_input[output == 0] = 0
        v_hat = grad_input.sum(dim=dim) / supp_size.to(output.dtype).squeeze(dim)
        v_hat = v_hat.unsqueeze(dim)
        grad_input = torch.where(output != 0, grad_input - v_hat, grad_input)
        return grad_input, None


sparsemax = SparsemaxFunction.apply


class GBN(nn.Module):
    def __init__(self, input_dim, virtual_batch_size=4, momentum=0.02):
        super().__init__()
        self.virtual_batch_size = virtual_batch_size
        self.bn = nn.BatchNorm1d(input_dim, momentum=momentum)

    def forward(self, x):
        chunks = x.chunk(int(np.ceil(x.shape[0] / self.virtual_batch_size)), 0)
        return torch.cat([self.bn(x_) for x_ in chunks], dim=0)


class GLUBlock(nn.Module):
    def __init__(self, input_dim, output_dim, first=False):
        super().__init__()
        self.first = first
        self.fc = nn.Linear(input_dim, 2 * output_dim, bias=False)
        self.bn = GBN(2 * output_dim)

    def forward(self, x):
        out = F.glu(self.bn(self.fc(x)), dim=-1)
        return out if self.first else (x + out) * np.sqrt(0.5)


class AttentiveTransformer(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.fc = nn.Linear(input_dim, output_dim, bias=False)
        self.bn = GBN(output_dim)

    def forward(self, priors, processed_feat):
        return sparsemax(self.bn(self.fc(processed_feat)) * priors)


class TabNet(nn.Module):
    def __init__(self, input_dim=6, n_d=4, n_a=4, n_steps=2, gamma=1.3, classes=2):
        super().__init__()
        self.n_d, self.n_steps, self.gamma = n_d, n_steps, gamma
        self.initial_bn = nn.BatchNorm1d(input_dim, momentum=0.01)
        self.initial_splitter = GLUBlock(input_dim, n_d + n_a, first=True)
        self.transformers = nn.ModuleList(
            nn.Sequential(
                GLUBlock(input_dim, n_d + n_a, first=True), GLUBlock(n_d + n_a, n_d + n_a)
            )
            for _ in range(n_steps)
        )
        self.attentions = nn.ModuleList(
            AttentiveTransformer(n_a, input_dim) for _ in range(n_steps)
        )
        self.final_mapping = nn.Linear(n_d, classes, bias=False)

    def forward(self, x):
        x = self.initial_bn(x)
        prior = torch.ones(x.shape)
        m_loss = 0
        att = self.initial_splitter(x)[:, self.n_d :]
        res, masks = 0, []
        for step in range(self.n_steps):
            M = self.attentions[step](prior, att)
            m_loss += torch.mean(torch.sum(torch.mul(M, torch.log(M + 1e-15)), dim=1))
            prior = torch.mul(self.gamma - M, prior)
            out = self.transformers[step](torch.mul(M, x))
            res = torch.add(res, F.relu(out[:, : self.n_d]))
            att = out[:, self.n_d :]
            masks.append(M)
        return self.final_mapping(res), m_loss / self.n_steps, torch.stack(masks)


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
    model = TabNet()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-2)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    out = []
    for _ in range(args.steps):
        x = torch.randn(12, 6)
        y = ((x[:, 0] + x[:, 2] * x[:, 3]) > 0).long()
        model.train()
        logits, m_loss, masks = model(x)
        loss = F.cross_entropy(logits, y) + 1e-3 * m_loss
        optimizer.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        out += [loss.item(), m_loss.item(), norm.item(), (masks == 0).double().mean().item()]
    model.eval()
    with torch.no_grad():
        _, _, masks = model(torch.randn(8, 6))
        importance = masks.sum(dim=(0, 1))
        out += (importance / importance.sum()).tolist()
    z = torch.randn(3, 5, requires_grad=True)
    w = torch.randn(3, 5)
    (g_custom,) = torch.autograd.grad((sparsemax(z * 1.0) * w).sum(), z)
    tau, _ = _threshold_and_support(z.detach() - z.detach().max(-1, keepdim=True)[0])
    support = (z.detach() - z.detach().max(-1, keepdim=True)[0] > tau).to(z.dtype)
    dense = support * (w - (w * support).sum(-1, keepdim=True) / support.sum(-1, keepdim=True))
    out += [torch.allclose(g_custom, dense)] + g_custom.flatten()[:5].tolist()
    out += model.initial_bn.running_var.tolist()
    return out
