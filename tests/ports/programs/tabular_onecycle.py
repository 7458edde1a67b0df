"""A multi-class tabular model in the fast.ai ``TabularModel`` style, written in plain
PyTorch: one ``nn.Embedding`` per categorical column (index 0 is the "missing" category,
``padding_idx=0``; optionally ``max_norm`` renormalisation) with the fast.ai rule of thumb for
their sizes, embedding dropout, a BatchNorm of the continuous columns, Linear/ReLU/BatchNorm1d
blocks, ``CrossEntropyLoss(label_smoothing=0.1, weight=...)`` with inverse-frequency class
weights, AdamW under ``OneCycleLR`` (cycling the betas as momentum), and ``fit_one_cycle``'s
batch loop. Evaluation reports the loss, accuracy and a per-class recall from
``torch.bincount``.

The table is synthetic: three categorical and four continuous columns, three classes.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def emb_sz_rule(n_cat):
    """fast.ai's rule of thumb for embedding sizes."""
    return min(600, round(1.6 * n_cat**0.56))


class TabDataset(Dataset):
    def __init__(self, cats, conts, y):
        self.cats, self.conts, self.y = cats, conts, y

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.cats[i], self.conts[i], self.y[i]


class TabularModel(nn.Module):
    def __init__(self, emb_szs, n_cont, out_sz, layers, ps=0.1, embed_p=0.05, max_norm=None):
        super().__init__()
        self.embeds = nn.ModuleList(
            [nn.Embedding(ni, nf, padding_idx=0, max_norm=max_norm) for ni, nf in emb_szs]
        )
        self.emb_drop = nn.Dropout(embed_p)
        self.bn_cont = nn.BatchNorm1d(n_cont)
        n_emb = sum(e.embedding_dim for e in self.embeds)
        sizes = [n_emb + n_cont] + layers
        blocks = []
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            blocks += [nn.Linear(n_in, n_out, bias=False), nn.ReLU(inplace=True),
                       nn.BatchNorm1d(n_out), nn.Dropout(ps)]  # fmt: skip
        blocks.append(nn.Linear(sizes[-1], out_sz))
        self.layers = nn.Sequential(*blocks)

    def forward(self, x_cat, x_cont):
        x = [e(x_cat[:, i]) for i, e in enumerate(self.embeds)]
        x = torch.cat(x, 1)
        x = self.emb_drop(x)
        x_cont = self.bn_cont(x_cont)
        x = torch.cat([x, x_cont], 1)
        return self.layers(x)


def make_table(rng, n, cardinalities, n_cont, n_classes):
    cats = np.stack([rng.integers(1, c, size=n) for c in cardinalities], axis=1)
    cats[rng.random(cats.shape) < 0.05] = 0  # missing values
    conts = rng.normal(size=(n, n_cont)) * [1.0, 2.0, 0.5, 1.0][:n_cont]
    score = conts[:, 0] + 0.5 * np.cos(cats[:, 0]) + (cats[:, 1] % 3) - 1.0 * (conts[:, 1] > 1)
    y = np.digitize(score, [-0.2, 1.2])
    return (torch.from_numpy(cats).long(), torch.from_numpy(conts.astype(np.float32)),
            torch.from_numpy(y).long())  # fmt: skip


def main(argv: list[str] | None = None) -> list[float]:
    """Train one cycle; every batch's loss and learning rate, then validation loss, accuracy
    and per-class recall."""
    parser = argparse.ArgumentParser(description="tabular model, one-cycle")
    parser.add_argument("--rows", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max-lr", type=float, default=1e-2)
    parser.add_argument("--smoothing", type=float, default=0.1)
    parser.add_argument("--max-norm", type=float, default=None)
    parser.add_argument("--anneal", choices=["cos", "linear"], default="cos")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    cardinalities, n_cont, n_classes = [8, 6, 4], 4, 3
    cats, conts, y = make_table(rng, args.rows + 64, cardinalities, n_cont, n_classes)
    train_ds = TabDataset(cats[: args.rows], conts[: args.rows], y[: args.rows])
    valid_ds = TabDataset(cats[args.rows :], conts[args.rows :], y[args.rows :])
    train_dl = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, drop_last=True)
    valid_dl = DataLoader(valid_ds, batch_size=64)

    emb_szs = [(c, emb_sz_rule(c)) for c in cardinalities]
    model = TabularModel(emb_szs, n_cont, n_classes, [32, 16], max_norm=args.max_norm)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))

    counts = torch.bincount(y[: args.rows], minlength=n_classes).float()
    class_weights = counts.sum() / (n_classes * counts)
    loss_func = nn.CrossEntropyLoss(weight=class_weights, label_smoothing=args.smoothing)
    opt = torch.optim.AdamW(model.parameters(), lr=args.max_lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.max_lr, epochs=args.epochs,
                                                steps_per_epoch=len(train_dl), pct_start=0.25,
                                                anneal_strategy=args.anneal)  # fmt: skip

    losses = []
    for epoch in range(args.epochs):
        model.train()
        for x_cat, x_cont, yb in train_dl:
            out = model(x_cat, x_cont)
            loss = loss_func(out, yb)
            loss.backward()
            opt.step()
            opt.zero_grad()
            sched.step()
            losses += [loss.item(), sched.get_last_lr()[0], opt.param_groups[0]["betas"][0]]
        print(f"epoch {epoch}: {losses[-3]:.4f}")

    model.eval()
    with torch.no_grad():
        preds, targets, total = [], [], 0.0
        for x_cat, x_cont, yb in valid_dl:
            out = model(x_cat, x_cont)
            total += loss_func(out, yb).item() * len(yb)
            preds.append(out.argmax(dim=1))
            targets.append(yb)
        preds, targets = torch.cat(preds), torch.cat(targets)
        hits = torch.bincount(targets[preds == targets], minlength=n_classes)
        recall = hits.float() / torch.bincount(targets, minlength=n_classes).clamp(min=1)
    losses += [total / len(valid_ds), (preds == targets).float().mean().item()]
    losses += recall.tolist()
    # the embedding of the missing category stays zero (padding_idx gets no gradient)
    losses.append(float(all(e.weight[0].abs().sum().item() == 0 for e in model.embeds)))
    return losses


if __name__ == "__main__":
    main()
