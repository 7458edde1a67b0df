"""Hinton's Forward-Forward algorithm, after pytorch/examples ``mnist_forward_forward``, on
small synthetic digit-like data.

Each ``nn.Linear`` subclass trains itself with its own Adam (made in ``__init__``, before the
weights are loaded) on a local "goodness" loss, ``log(1 + exp(...))`` of the mean squared
activations of positive and negative data; labels are overlaid on the input by
``x_[:, :10] *= 0.0`` and ``x_[range(n), y] = x.max()``; inputs are normalised by
``x.norm(2, 1, keepdim=True)``; the layers live in a plain Python list; ``Layer.train`` and
``Net.train`` shadow ``nn.Module.train`` as in the example; prediction sums the goodness of
every layer with Python's ``sum`` and takes the best label.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.optim import Adam
from torch.utils.data import DataLoader, TensorDataset

args = None  # the example's layers read the global command-line arguments


def overlay_y_on_x(x, y):
    """Replace the first 10 pixels of data [x] with one-hot-encoded label [y]"""
    x_ = x.clone()
    x_[:, :10] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


class Net(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [Layer(dims[d], dims[d + 1])]

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        goodness_per_label = torch.cat(goodness_per_label, 1)
        return goodness_per_label.argmax(1)

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for i, layer in enumerate(self.layers):
            print("training layer: ", i)
            h_pos, h_neg = layer.train(h_pos, h_neg)


class Layer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = Adam(self.parameters(), lr=args.lr)
        self.threshold = args.threshold
        self.num_epochs = args.epochs
        self.losses = []

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg):
        for i in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            # The following loss pushes pos (neg) samples to
            # values larger (smaller) than the self.threshold.
            loss = torch.log(
                1 + torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))
            ).mean()
            self.opt.zero_grad()
            # this backward just compute the derivative and hence
            # is not considered backpropagation.
            loss.backward()
            self.opt.step()
            self.losses.append(loss.item())
            if i % args.log_interval == 0:
                print("Loss: ", loss.item())
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


def synthetic_digits(rng, count, dim):
    """Ten noisy prototypes in [0, 1], normalised as MNIST's (0.1307, 0.3081), flattened."""
    prototypes = rng.random((10, dim))
    y = rng.integers(0, 10, count)
    x = np.clip(prototypes[y] + 0.3 * rng.standard_normal((count, dim)), 0.0, 1.0)
    return ((x - 0.1307) / 0.3081).astype(np.float32), y


def main(argv: list[str] | None = None) -> list[float]:
    """Train; return every layer's losses, then the train and test errors."""
    global args
    parser = argparse.ArgumentParser(description="Forward-Forward on synthetic digits")
    parser.add_argument("--epochs", type=int, default=12, help="training epochs per layer")
    parser.add_argument("--lr", type=float, default=0.03)
    parser.add_argument("--threshold", type=float, default=2)
    parser.add_argument("--train-size", type=int, default=200)
    parser.add_argument("--test-size", type=int, default=100)
    parser.add_argument("--dims", type=int, nargs="+", default=[64, 48, 48])
    parser.add_argument("--log-interval", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    x_train, y_train = synthetic_digits(rng, args.train_size, args.dims[0])
    x_test, y_test = synthetic_digits(rng, args.test_size, args.dims[0])
    train_loader = DataLoader(
        TensorDataset(torch.from_numpy(x_train), torch.from_numpy(y_train)),
        batch_size=args.train_size, shuffle=True,
    )  # fmt: skip
    test_loader = DataLoader(
        TensorDataset(torch.from_numpy(x_test), torch.from_numpy(y_test)),
        batch_size=args.test_size, shuffle=False,
    )  # fmt: skip

    net = Net(args.dims)
    if args.init:
        weights = torch.load(args.init)
        for i, layer in enumerate(net.layers):
            layer.load_state_dict(weights[f"layer{i}"])
    if args.save_init:
        torch.save({f"layer{i}": layer.state_dict() for i, layer in enumerate(net.layers)},
                   args.save_init)  # fmt: skip
    x, y = next(iter(train_loader))
    x_pos = overlay_y_on_x(x, y)
    rnd = torch.randperm(x.size(0))
    x_neg = overlay_y_on_x(x, y[rnd])

    net.train(x_pos, x_neg)

    train_error = 1.0 - net.predict(x).eq(y).float().mean().item()
    print("train error:", train_error)

    x_te, y_te = next(iter(test_loader))
    test_error = 1.0 - net.predict(x_te).eq(y_te).float().mean().item()
    print("test error:", test_error)
    losses = [loss for layer in net.layers for loss in layer.losses]
    return losses + [train_error, test_error]


if __name__ == "__main__":
    main()
