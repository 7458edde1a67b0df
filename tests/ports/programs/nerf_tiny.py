"""A tiny NeRF (after yenchenlin/nerf-pytorch's ``run_nerf_helpers.py`` and ``run_nerf.py``):
rays from a pinhole camera, stratified samples, positional encoding, volume rendering and
hierarchical importance sampling into a fine network, in float64.

``get_rays`` by ``torch.meshgrid(..., indexing="ij")`` then ``.t()``, ``torch.stack`` of the
directions and ``torch.sum(dirs[..., None, :] * c2w[:3, :3], -1)``, ``expand``; the
``Embedder`` of ``sin``/``cos`` at ``2.**torch.linspace(...)`` frequencies concatenated with
the input; an MLP with a skip ``torch.cat([input_pts, h], -1)`` and a view-direction branch
from ``torch.split``; ``raw2outputs`` with ``torch.cat`` of a ``1e10`` tail, ``torch.norm``
scaling, ``1 - torch.exp(-F.relu(raw) * dists)``, the exclusive transmittance
``torch.cumprod(torch.cat([ones, 1 - alpha + 1e-10], -1), -1)[:, :-1]``, ``torch.sigmoid``
colours, depth and accumulated weights; ``sample_pdf`` with ``torch.cumsum``,
``torch.searchsorted(cdf, u, right=True)``, ``torch.max``/``torch.min`` clamps,
``torch.gather`` of an ``expand``-ed ``cdf``, ``torch.where`` and ``torch.sort`` of the joint
samples, ``detach()`` of the fine samples; ``img2mse``/``mse2psnr`` with ``torch.log``;
rays chosen by ``torch.randperm``. Adam with the paper's exponential learning-rate decay
written into ``param_groups``. Returns every loss and PSNR, gradients and parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

img2mse = lambda x, y: torch.mean((x - y) ** 2)  # noqa: E731
mse2psnr = lambda x: -10.0 * torch.log(x) / torch.log(torch.tensor([10.0]))  # noqa: E731


class Embedder:
    def __init__(self, input_dims, multires):
        max_freq = multires - 1
        freq_bands = 2.0 ** torch.linspace(0.0, max_freq, steps=multires)
        self.embed_fns = [lambda x: x]
        for freq in freq_bands:
            for p_fn in [torch.sin, torch.cos]:
                self.embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
        self.out_dim = input_dims * (1 + 2 * multires)

    def embed(self, inputs):
        return torch.cat([fn(inputs) for fn in self.embed_fns], -1)


class NeRF(nn.Module):
    def __init__(self, D=4, W=16, input_ch=15, input_ch_views=9, skips=(2,)):
        super().__init__()
        self.input_ch, self.input_ch_views, self.skips = input_ch, input_ch_views, skips
        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, W)]
            + [
                nn.Linear(W, W) if i not in skips else nn.Linear(W + input_ch, W)
                for i in range(D - 1)
            ]  # fmt: skip
        )
        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
        self.feature_linear = nn.Linear(W, W)
        self.alpha_linear = nn.Linear(W, 1)
        self.rgb_linear = nn.Linear(W // 2, 3)

    def forward(self, x):
        input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
        h = input_pts
        for i, _ in enumerate(self.pts_linears):
            h = self.pts_linears[i](h)
            h = F.relu(h)
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        alpha = self.alpha_linear(h)
        feature = self.feature_linear(h)
        h = torch.cat([feature, input_views], -1)
        for i, _ in enumerate(self.views_linears):
            h = F.relu(self.views_linears[i](h))
        rgb = self.rgb_linear(h)
        return torch.cat([rgb, alpha], -1)


def get_rays(H, W, K, c2w):
    i, j = torch.meshgrid(torch.linspace(0, W - 1, W), torch.linspace(0, H - 1, H),
                          indexing="ij")  # fmt: skip
    i, j = i.t(), j.t()
    dirs = torch.stack([(i - K[0][2]) / K[0][0], -(j - K[1][2]) / K[1][1], -torch.ones_like(i)],
                       -1)  # fmt: skip
    rays_d = torch.sum(dirs[..., None, :] * c2w[:3, :3], -1)
    rays_o = c2w[:3, -1].expand(rays_d.shape)
    return rays_o, rays_d


def raw2outputs(raw, z_vals, rays_d):
    raw2alpha = lambda raw, dists, act_fn=F.relu: 1.0 - torch.exp(-act_fn(raw) * dists)  # noqa: E731
    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch.cat([dists, torch.tensor([1e10]).expand(dists[..., :1].shape)], -1)
    dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
    rgb = torch.sigmoid(raw[..., :3])
    alpha = raw2alpha(raw[..., 3], dists)
    ones = torch.ones((alpha.shape[0], 1))
    weights = alpha * torch.cumprod(torch.cat([ones, 1.0 - alpha + 1e-10], -1), -1)[:, :-1]
    rgb_map = torch.sum(weights[..., None] * rgb, -2)
    depth_map = torch.sum(weights * z_vals, -1)
    acc_map = torch.sum(weights, -1)
    return rgb_map, depth_map, acc_map, weights


def sample_pdf(bins, weights, N_samples, u):
    weights = weights + 1e-5
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)
    u = u.contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.max(torch.zeros_like(inds - 1), inds - 1)
    above = torch.min((cdf.shape[-1] - 1) * torch.ones_like(inds), inds)
    inds_g = torch.stack([below, above], -1)
    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    return bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])


def render_rays(rays_o, rays_d, coarse, fine, embed, embed_dirs, near=2.0, far=6.0):
    n_rays, n_samples, n_importance = rays_o.shape[0], 6, 6
    viewdirs = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
    t_vals = torch.linspace(0.0, 1.0, steps=n_samples)
    z_vals = near * (1.0 - t_vals) + far * t_vals
    z_vals = z_vals.expand([n_rays, n_samples])
    mids = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
    upper = torch.cat([mids, z_vals[..., -1:]], -1)
    lower = torch.cat([z_vals[..., :1], mids], -1)
    z_vals = lower + (upper - lower) * torch.rand(z_vals.shape)

    def run(network, z):
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z[..., :, None]
        dirs = viewdirs[:, None].expand(pts.shape)
        inputs = torch.cat([embed.embed(pts), embed_dirs.embed(dirs)], -1)
        return network(inputs.reshape(-1, inputs.shape[-1])).reshape(*pts.shape[:-1], 4)

    rgb0, _, acc0, weights = raw2outputs(run(coarse, z_vals), z_vals, rays_d)
    z_vals_mid = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
    u = torch.rand(n_rays, n_importance)
    z_samples = sample_pdf(z_vals_mid, weights[..., 1:-1], n_importance, u).detach()
    z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
    rgb, depth, acc, _ = raw2outputs(run(fine, z_vals), z_vals, rays_d)
    return rgb, depth, acc, rgb0


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:4].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:4].tolist() + [p.grad.abs().sum().item()]
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
    embed, embed_dirs = Embedder(3, 2), Embedder(3, 1)
    coarse = NeRF(input_ch=embed.out_dim, input_ch_views=embed_dirs.out_dim)
    fine = NeRF(input_ch=embed.out_dim, input_ch_views=embed_dirs.out_dim)
    if args.init:
        state = torch.load(args.init)
        coarse.load_state_dict(state["coarse"])
        fine.load_state_dict(state["fine"])
    if args.save_init:
        torch.save({"coarse": coarse.state_dict(), "fine": fine.state_dict()}, args.save_init)
    grad_vars = list(coarse.parameters()) + list(fine.parameters())
    lrate, lrate_decay = 5e-3, 1
    optimizer = torch.optim.Adam(params=grad_vars, lr=lrate, betas=(0.9, 0.999))
    H = W = 5
    focal = 6.0
    K = torch.tensor([[focal, 0, 0.5 * W], [0, focal, 0.5 * H], [0, 0, 1]])
    c2w = torch.tensor([[1.0, 0, 0, 0.1], [0, 0.8, -0.6, -2.0], [0, 0.6, 0.8, 4.0]])
    target = torch.rand(H, W, 3)
    rays_o, rays_d = get_rays(H, W, K, c2w)
    rays_o, rays_d, target = rays_o.reshape(-1, 3), rays_d.reshape(-1, 3), target.reshape(-1, 3)
    out = []
    for global_step in range(args.steps):
        select = torch.randperm(H * W)[:8]
        rgb, depth, acc, rgb0 = render_rays(rays_o[select], rays_d[select], coarse, fine,
                                            embed, embed_dirs)  # fmt: skip
        optimizer.zero_grad()
        img_loss = img2mse(rgb, target[select])
        loss = img_loss + img2mse(rgb0, target[select])
        psnr = mse2psnr(img_loss)
        loss.backward()
        optimizer.step()
        decay_rate = 0.1
        decay_steps = lrate_decay * 10
        new_lrate = lrate * (decay_rate ** (global_step / decay_steps))
        for param_group in optimizer.param_groups:
            param_group["lr"] = new_lrate
        out += [loss.item(), psnr.item()] + depth.tolist() + acc.tolist()
        out += values(coarse) + values(fine)
    return out


if __name__ == "__main__":
    main()
