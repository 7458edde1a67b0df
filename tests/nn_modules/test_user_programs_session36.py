"""Helper U, session 36: small PyTorch user programs (a VAE step with distributions, a
policy-gradient step with clipping, a float32 L-BFGS fit, a GAN step with a gradient penalty)
run with the import changed and compared with torch 2.13, and einsum's refusals of malformed
equations."""

from __future__ import annotations

from typing import Any

import pytest
from snippet_outcomes import outcome, same

BACKENDS = ["numpy", "torch:cpu"]


def _filled(m: Any, module: Any, scale: float = 0.5) -> Any:
    """``module`` with deterministic weights (no RNG: the backends' generators differ)."""
    with m.no_grad():
        for i, p in enumerate(module.parameters()):
            ramp = m.arange(p.numel(), dtype=p.dtype) * (0.3 + 0.1 * i)
            p.copy_(m.sin(ramp).reshape(p.shape) * scale)
    return module


def _vae_step(m: Any) -> Any:
    """Two Adam steps of a tiny VAE: reparameterised Normal, analytic KL, Bernoulli decoder."""
    D, nn = m.distributions, m.nn
    enc = _filled(m, nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4)).double())
    dec = _filled(m, nn.Sequential(nn.Linear(2, 8), nn.Softplus(), nn.Linear(8, 6)).double())
    x = (m.sin(m.arange(30.0, dtype=m.float64)).reshape(5, 6) > 0).double()
    eps = m.cos(m.arange(10.0, dtype=m.float64)).reshape(5, 2)
    opt = m.optim.Adam([*enc.parameters(), *dec.parameters()], lr=0.01)
    losses = []
    for _ in range(2):
        mu, logvar = enc(x).chunk(2, dim=-1)
        std = m.exp(0.5 * logvar)
        q = D.Normal(mu, std)
        kl = D.kl_divergence(q, D.Normal(m.zeros_like(mu), m.ones_like(std))).sum(-1)
        recon = D.Independent(D.Bernoulli(logits=dec(mu + eps * std)), 1)
        loss = (kl - recon.log_prob(x)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses, q.entropy(), recon.mean, enc[0].weight.grad, dec[2].weight


def _policy_step(m: Any) -> Any:
    """Advantage actor-critic steps: Categorical log-probs and entropy, clip_grad_norm_,
    RMSprop."""
    D, nn, F = m.distributions, m.nn, m.nn.functional
    policy = _filled(m, nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3)).double())
    value = _filled(m, nn.Linear(4, 1).double())
    opt = m.optim.RMSprop([*policy.parameters(), *value.parameters()], lr=0.01, alpha=0.9)
    obs = m.sin(m.arange(32.0, dtype=m.float64)).reshape(8, 4)
    actions = m.tensor([0, 1, 2, 1, 0, 2, 2, 1])
    returns = m.linspace(-1, 1, 8, dtype=m.float64).flip(0).cumsum(0)
    out = []
    for _ in range(2):
        dist = D.Categorical(logits=policy(obs))
        v = value(obs).squeeze(-1)
        adv = (returns - v).detach()
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        loss = -(dist.log_prob(actions) * adv).mean() + 0.5 * F.mse_loss(v, returns)
        loss = loss - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        out.append(nn.utils.clip_grad_norm_(policy.parameters(), 0.5))
        opt.step()
        out.append(loss)
    return out, dist.probs, value.weight


def _lbfgs_fit(m: Any) -> Any:
    """A float32 least-squares fit by L-BFGS (its curvature scalars in float32, as torch's),
    then a resume from the optimizer's state dict."""
    lin = _filled(m, m.nn.Linear(3, 2))
    x = m.cos(m.arange(15.0)).reshape(5, 3)
    y = m.sin(m.arange(10.0)).reshape(5, 2)
    opt = m.optim.LBFGS(lin.parameters(), lr=0.8, max_iter=3, history_size=5)

    def closure() -> Any:
        opt.zero_grad()
        loss = ((lin(x) - y) ** 2).mean()
        loss.backward()
        return loss

    losses = [opt.step(closure) for _ in range(3)]
    again = m.optim.LBFGS(lin.parameters(), lr=0.8, max_iter=3, history_size=5)
    again.load_state_dict(opt.state_dict())
    losses += [again.step(closure) for _ in range(2)]
    return losses, lin.weight, again.state_dict()["state"][0]["al"]


def _gan_step(m: Any) -> Any:
    """A GAN step with BCE-with-logits losses, a WGAN-GP gradient penalty (create_graph) and a
    frozen discriminator for the generator's step."""
    nn = m.nn
    G = _filled(m, nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 4), nn.Tanh()))
    Dn = _filled(m, nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1)))
    G, Dn = G.double(), Dn.double()
    opt_d = m.optim.Adam(Dn.parameters(), lr=2e-3, betas=(0.5, 0.999), weight_decay=1e-4)
    crit = nn.BCEWithLogitsLoss()
    real = m.cos(m.arange(24.0, dtype=m.float64)).reshape(6, 4)
    fake = G(m.sin(m.arange(18.0, dtype=m.float64) * 1.3).reshape(6, 3))
    ones, zeros = m.ones(6, 1, dtype=m.float64), m.zeros(6, 1, dtype=m.float64)
    d_loss = crit(Dn(real), ones) + crit(Dn(fake.detach()), zeros)
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    alpha = m.linspace(0, 1, 6, dtype=m.float64).unsqueeze(1)
    inter = (alpha * real + (1 - alpha) * fake.detach()).requires_grad_(True)
    (gr,) = m.autograd.grad(Dn(inter).sum(), inter, create_graph=True)
    gp = ((gr.norm(2, dim=1) - 1) ** 2).mean()
    opt_d.zero_grad()
    gp.backward()
    d_grad = Dn[0].weight.grad.clone()
    opt_d.step()
    Dn.requires_grad_(False)
    crit(Dn(fake), ones).backward()
    return d_loss, gp, d_grad, G[0].weight.grad, Dn[0].weight.grad


PROGRAMS = {"vae": _vae_step, "policy": _policy_step, "lbfgs": _lbfgs_fit, "gan": _gan_step}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("spec", BACKENDS)
def test_user_program_like_torch(spec: str, name: str) -> None:
    # (L-BFGS's float32 line sums differ from torch's in the 5th digit after five steps)
    same(PROGRAMS[name], spec, single=3 if name == "lbfgs" else 4)


def _einsum_bad_equations(m: Any) -> Any:
    c = m.ones(2, 3)
    return tuple(
        outcome(lambda m, eq=eq: m.einsum(eq, c), m) for eq in ("ij->k", "ij->i->j", "i1->i")
    )


def test_einsum_refuses_bad_equations_like_torch() -> None:
    same(_einsum_bad_equations, "numpy")
