"""Text classification with a Transformer encoder, in the style of the PyTorch tutorials.

A synthetic news-topic corpus stands in for AG_NEWS: each document is a variable-length
sequence of word ids, and a few topic words decide its label. Documents are padded per batch
by a ``collate_fn``; padding is masked in attention and in the mean pooling. ``--arch bag``
trains the tutorial's ``EmbeddingBag`` baseline instead.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

PAD = 0


class PositionalEncoding(nn.Module):
    """Adds the sinusoidal position encodings of "Attention Is All You Need" (batch first)."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000) -> None:
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe = torch.zeros(1, max_len, d_model)
        pe[0, :, 0::2] = torch.sin(position * div_term)
        pe[0, :, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x: (batch, seq_len, d_model)."""
        x = x + self.pe[:, : x.size(1)]
        return self.dropout(x)


class TransformerClassifier(nn.Module):
    def __init__(
        self,
        ntoken: int,
        d_model: int,
        nhead: int,
        d_hid: int,
        nlayers: int,
        num_class: int,
        dropout: float = 0.1,
        emb_dropout: float = 0.1,
    ) -> None:
        super().__init__()
        self.d_model = d_model
        self.embedding = nn.Embedding(ntoken, d_model, padding_idx=PAD)
        self.pos_encoder = PositionalEncoding(d_model, emb_dropout)
        encoder_layers = nn.TransformerEncoderLayer(
            d_model, nhead, d_hid, dropout, batch_first=True
        )
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers)
        self.classifier = nn.Linear(d_model, num_class)
        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.classifier.bias.data.zero_()
        self.classifier.weight.data.uniform_(-initrange, initrange)

    def forward(self, text: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """text: (batch, seq_len) word ids; lengths: (batch,). Returns (batch, num_class)."""
        padding_mask = torch.arange(text.size(1)).unsqueeze(0) >= lengths.unsqueeze(1)
        x = self.embedding(text) * math.sqrt(self.d_model)
        x = self.pos_encoder(x)
        x = self.transformer_encoder(x, src_key_padding_mask=padding_mask)
        keep = (~padding_mask).unsqueeze(-1).type_as(x)
        pooled = (x * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)
        return self.classifier(pooled)


class TextClassificationModel(nn.Module):
    """The tutorial's baseline: the mean of each document's word embeddings, then a linear."""

    def __init__(self, vocab_size: int, embed_dim: int, num_class: int) -> None:
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        # The documents' words back to back, and where each document starts.
        words = text[torch.arange(text.size(1)).unsqueeze(0) < lengths.unsqueeze(1)]
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths[:-1]]).cumsum(dim=0)
        embedded = self.embedding(words, offsets)
        return self.fc(embedded)


class TopicDataset(Dataset):
    """Documents of random words where ``topic_words`` topic-specific ids reveal the label."""

    def __init__(self, rng: np.random.Generator, n: int, vocab: int, num_class: int) -> None:
        per_class = (vocab - 1) // (2 * num_class)
        self.items = []
        for _ in range(n):
            label = int(rng.integers(num_class))
            length = int(rng.integers(4, 17))
            words = rng.integers(1 + num_class * per_class, vocab, size=length)
            topic = 1 + label * per_class + rng.integers(per_class, size=max(1, length // 3))
            words[rng.choice(length, size=topic.size, replace=False)] = topic
            self.items.append((label, words.astype(np.int64)))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, idx: int):
        return self.items[idx]


def collate_batch(batch):
    labels = torch.tensor([label for label, _ in batch], dtype=torch.int64)
    lengths = torch.tensor([len(words) for _, words in batch], dtype=torch.int64)
    text = torch.full((len(batch), int(lengths.max())), PAD, dtype=torch.int64)
    for i, (_, words) in enumerate(batch):
        text[i, : len(words)] = torch.from_numpy(words)
    return labels, text, lengths


def warmup_lambda(warmup_steps: int):
    def lr_lambda(step: int) -> float:
        return min(1.0, (step + 1) / warmup_steps)

    return lr_lambda


def train(model, dataloader, criterion, optimizer, scheduler, args) -> list[float]:
    model.train()
    losses = []
    total_acc, total_count = 0, 0
    start_time = time.time()
    for step, (label, text, lengths) in enumerate(dataloader):
        if step == args.steps:
            break
        optimizer.zero_grad()
        predicted_label = model(text, lengths)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
        if (step + 1) % args.log_interval == 0:
            elapsed = time.time() - start_time
            print(
                f"| {step + 1:5d} batches | lr {scheduler.get_last_lr()[0]:.5f} | "
                f"ms/batch {elapsed * 1000 / args.log_interval:5.2f} | loss {loss.item():6.4f} | "
                f"accuracy {total_acc / total_count:8.3f}"
            )
            total_acc, total_count = 0, 0
            start_time = time.time()
    return losses


def evaluate(model, dataloader, criterion) -> tuple[float, float]:
    model.eval()
    total_loss, total_acc, total_count = 0.0, 0, 0
    with torch.no_grad():
        for label, text, lengths in dataloader:
            predicted_label = model(text, lengths)
            total_loss += criterion(predicted_label, label).item() * label.size(0)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_loss / total_count, total_acc / total_count


def build(args: argparse.Namespace):
    """The model, its AdamW optimizer and the warmup schedule."""
    if args.arch == "bag":
        model = TextClassificationModel(args.vocab, args.d_model, args.num_class)
    else:
        model = TransformerClassifier(
            args.vocab,
            args.d_model,
            args.nhead,
            args.d_hid,
            args.nlayers,
            args.num_class,
            args.dropout,
            args.emb_dropout,
        )
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_lambda(args.warmup))
    return model, optimizer, scheduler


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Transformer encoder text classification")
    parser.add_argument(
        "--arch",
        choices=["transformer", "bag"],
        default="transformer",
        help="Transformer encoder, or the EmbeddingBag baseline",
    )
    parser.add_argument("--vocab", type=int, default=200, help="vocabulary size")
    parser.add_argument("--num-class", type=int, default=4, help="number of topics")
    parser.add_argument("--ntrain", type=int, default=256, help="training documents")
    parser.add_argument("--ntest", type=int, default=64, help="test documents")
    parser.add_argument("--d-model", type=int, default=32, help="embedding dimension")
    parser.add_argument("--nhead", type=int, default=4, help="attention heads")
    parser.add_argument("--d-hid", type=int, default=64, help="feedforward dimension")
    parser.add_argument("--nlayers", type=int, default=2, help="encoder layers")
    parser.add_argument("--dropout", type=float, default=0.1, help="encoder layer dropout")
    parser.add_argument("--emb-dropout", type=float, default=0.1, help="embedding dropout")
    parser.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    parser.add_argument("--weight-decay", type=float, default=0.01, help="AdamW weight decay")
    parser.add_argument("--warmup", type=int, default=4, help="linear warmup steps")
    parser.add_argument("--label-smoothing", type=float, default=0.1, help="label smoothing")
    parser.add_argument("--clip", type=float, default=1.0, help="gradient norm clipping")
    parser.add_argument("--epochs", type=int, default=1, help="epochs")
    parser.add_argument("--steps", type=int, default=12, help="training batches per epoch")
    parser.add_argument("--batch-size", type=int, default=16, help="batch size")
    parser.add_argument(
        "--resume-each-epoch",
        action="store_true",
        help="checkpoint model, optimizer and scheduler after each epoch and resume from it",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--log-interval", type=int, default=4, help="report interval")
    parser.add_argument(
        "--save-init", type=str, default=None, help="save the initial state_dict here"
    )
    parser.add_argument("--init", type=str, default=None, help="initial state_dict to load")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[float]:
    """Train and test the classifier; the training losses then the test loss."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    train_set = TopicDataset(rng, args.ntrain, args.vocab, args.num_class)
    test_set = TopicDataset(rng, args.ntest, args.vocab, args.num_class)
    train_loader = DataLoader(
        train_set, batch_size=args.batch_size, shuffle=True, collate_fn=collate_batch
    )
    test_loader = DataLoader(
        test_set, batch_size=args.batch_size, shuffle=False, collate_fn=collate_batch
    )

    model, optimizer, scheduler = build(args)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)

    losses: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint_path = os.path.join(tmp, "checkpoint.pt")
        for epoch in range(1, args.epochs + 1):
            epoch_start_time = time.time()
            losses += train(model, train_loader, criterion, optimizer, scheduler, args)
            test_loss, accu = evaluate(model, test_loader, criterion)
            print("-" * 59)
            print(
                f"| end of epoch {epoch:3d} | time: {time.time() - epoch_start_time:5.2f}s | "
                f"test loss {test_loss:6.4f} | test accuracy {accu:8.3f}"
            )
            print("-" * 59)
            if args.resume_each_epoch and epoch < args.epochs:
                torch.save(
                    {
                        "epoch": epoch,
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(),
                    },
                    checkpoint_path,
                )
                # Continue as a fresh process resuming from the checkpoint would.
                model, optimizer, scheduler = build(args)
                checkpoint = torch.load(checkpoint_path)
                model.load_state_dict(checkpoint["model"])
                optimizer.load_state_dict(checkpoint["optimizer"])
                scheduler.load_state_dict(checkpoint["scheduler"])
                print(f"| resumed from the checkpoint of epoch {checkpoint['epoch']}")
    return [*losses, test_loss]


if __name__ == "__main__":
    main()
