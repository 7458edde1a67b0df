"""Keyword spotting with the M5 1-D convolutional network, after the PyTorch tutorial "Speech
Command Classification with torchaudio", on small synthetic waveforms, with the training
recipe's usual extras.

The tutorial's parts: ``nn.Conv1d`` with a stride, ``nn.BatchNorm1d``, ``nn.MaxPool1d``,
``F.avg_pool1d(x, x.shape[-1])``, ``permute``, ``log_softmax(dim=2)`` and
``F.nll_loss(output.squeeze(), target)``; a ``collate_fn`` that pads variable-length
waveforms with ``pad_sequence(batch_first=True)`` and stacks label indices; Adam with weight
decay. The extras: a ``WeightedRandomSampler`` balancing the classes, a forward hook that
captures the pooled embeddings, a ``ChainedScheduler`` of ``LinearLR`` warm-up and
``MultiStepLR`` (or ``--scheduler exponential``), and a checkpoint of model, optimizer and
scheduler written to a buffer mid-training and resumed into fresh objects.
"""

from __future__ import annotations

import argparse
import io

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, WeightedRandomSampler

labels = ["yes", "no", "up", "down"]


class M5(nn.Module):
    def __init__(self, n_input=1, n_output=35, stride=16, n_channel=32):
        super().__init__()
        self.conv1 = nn.Conv1d(n_input, n_channel, kernel_size=80, stride=stride)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.pool1 = nn.MaxPool1d(4)
        self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.pool2 = nn.MaxPool1d(4)
        self.conv3 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3)
        self.bn3 = nn.BatchNorm1d(2 * n_channel)
        self.pool3 = nn.MaxPool1d(4)
        self.conv4 = nn.Conv1d(2 * n_channel, 2 * n_channel, kernel_size=3)
        self.bn4 = nn.BatchNorm1d(2 * n_channel)
        self.pool4 = nn.MaxPool1d(4)
        self.fc1 = nn.Linear(2 * n_channel, n_output)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(self.bn1(x))
        x = self.pool1(x)
        x = self.conv2(x)
        x = F.relu(self.bn2(x))
        x = self.pool2(x)
        x = self.conv3(x)
        x = F.relu(self.bn3(x))
        x = self.pool3(x)
        x = self.conv4(x)
        x = F.relu(self.bn4(x))
        x = self.pool4(x)
        x = F.avg_pool1d(x, x.shape[-1])
        x = x.permute(0, 2, 1)
        x = self.fc1(x)
        return F.log_softmax(x, dim=2)


def synthetic_commands(rng, count, sample_rate, class_weights):
    """(waveform (1, n), label) pairs: a decaying tone per word, of varying length, in noise."""
    items = []
    words = rng.choice(len(labels), count, p=np.asarray(class_weights) / sum(class_weights))
    for w in words:
        n = int(rng.integers(sample_rate * 7 // 8, sample_rate + 1))
        t = np.arange(n) / sample_rate
        tone = np.sin(2 * np.pi * (200 + 150 * w) * t) * np.exp(-3 * t)
        wave = tone + 0.3 * rng.standard_normal(n)
        waveform = torch.from_numpy(wave).to(torch.get_default_dtype())
        items.append((waveform.unsqueeze(0), labels[w]))
    return items


def label_to_index(word):
    # Return the position of the word in labels
    return torch.tensor(labels.index(word))


def index_to_label(index):
    # Return the word corresponding to the index in labels
    # This is the inverse of label_to_index
    return labels[index]


def pad_sequence(batch):
    # Make all tensor in a batch the same length by padding with zeros
    batch = [item.t() for item in batch]
    batch = torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=0.0)
    return batch.permute(0, 2, 1)


def collate_fn(batch):
    # A data tuple has the form:
    # waveform, label

    tensors, targets = [], []

    # Gather in lists, and encode labels as indices
    for waveform, label in batch:
        tensors += [waveform]
        targets += [label_to_index(label)]

    # Group the list of tensors into a batched tensor
    tensors = pad_sequence(tensors)
    targets = torch.stack(targets)

    return tensors, targets


def number_of_correct(pred, target):
    # count number of correct predictions
    return pred.squeeze().eq(target).sum().item()


def get_likely_index(tensor):
    # find most likely label index for each element in the batch
    return tensor.argmax(dim=-1)


def make_scheduler(optimizer, kind):
    if kind == "exponential":
        return optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.8)
    warmup = optim.lr_scheduler.LinearLR(optimizer, start_factor=0.25, total_iters=3)
    decay = optim.lr_scheduler.MultiStepLR(optimizer, milestones=[4, 6], gamma=0.5)
    return optim.lr_scheduler.ChainedScheduler([warmup, decay])


def main(argv: list[str] | None = None) -> list[float]:
    """Train, checkpoint and resume; return each batch's loss and learning rate, the hooked
    embeddings' norms, and the test loss and accuracy."""
    parser = argparse.ArgumentParser(description="M5 keyword spotting")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--train-size", type=int, default=24)
    parser.add_argument("--sample-rate", type=int, default=8000)
    parser.add_argument("--n-channel", type=int, default=8)
    parser.add_argument("--scheduler", choices=["chained", "exponential"], default="chained")
    parser.add_argument("--checkpoint-after", type=int, default=1, help="epochs before resuming")
    parser.add_argument("--double", action="store_true", help="torch.float64 as default dtype")
    parser.add_argument("--seed", type=int, default=0)
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
    train_set = synthetic_commands(rng, args.train_size, args.sample_rate, [4, 2, 1, 1])
    test_set = synthetic_commands(rng, 8, args.sample_rate, [1, 1, 1, 1])

    # Balance the classes: each example weighs the inverse of its class's frequency.
    targets = torch.stack([label_to_index(label) for _, label in train_set])
    class_count = torch.bincount(targets, minlength=len(labels)).float()
    sample_weights = (1.0 / class_count)[targets]
    sampler = WeightedRandomSampler(sample_weights, num_samples=len(train_set), replacement=True)
    train_loader = DataLoader(
        train_set, batch_size=args.batch_size, sampler=sampler, collate_fn=collate_fn
    )
    test_loader = DataLoader(test_set, batch_size=args.batch_size, shuffle=False,
                             collate_fn=collate_fn)  # fmt: skip

    model = M5(n_input=1, n_output=len(labels), n_channel=args.n_channel)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=0.0001)
    scheduler = make_scheduler(optimizer, args.scheduler)

    out: list[float] = []
    embeddings = []

    def save_embedding(module, inputs, output):
        embeddings.append(inputs[0].detach().squeeze(1))

    for epoch in range(1, args.epochs + 1):
        if epoch == args.checkpoint_after + 1:
            # checkpoint, then resume into fresh objects as a restarted job would
            buffer = io.BytesIO()
            torch.save({"epoch": epoch, "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict()}, buffer)  # fmt: skip
            buffer.seek(0)
            checkpoint = torch.load(buffer)
            model = M5(n_input=1, n_output=len(labels), n_channel=args.n_channel)
            model.load_state_dict(checkpoint["model"])
            optimizer = optim.Adam(model.parameters(), lr=0.01, weight_decay=0.0001)
            optimizer.load_state_dict(checkpoint["optimizer"])
            scheduler = make_scheduler(optimizer, args.scheduler)
            scheduler.load_state_dict(checkpoint["scheduler"])
        model.train()
        for batch_idx, (data, target) in enumerate(train_loader):
            output = model(data)
            # negative log-likelihood for a tensor of size (batch x 1 x n_output)
            loss = F.nll_loss(output.squeeze(), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            print(f"Train Epoch: {epoch} [{batch_idx}]\tLoss: {loss.item():.6f}")
            out += [loss.item(), scheduler.get_last_lr()[0]]

        model.eval()
        handle = model.fc1.register_forward_hook(save_embedding)
        correct = 0
        test_loss = 0.0
        with torch.no_grad():
            for data, target in test_loader:
                output = model(data)
                test_loss += F.nll_loss(output.squeeze(), target, reduction="sum").item()
                pred = get_likely_index(output)
                correct += number_of_correct(pred, target)
        handle.remove()
        print(f"\nTest Epoch: {epoch}\tAccuracy: {correct}/{len(test_loader.dataset)}\n")
        out += [test_loss, float(correct)]
    out.extend(torch.cat(embeddings).norm(dim=1).tolist())
    return out


if __name__ == "__main__":
    main()
