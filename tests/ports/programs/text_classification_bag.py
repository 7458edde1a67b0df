"""Text classification with ``nn.EmbeddingBag``, after the PyTorch tutorial "Text
classification with the torchtext library": a ``collate_batch`` that concatenates each
batch's token ids into one 1-D tensor with ``offsets`` (``cumsum`` of the lengths), an
EmbeddingBag (mean by default; sum, max, or per-sample weights as options) and a linear
layer initialised with ``uniform_``, SGD with lr 5, ``clip_grad_norm_(0.1)``, StepLR, and
accuracy on a validation split (``random_split`` replaced by a ``randperm`` Subset, as
``random_split`` draws from a generator the harness cannot replay).

The corpus is synthetic: sentences whose words come mostly from their class's vocabulary.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Subset


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class, mode="mean"):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False, mode=mode)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets, per_sample_weights=None):
        embedded = self.embedding(text, offsets, per_sample_weights=per_sample_weights)
        return self.fc(embedded)


def make_corpus(rng, n, num_class, vocab_size):
    """(label, token ids) pairs; each class prefers its own slice of the vocabulary."""
    per_class = (vocab_size - 1) // num_class
    data = []
    for _ in range(n):
        label = int(rng.integers(0, num_class))
        length = int(rng.integers(3, 9))
        own = 1 + label * per_class + rng.integers(0, per_class, size=length)
        other = rng.integers(1, vocab_size, size=length)
        tokens = np.where(rng.random(length) < 0.7, own, other)
        data.append((label, tokens.tolist()))
    return data


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every batch's loss, each epoch's validation accuracy, and the test accuracy."""
    parser = argparse.ArgumentParser(description="EmbeddingBag text classification")
    parser.add_argument("--mode", choices=["mean", "sum", "max"], default="mean")
    parser.add_argument("--weighted", action="store_true", help="per-sample weights (sum mode)")
    parser.add_argument("--vocab", type=int, default=40)
    parser.add_argument("--emsize", type=int, default=16)
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=5.0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    device = torch.device("cpu")

    def collate_batch(batch):
        label_list, text_list, offsets = [], [], [0]
        for _label, _text in batch:
            label_list.append(_label)
            processed_text = torch.tensor(_text, dtype=torch.int64)
            text_list.append(processed_text)
            offsets.append(processed_text.size(0))
        label_list = torch.tensor(label_list, dtype=torch.int64)
        offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
        text_list = torch.cat(text_list)
        return label_list.to(device), text_list.to(device), offsets.to(device)

    train_iter = make_corpus(rng, 96, args.classes, args.vocab)
    test_iter = make_corpus(rng, 32, args.classes, args.vocab)
    # term frequency of each token in the training set, used as per-sample weights
    counts = np.bincount(np.concatenate([t for _, t in train_iter]), minlength=args.vocab)
    idf = torch.tensor(np.log(len(train_iter) / (1.0 + counts)), dtype=torch.float32)

    model = TextClassificationModel(args.vocab, args.emsize, args.classes, args.mode).to(device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))

    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    total_accu = None
    num_train = int(len(train_iter) * 0.75)
    order = torch.randperm(len(train_iter)).tolist()
    split_train_ = Subset(train_iter, order[:num_train])
    split_valid_ = Subset(train_iter, order[num_train:])

    train_dataloader = DataLoader(split_train_, batch_size=args.batch_size, shuffle=True,
                                  collate_fn=collate_batch)  # fmt: skip
    valid_dataloader = DataLoader(split_valid_, batch_size=args.batch_size, shuffle=False,
                                  collate_fn=collate_batch)  # fmt: skip
    test_dataloader = DataLoader(test_iter, batch_size=args.batch_size, shuffle=False,
                                 collate_fn=collate_batch)  # fmt: skip

    def weights_for(text):
        return idf[text] if args.weighted else None

    losses = []

    def train(dataloader):
        model.train()
        total_acc, total_count = 0, 0
        for _idx, (label, text, offsets) in enumerate(dataloader):
            optimizer.zero_grad()
            predicted_label = model(text, offsets, weights_for(text))
            loss = criterion(predicted_label, label)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
            losses.append(loss.item())

    def evaluate(dataloader):
        model.eval()
        total_acc, total_count = 0, 0
        with torch.no_grad():
            for _idx, (label, text, offsets) in enumerate(dataloader):
                predicted_label = model(text, offsets, weights_for(text))
                total_acc += (predicted_label.argmax(1) == label).sum().item()
                total_count += label.size(0)
        return total_acc / total_count

    for epoch in range(1, args.epochs + 1):
        epoch_start_time = time.time()
        train(train_dataloader)
        accu_val = evaluate(valid_dataloader)
        if total_accu is not None and total_accu > accu_val:
            scheduler.step()
        else:
            total_accu = accu_val
        losses.append(accu_val)
        print("-" * 59)
        print(
            "| end of epoch {:3d} | time: {:5.2f}s | valid accuracy {:8.3f} ".format(
                epoch, time.time() - epoch_start_time, accu_val
            )
        )
        print("-" * 59)

    losses.append(evaluate(test_dataloader))
    return losses


if __name__ == "__main__":
    main()
