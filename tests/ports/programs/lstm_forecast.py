"""Time-series forecasting with an LSTM, as in the many "LSTM for time series in PyTorch"
tutorials: a min-max scaled series cut into sliding windows with ``Tensor.unfold``, an
``nn.LSTM(batch_first=True)`` with explicit zero initial states and a linear head on the
last step, ``nn.HuberLoss``, gradient accumulation over several mini-batches (the loss
divided by the accumulation steps), ``clip_grad_value_``, AdamW under
``CosineAnnealingWarmRestarts`` stepped with fractional epochs, early stopping that keeps
``copy.deepcopy(model.state_dict())``, and an autoregressive multi-step forecast that feeds
each prediction back with ``torch.cat``.

The series is synthetic: two seasonalities, a trend and noise.
"""

from __future__ import annotations

import argparse
import copy

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class LSTMForecaster(nn.Module):
    def __init__(self, input_size=1, hidden_size=16, num_layers=2, dropout=0.0):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True,
                            dropout=dropout)  # fmt: skip
        self.fc = nn.Linear(hidden_size, 1)

    def forward(self, x):
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size, device=x.device)
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size, device=x.device)
        out, _ = self.lstm(x, (h0, c0))
        return self.fc(out[:, -1, :])


def make_series(rng, n):
    t = np.arange(n)
    series = np.sin(2 * np.pi * t / 12) + 0.5 * np.sin(2 * np.pi * t / 5) + 0.01 * t
    return (series + 0.1 * rng.normal(size=n)).astype(np.float32)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every optimizer step's loss and learning rate, each epoch's validation loss,
    the best epoch, and an autoregressive forecast."""
    parser = argparse.ArgumentParser(description="LSTM forecaster")
    parser.add_argument("--length", type=int, default=80)
    parser.add_argument("--window", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--accumulate", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--horizon", type=int, default=4)
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    series = torch.from_numpy(make_series(rng, args.length))
    split = int(len(series) * 0.8)
    lo, hi = series[:split].min(), series[:split].max()
    scaled = (series - lo) / (hi - lo)

    windows = scaled.unfold(0, args.window + 1, 1)  # (N, window + 1)
    x, y = windows[:, :-1].unsqueeze(-1), windows[:, -1:]
    n_train = split - args.window
    train_loader = DataLoader(TensorDataset(x[:n_train], y[:n_train]),
                              batch_size=args.batch_size, shuffle=True)  # fmt: skip
    x_val, y_val = x[n_train:], y[n_train:]

    model = LSTMForecaster(hidden_size=args.hidden)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    criterion = nn.HuberLoss(delta=0.5)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-3)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=1, T_mult=2,
                                                                     eta_min=1e-4)  # fmt: skip

    losses = []
    best_val, best_state, best_epoch = float("inf"), None, -1
    iters = len(train_loader)
    for epoch in range(args.epochs):
        model.train()
        optimizer.zero_grad()
        running = 0.0
        for i, (xb, yb) in enumerate(train_loader):
            loss = criterion(model(xb), yb) / args.accumulate
            loss.backward()
            running += loss.item()
            if (i + 1) % args.accumulate == 0 or i + 1 == iters:
                nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
                optimizer.step()
                optimizer.zero_grad()
                scheduler.step(epoch + (i + 1) / iters)
                losses += [running, scheduler.get_last_lr()[0]]
                running = 0.0

        model.eval()
        with torch.no_grad():
            val_loss = criterion(model(x_val), y_val).item()
        losses.append(val_loss)
        if val_loss < best_val:
            best_val, best_state, best_epoch = val_loss, copy.deepcopy(model.state_dict()), epoch
        print(f"epoch {epoch}: val {val_loss:.5f}")

    model.load_state_dict(best_state)
    model.eval()
    with torch.no_grad():
        context = x_val[:1]
        forecast = []
        for _ in range(args.horizon):
            pred = model(context)
            forecast.append(pred.item() * (hi - lo).item() + lo.item())
            context = torch.cat([context[:, 1:, :], pred.unsqueeze(-1)], dim=1)
    return losses + [float(best_epoch)] + forecast


if __name__ == "__main__":
    main()
