"""Variational autoencoder, after pytorch/examples ``vae/main.py``.

The digits are a synthetic stand-in: noisy copies of ten fixed 28x28 stroke templates in
[0, 1], so the run needs no download and the model has structure to encode.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F


class VAE(nn.Module):
    def __init__(self, hidden=400, latent=20):
        super(VAE, self).__init__()

        self.fc1 = nn.Linear(784, hidden)
        self.fc21 = nn.Linear(hidden, latent)
        self.fc22 = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, 784)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 784))
        z = self.reparameterize(mu, logvar)
        return self.decode(z), mu, logvar


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 784), reduction="sum")

    # see Appendix B from VAE paper:
    # Kingma and Welling. Auto-Encoding Variational Bayes. ICLR, 2014
    # https://arxiv.org/abs/1312.6114
    # 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())

    return BCE + KLD


def synthetic_digits(rng, templates, count):
    """``count`` noisy copies (N, 1, 28, 28) float32 in [0, 1] of ``templates``, and labels."""
    labels = rng.integers(0, len(templates), size=count)
    noise = rng.normal(0.0, 0.2, size=(count, 28, 28))
    images = np.clip(templates[labels] + noise, 0.0, 1.0)
    return images[:, None].astype(np.float32), labels.astype(np.int64)


def train(args, model, device, train_loader, optimizer, epoch, losses):
    model.train()
    train_loss = 0
    for batch_idx, (data, _) in enumerate(train_loader):
        data = data.to(device)
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
        losses.append(loss.item())
        if batch_idx % args.log_interval == 0:
            print(
                "Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                    epoch,
                    batch_idx * len(data),
                    len(train_loader.dataset),
                    100.0 * batch_idx / len(train_loader),
                    loss.item() / len(data),
                )
            )

    print(
        "====> Epoch: {} Average loss: {:.4f}".format(epoch, train_loss / len(train_loader.dataset))
    )


def test(args, model, device, test_loader, epoch):
    model.eval()
    test_loss = 0
    comparison = None
    with torch.no_grad():
        for i, (data, _) in enumerate(test_loader):
            data = data.to(device)
            recon_batch, mu, logvar = model(data)
            test_loss += loss_function(recon_batch, data, mu, logvar).item()
            if i == 0:
                n = min(data.size(0), 8)
                comparison = torch.cat([data[:n], recon_batch.view(args.batch_size, 1, 28, 28)[:n]])

    test_loss /= len(test_loader.dataset)
    print("====> Test set loss: {:.4f}".format(test_loss))
    # pytorch/examples saves this grid as an image; its statistics stand in here.
    grid = comparison.cpu().numpy()
    print("reconstruction grid {}: mean {:.4f}".format(grid.shape, grid.mean()))
    return test_loss


def main(argv: list[str] | None = None) -> list[float]:
    """Train and test; return every training step's loss and each epoch's test loss."""
    parser = argparse.ArgumentParser(description="VAE MNIST Example")
    parser.add_argument("--batch-size", type=int, default=32, metavar="N")
    parser.add_argument("--steps", type=int, default=6, metavar="N", help="batches per epoch")
    parser.add_argument("--epochs", type=int, default=2, metavar="N")
    parser.add_argument("--hidden", type=int, default=128, metavar="N")
    parser.add_argument("--lr", type=float, default=1e-3, metavar="LR")
    parser.add_argument("--no-cuda", action="store_true", default=False)
    parser.add_argument("--seed", type=int, default=1, metavar="S")
    parser.add_argument("--log-interval", type=int, default=2, metavar="N")
    parser.add_argument("--save-init", type=str, default=None, help="save the initial state_dict")
    parser.add_argument("--init", type=str, default=None, help="state_dict to start from")
    args = parser.parse_args(argv)
    args.cuda = not args.no_cuda and torch.cuda.is_available()

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    device = torch.device("cuda" if args.cuda else "cpu")

    templates = (rng.random((10, 28, 28)) > 0.75).astype(np.float64)
    train_images, train_labels = synthetic_digits(rng, templates, args.steps * args.batch_size)
    test_images, test_labels = synthetic_digits(rng, templates, 2 * args.batch_size)
    train_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(
            torch.from_numpy(train_images), torch.from_numpy(train_labels)
        ),
        batch_size=args.batch_size,
        shuffle=True,
    )
    test_loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(test_images), torch.tensor(test_labels)),
        batch_size=args.batch_size,
        shuffle=False,
    )

    model = VAE(hidden=args.hidden).to(device)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)

    losses = []
    for epoch in range(1, args.epochs + 1):
        train(args, model, device, train_loader, optimizer, epoch, losses)
        losses.append(test(args, model, device, test_loader, epoch))
        with torch.no_grad():
            sample = torch.randn(64, 20).to(device)
            sample = model.decode(sample).cpu()
            print(
                "samples {}: mean {:.4f}".format(
                    tuple(sample.view(64, 1, 28, 28).shape), sample.mean().item()
                )
            )
    return losses


if __name__ == "__main__":
    main()
