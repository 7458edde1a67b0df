"""A class-conditional GAN with a spectrally normalised projection discriminator (Miyato &
Koyama), in the style of the SNGAN / BigGAN-lite scripts: ``nn.utils.spectral_norm`` (or
``nn.utils.parametrizations.spectral_norm``) on every discriminator layer, whose power
iteration runs on each training forward and whose ``u``/``v`` vectors live in the state
dict; the class enters the generator by ``nn.Embedding`` concatenated to the noise and the
discriminator by the projection ``sum(embed(y) * h)``; hinge losses (``F.relu(1 - d_real)``,
``F.relu(1 + d_fake)``, ``-d_fake``), Adam with betas (0.0, 0.9) and two critic steps per
generator step. The data are 2-D Gaussian blobs, one per class.

``--double`` runs it in float64: the hinge terms and Adam with beta1 = 0 (whose first steps
are nearly ``lr * sign(grad)``) turn the last-bit differences of the two libraries' float32
power iterations into ~3e-4 differences of the losses within a few steps.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def SN(module, flavour):
    if flavour == "parametrizations":
        return nn.utils.parametrizations.spectral_norm(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nn.utils.spectral_norm(module)


class Generator(nn.Module):
    def __init__(self, nz, n_classes, hidden):
        super().__init__()
        self.label_emb = nn.Embedding(n_classes, n_classes)
        self.model = nn.Sequential(
            nn.Linear(nz + n_classes, hidden),
            nn.BatchNorm1d(hidden),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(hidden, hidden),
            nn.BatchNorm1d(hidden),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(hidden, 2),
        )

    def forward(self, noise, labels):
        gen_input = torch.cat((self.label_emb(labels), noise), -1)
        return self.model(gen_input)


class ProjectionDiscriminator(nn.Module):
    def __init__(self, n_classes, hidden, flavour):
        super().__init__()
        self.l1 = SN(nn.Linear(2, hidden), flavour)
        self.l2 = SN(nn.Linear(hidden, hidden), flavour)
        self.l_out = SN(nn.Linear(hidden, 1), flavour)
        self.l_y = SN(nn.Embedding(n_classes, hidden), flavour)

    def forward(self, x, y):
        h = F.leaky_relu(self.l1(x), 0.1)
        h = F.leaky_relu(self.l2(h), 0.1)
        output = self.l_out(h)
        output = output + torch.sum(self.l_y(y) * h, dim=1, keepdim=True)
        return output.view(-1)


def sample_real(rng, n, n_classes):
    y = rng.integers(0, n_classes, size=n)
    angle = 2 * np.pi * y / n_classes
    centers = np.stack([np.cos(angle), np.sin(angle)], 1) * 1.5
    x = centers + 0.1 * rng.normal(size=(n, 2))
    return torch.from_numpy(x).to(torch.get_default_dtype()), torch.from_numpy(y)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; each discriminator step's real and fake hinge terms and each generator step's
    loss, then the largest singular value of a normalised weight."""
    parser = argparse.ArgumentParser(description="conditional SNGAN with projection")
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--nz", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--n-dis", type=int, default=2)
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--sn", choices=["hooks", "parametrizations"], default="hooks")
    parser.add_argument("--double", action="store_true", help="torch.float64 as default dtype")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    previous_dtype = torch.get_default_dtype()
    if args.double:
        torch.set_default_dtype(torch.float64)
    try:
        return train(args)
    finally:
        torch.set_default_dtype(previous_dtype)


def train(args):

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    generator = Generator(args.nz, args.classes, args.hidden)
    discriminator = ProjectionDiscriminator(args.classes, args.hidden, args.sn)
    if args.save_init:
        torch.save({"G": generator.state_dict(), "D": discriminator.state_dict()}, args.save_init)
    if args.init:
        state = torch.load(args.init)
        generator.load_state_dict(state["G"])
        discriminator.load_state_dict(state["D"])

    optimizer_G = torch.optim.Adam(generator.parameters(), lr=args.lr, betas=(0.0, 0.9))
    optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=args.lr, betas=(0.0, 0.9))

    losses = []
    for i in range(args.iters):
        for _ in range(args.n_dis):
            real, labels = sample_real(rng, args.batch_size, args.classes)
            z = torch.randn(args.batch_size, args.nz)
            with torch.no_grad():
                fake = generator(z, labels)
            optimizer_D.zero_grad()
            loss_real = F.relu(1.0 - discriminator(real, labels)).mean()
            loss_fake = F.relu(1.0 + discriminator(fake, labels)).mean()
            d_loss = loss_real + loss_fake
            d_loss.backward()
            optimizer_D.step()
            losses += [loss_real.item(), loss_fake.item()]

        optimizer_G.zero_grad()
        z = torch.randn(args.batch_size, args.nz)
        gen_labels = torch.randint(0, args.classes, (args.batch_size,))
        g_loss = -discriminator(generator(z, gen_labels), gen_labels).mean()
        g_loss.backward()
        optimizer_G.step()
        losses.append(g_loss.item())
        print(f"[{i}] D {d_loss.item():.4f} G {g_loss.item():.4f}")

    discriminator.eval()
    with torch.no_grad():
        sigma = torch.linalg.matrix_norm(discriminator.l2.weight, ord=2)
    losses.append(sigma.item())
    return losses


if __name__ == "__main__":
    main()
