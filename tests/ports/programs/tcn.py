"""A temporal convolutional network, after locuslab/TCN (``tcn.py`` and the adding-problem
script): residual blocks of dilated causal ``Conv1d`` (padding ``(k-1)*d`` then a
``Chomp1d`` that cuts the right end), ``weight_norm`` on every convolution (the classic
``torch.nn.utils.weight_norm``, or ``nn.utils.parametrizations.weight_norm``), ``normal_(0,
0.01)`` initialisation, dropout, a 1x1 downsample on the residual path, and a linear head on
the last time step. The adding problem: the target is the sum of the two values marked in
the second channel. Adam with ``clip_grad_norm_``.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


def weight_norm(module, flavour):
    if flavour == "parametrizations":
        return nn.utils.parametrizations.weight_norm(module)
    with warnings.catch_warnings():  # torch deprecates the hook-based one
        warnings.simplefilter("ignore")
        return nn.utils.weight_norm(module)


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super(Chomp1d, self).__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, : -self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout,
                 flavour):  # fmt: skip
        super(TemporalBlock, self).__init__()
        self.conv1 = weight_norm(
            nn.Conv1d(n_inputs, n_outputs, kernel_size, stride=stride, padding=padding,
                      dilation=dilation), flavour)  # fmt: skip
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)

        self.conv2 = weight_norm(
            nn.Conv1d(n_outputs, n_outputs, kernel_size, stride=stride, padding=padding,
                      dilation=dilation), flavour)  # fmt: skip
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)

        self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1,
                                 self.conv2, self.chomp2, self.relu2, self.dropout2)  # fmt: skip
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()
        self.init_weights()

    def init_weights(self):
        for conv in (self.conv1, self.conv2):
            if hasattr(conv, "weight_v"):
                conv.weight_v.data.normal_(0, 0.01)
            else:
                conv.parametrizations.weight.original1.data.normal_(0, 0.01)
        if self.downsample is not None:
            self.downsample.weight.data.normal_(0, 0.01)

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Module):
    def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2, flavour="hooks"):
        super(TemporalConvNet, self).__init__()
        layers = []
        num_levels = len(num_channels)
        for i in range(num_levels):
            dilation_size = 2**i
            in_channels = num_inputs if i == 0 else num_channels[i - 1]
            out_channels = num_channels[i]
            layers += [TemporalBlock(in_channels, out_channels, kernel_size, stride=1,
                                     dilation=dilation_size,
                                     padding=(kernel_size - 1) * dilation_size,
                                     dropout=dropout, flavour=flavour)]  # fmt: skip

        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


class TCN(nn.Module):
    def __init__(self, input_size, output_size, num_channels, kernel_size, dropout, flavour):
        super(TCN, self).__init__()
        self.tcn = TemporalConvNet(input_size, num_channels, kernel_size=kernel_size,
                                   dropout=dropout, flavour=flavour)  # fmt: skip
        self.linear = nn.Linear(num_channels[-1], output_size)
        self.init_weights()

    def init_weights(self):
        self.linear.weight.data.normal_(0, 0.01)

    def forward(self, x):
        y1 = self.tcn(x)
        return self.linear(y1[:, :, -1])


def data_generator(rng, N, seq_length):
    """The adding problem: channel 0 random values, channel 1 marks two positions."""
    X_num = rng.random((N, 1, seq_length))
    X_mask = np.zeros((N, 1, seq_length))
    Y = np.zeros((N, 1))
    for i in range(N):
        positions = rng.choice(seq_length, size=2, replace=False)
        X_mask[i, 0, positions[0]] = 1
        X_mask[i, 0, positions[1]] = 1
        Y[i, 0] = X_num[i, 0, positions[0]] + X_num[i, 0, positions[1]]
    X = np.concatenate((X_num, X_mask), axis=1)
    return torch.from_numpy(X.astype(np.float32)), torch.from_numpy(Y.astype(np.float32))


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every batch's loss and each epoch's test loss."""
    parser = argparse.ArgumentParser(description="Sequence Modeling - The Adding Problem")
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--clip", type=float, default=-1)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--ksize", type=int, default=3)
    parser.add_argument("--levels", type=int, default=3)
    parser.add_argument("--seq_len", type=int, default=20)
    parser.add_argument("--lr", type=float, default=4e-3)
    parser.add_argument("--nhid", type=int, default=8)
    parser.add_argument("--optim", type=str, default="Adam")
    parser.add_argument("--weight-norm", choices=["hooks", "parametrizations"], default="hooks")
    parser.add_argument("--seed", type=int, default=1111)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    input_channels = 2
    n_classes = 1
    batch_size = args.batch_size
    seq_length = args.seq_len

    print(args)
    X_train, Y_train = data_generator(rng, 64, seq_length)
    X_test, Y_test = data_generator(rng, 32, seq_length)

    channel_sizes = [args.nhid] * args.levels
    kernel_size = args.ksize
    dropout = args.dropout
    model = TCN(input_channels, n_classes, channel_sizes, kernel_size=kernel_size,
                dropout=dropout, flavour=args.weight_norm)  # fmt: skip
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))

    lr = args.lr
    optimizer = getattr(optim, args.optim)(model.parameters(), lr=lr)
    losses = []

    def train(epoch):
        model.train()
        for i in range(0, X_train.size(0), batch_size):
            x, y = X_train[i : i + batch_size], Y_train[i : i + batch_size]
            optimizer.zero_grad()
            output = model(x)
            loss = F.mse_loss(output, y)
            loss.backward()
            if args.clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            losses.append(loss.item())

    def evaluate():
        model.eval()
        with torch.no_grad():
            output = model(X_test)
            test_loss = F.mse_loss(output, Y_test)
            print("\nTest set: Average loss: {:.6f}\n".format(test_loss.item()))
            return test_loss.item()

    for ep in range(1, args.epochs + 1):
        train(ep)
        losses.append(evaluate())
    return losses


if __name__ == "__main__":
    main()
