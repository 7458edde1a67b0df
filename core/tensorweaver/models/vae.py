"""A variational autoencoder (Kingma and Welling 2014) with MLP encoder and decoder."""

from __future__ import annotations

import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.tensor import Tensor


class VAE(nn.Module):
    """Encodes ``(N, in_features)`` inputs in ``[0, 1]`` to a diagonal Gaussian over
    ``latent_features`` dimensions and decodes a sample of it to Bernoulli logits.

    ``forward`` returns ``(logits, mu, logvar)``; train it with :func:`elbo_loss`.
    """

    def __init__(self, in_features: int, hidden_features: int = 128, latent_features: int = 8):
        super().__init__()
        self.latent_features = latent_features
        self.encoder = nn.Sequential(nn.Linear(in_features, hidden_features), nn.ReLU())
        self.mu = nn.Linear(hidden_features, latent_features)
        self.logvar = nn.Linear(hidden_features, latent_features)
        self.decoder = nn.Sequential(
            nn.Linear(latent_features, hidden_features),
            nn.ReLU(),
            nn.Linear(hidden_features, in_features),
        )

    def encode(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """The posterior's mean and log-variance, each ``(N, latent_features)``."""
        h = self.encoder(x)
        return self.mu(h), self.logvar(h)

    def reparameterize(self, mu: Tensor, logvar: Tensor) -> Tensor:
        """A differentiable sample ``mu + sigma * eps``, ``eps ~ N(0, I)`` (in eval mode too:
        the loss is then the same one-sample ELBO estimate; ``encode`` gives the mean)."""
        return mu + (0.5 * logvar).exp() * tw.randn_like(mu)

    def decode(self, z: Tensor) -> Tensor:
        """Bernoulli logits ``(N, in_features)`` for latent codes ``z``."""
        return self.decoder(z)

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        mu, logvar = self.encode(x)
        return self.decode(self.reparameterize(mu, logvar)), mu, logvar

    def sample(self, n: int) -> Tensor:
        """``n`` new inputs (probabilities) decoded from the standard normal prior."""
        weight = self.mu.weight
        with tw.no_grad():
            z = tw.randn(n, self.latent_features, device=weight.device, dtype=weight.dtype)
            return F.sigmoid(self.decode(z))


def elbo_loss(output: tuple[Tensor, Tensor, Tensor], target: Tensor, beta: float = 1.0) -> Tensor:
    """The negative evidence lower bound per sample, averaged over the batch: the Bernoulli
    reconstruction loss summed over features plus ``beta`` times KL(q(z|x) || N(0, I)).

    ``output`` is what :class:`VAE` returns; ``target`` the inputs, shaped like the logits.
    """
    logits, mu, logvar = output
    if tuple(logits.shape) != tuple(target.shape):
        raise ValueError(
            f"elbo_loss: target {tuple(target.shape)} must have the reconstruction's shape "
            f"{tuple(logits.shape)}; train the VAE on (X, X)"
        )
    batch = logits.shape[0]
    reconstruction = F.binary_cross_entropy_with_logits(logits, target, reduction="sum")
    kl = -0.5 * (1 + logvar - mu * mu - logvar.exp()).sum()
    return (reconstruction + beta * kl) / batch
