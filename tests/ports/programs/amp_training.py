"""Automatic mixed precision on the CPU, after the PyTorch "Automatic Mixed Precision" recipe:
``torch.autocast(device_type="cpu", dtype=torch.bfloat16)`` around the forward pass and the
loss, ``torch.amp.GradScaler("cpu")`` with ``scale(loss).backward()``, ``unscale_`` before
``clip_grad_norm_``, ``scaler.step`` / ``scaler.update``, the scaler's state saved in a
checkpoint with the model's and optimizer's and restored into fresh objects, and a final
evaluation under ``torch.autocast`` too. A convolutional front end (``Conv1d``, the autocast
lower-precision list) feeds a ``LayerNorm`` and ``log_softmax`` (float32 list) so that the
dtypes change inside the model, as in a real network.

The scaler runs with ``enabled=False`` for bfloat16 (the recipe's advice: bfloat16 has
float32's range) unless ``--scaler`` turns it on; ``--dtype float32`` is the baseline.
"""

from __future__ import annotations

import argparse
import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, in_channels, hidden, n_classes):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, hidden, kernel_size=3, padding=1)
        self.norm = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, hidden)
        self.fc2 = nn.Linear(hidden, n_classes)

    def forward(self, x):
        h = F.relu(self.conv(x))  # (N, hidden, T), low precision under autocast
        h = h.mean(dim=2)
        h = self.norm(h)
        h = F.gelu(self.fc1(h))
        return self.fc2(h)


def make_data(rng, n, channels, length, n_classes):
    y = rng.integers(0, n_classes, size=n)
    t = np.arange(length) / length
    freq = 1.0 + y[:, None, None]
    x = np.sin(2 * np.pi * freq * t) + 0.3 * rng.normal(size=(n, channels, length))
    return torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every step's loss, the scale after each step, and the evaluation loss after
    resuming from the checkpoint."""
    parser = argparse.ArgumentParser(description="AMP on CPU")
    parser.add_argument("--dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    parser.add_argument("--scaler", action="store_true", help="enable the GradScaler")
    parser.add_argument("--channels", type=int, default=3)
    parser.add_argument("--length", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--classes", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    device = "cpu"
    dtype = getattr(torch, args.dtype)
    use_amp = args.dtype != "float32"

    net = Net(args.channels, args.hidden, args.classes).to(device)
    if args.save_init:
        torch.save(net.state_dict(), args.save_init)
    if args.init:
        net.load_state_dict(torch.load(args.init))
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9)
    scaler = torch.amp.GradScaler(device, init_scale=2.0**10, enabled=use_amp and args.scaler)
    loss_fn = nn.CrossEntropyLoss()

    losses = []
    for step in range(args.steps):
        input, target = make_data(rng, args.batch_size, args.channels, args.length, args.classes)
        with torch.autocast(device_type=device, dtype=dtype, enabled=use_amp):
            output = net(input)
            loss = loss_fn(output, target)
        assert loss.dtype is torch.float32
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses += [loss.item(), scaler.get_scale() if scaler.is_enabled() else 1.0]
        print(f"step {step}: loss {loss.item():.4f} output dtype {output.dtype}")

    checkpoint = {"model": net.state_dict(), "optimizer": opt.state_dict(),
                  "scaler": scaler.state_dict()}  # fmt: skip
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer)
    buffer.seek(0)

    net2 = Net(args.channels, args.hidden, args.classes)
    opt2 = torch.optim.SGD(net2.parameters(), lr=args.lr, momentum=0.9)
    scaler2 = torch.amp.GradScaler(device, enabled=use_amp and args.scaler)
    checkpoint = torch.load(buffer, weights_only=True)
    net2.load_state_dict(checkpoint["model"])
    opt2.load_state_dict(checkpoint["optimizer"])
    scaler2.load_state_dict(checkpoint["scaler"])
    net2.eval()
    with torch.no_grad(), torch.autocast(device_type=device, dtype=dtype, enabled=use_amp):
        input, target = make_data(rng, 32, args.channels, args.length, args.classes)
        output = net2(input)
        losses.append(loss_fn(output, target).item())
        losses.append((output.argmax(1) == target).float().mean().item())
    losses.append(scaler2.get_scale() if scaler2.is_enabled() else 1.0)
    return losses


if __name__ == "__main__":
    main()
