"""Semi-supervised node classification with a graph convolutional network (Kipf & Welling, 2017).

Plain PyTorch message passing (no PyG): the graph is an ``edge_index`` of (source, target)
pairs, and a layer gathers messages with ``index_select`` and sums them with ``index_add_``
(``--sparse``: multiplies by the normalised adjacency as a sparse COO matrix, as pygcn does).
A synthetic citation graph stands in for Cora: nodes of one class share words and cite each
other more often, and a few nodes have no edges at all.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def gcn_norm(edge_index: torch.Tensor, num_nodes: int, add_self_loops: bool = True):
    """The edges (with self-loops) and their weights D^-1/2 (A + I) D^-1/2."""
    if add_self_loops:
        loop = torch.arange(num_nodes, dtype=edge_index.dtype)
        edge_index = torch.cat([edge_index, torch.stack([loop, loop])], dim=1)
    row, col = edge_index[0], edge_index[1]
    deg = torch.zeros(num_nodes).scatter_add_(0, col, torch.ones(col.size(0)))
    deg_inv_sqrt = deg.pow(-0.5)
    # Without self-loops an isolated node has degree 0: it sends and receives nothing.
    deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float("inf"), 0)
    norm = deg_inv_sqrt[row] * deg_inv_sqrt[col]
    return edge_index, norm


class GCNConv(nn.Module):
    """One graph convolution: X' = D^-1/2 (A + I) D^-1/2 X W + b."""

    def __init__(self, in_channels: int, out_channels: int, bias: bool = True) -> None:
        super().__init__()
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.weight = nn.Parameter(torch.empty(in_channels, out_channels))
        if bias:
            self.bias = nn.Parameter(torch.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor, norm: torch.Tensor, adj=None):
        x = x @ self.weight
        if adj is not None:  # the normalised adjacency as a sparse matrix, as in pygcn
            out = torch.sparse.mm(adj, x)
        else:
            source, target = edge_index[0], edge_index[1]
            messages = x.index_select(0, source) * norm.view(-1, 1)
            out = torch.zeros_like(x).index_add_(0, target, messages)
        if self.bias is not None:
            out = out + self.bias
        return out

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}"


class GCN(nn.Module):
    def __init__(self, num_features: int, hidden: int, num_classes: int, dropout: float) -> None:
        super().__init__()
        self.dropout = dropout
        self.conv1 = GCNConv(num_features, hidden)
        self.conv2 = GCNConv(hidden, num_classes)

    def forward(self, x, edge_index, norm, adj=None):
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = F.relu(self.conv1(x, edge_index, norm, adj))
        x = F.dropout(x, p=self.dropout, training=self.training)
        x = self.conv2(x, edge_index, norm, adj)
        return F.log_softmax(x, dim=1)


class CitationGraph:
    """Bag-of-words features, labels, edges and the train/val/test split of one graph."""

    def __init__(self, args: argparse.Namespace) -> None:
        rng = np.random.default_rng(args.seed)
        n, c = args.num_nodes, args.num_classes
        y = rng.integers(c, size=n)
        word_probs = rng.uniform(0.0, 0.03, size=(c, args.num_features))
        word_probs[:, : args.num_features // 2] *= 4.0 * rng.random((c, args.num_features // 2))
        x = (rng.random((n, args.num_features)) < word_probs[y]).astype(np.float32)
        same = y[:, None] == y[None, :]
        cites = rng.random((n, n)) < np.where(same, args.p_in, args.p_out)
        # A few papers neither cite nor are cited.
        isolated = rng.choice(n, size=n // 50, replace=False)
        cites[isolated] = False
        cites[:, isolated] = False
        cites = np.triu(cites, 1)
        cites = cites | cites.T
        np.fill_diagonal(cites, False)
        source, target = np.nonzero(cites)

        self.x = torch.from_numpy(x)
        # Row-normalise the features (NormalizeFeatures).
        self.x = self.x / self.x.sum(dim=1, keepdim=True).clamp(min=1.0)
        self.y = torch.from_numpy(y)
        self.edge_index = torch.tensor(np.stack([source, target]), dtype=torch.long)
        order = rng.permutation(n)
        train = np.concatenate([order[y[order] == k][: args.train_per_class] for k in range(c)])
        rest = np.setdiff1d(order, train, assume_unique=True)
        rest = rest[rng.permutation(rest.size)]
        self.train_mask = self._mask(n, train)
        self.val_mask = self._mask(n, rest[: args.num_val])
        self.test_mask = self._mask(n, rest[args.num_val :])

    @staticmethod
    def _mask(n: int, index: np.ndarray) -> torch.Tensor:
        mask = torch.zeros(n, dtype=torch.bool)
        mask[torch.from_numpy(index)] = True
        return mask


def train(model, optimizer, data, edge_index, norm, adj) -> float:
    model.train()
    optimizer.zero_grad()
    out = model(data.x, edge_index, norm, adj)
    loss = F.nll_loss(out[data.train_mask], data.y[data.train_mask])
    loss.backward()
    optimizer.step()
    return loss.item()


@torch.no_grad()
def evaluate(model, data, edge_index, norm, adj):
    model.eval()
    out = model(data.x, edge_index, norm, adj)
    pred = out.argmax(dim=-1)
    accs = []
    for mask in (data.train_mask, data.val_mask, data.test_mask):
        accs.append(int((pred[mask] == data.y[mask]).sum()) / int(mask.sum()))
    test_loss = F.nll_loss(out[data.test_mask], data.y[data.test_mask]).item()
    return accs, test_loss


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="GCN on a synthetic citation graph")
    parser.add_argument("--num-nodes", type=int, default=400, help="papers in the graph")
    parser.add_argument("--num-features", type=int, default=200, help="bag-of-words size")
    parser.add_argument("--num-classes", type=int, default=7, help="topics")
    parser.add_argument("--p-in", type=float, default=0.03, help="citation rate within a topic")
    parser.add_argument("--p-out", type=float, default=0.002, help="citation rate across topics")
    parser.add_argument("--train-per-class", type=int, default=20, help="labelled nodes per class")
    parser.add_argument("--num-val", type=int, default=100, help="validation nodes")
    parser.add_argument("--hidden", type=int, default=16, help="hidden units")
    parser.add_argument("--dropout", type=float, default=0.5, help="dropout rate")
    parser.add_argument("--lr", type=float, default=0.01, help="learning rate")
    parser.add_argument("--weight-decay", type=float, default=5e-4, help="L2 loss on parameters")
    parser.add_argument(
        "--self-loops",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="add self-loops before normalising the adjacency",
    )
    parser.add_argument(
        "--sparse",
        action="store_true",
        help="aggregate with a sparse adjacency matrix (torch.sparse.mm) instead of index_add_",
    )
    parser.add_argument("--steps", type=int, default=30, help="training epochs")
    parser.add_argument("--seed", type=int, default=42, help="random seed")
    parser.add_argument(
        "--save-init", type=str, default=None, help="save the initial state_dict here"
    )
    parser.add_argument("--init", type=str, default=None, help="initial state_dict to load")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> list[float]:
    """Train the GCN; the training losses then the test loss."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    data = CitationGraph(args)
    edge_index, norm = gcn_norm(data.edge_index, args.num_nodes, args.self_loops)
    adj = None
    if args.sparse:
        # Row i of the adjacency sums the messages that node i receives.
        adj = torch.sparse_coo_tensor(
            torch.stack([edge_index[1], edge_index[0]]), norm, (args.num_nodes, args.num_nodes)
        ).coalesce()

    model = GCN(args.num_features, args.hidden, args.num_classes, args.dropout)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    losses = []
    best_val_acc = test_acc = 0.0
    for epoch in range(1, args.steps + 1):
        start = time.time()
        loss = train(model, optimizer, data, edge_index, norm, adj)
        (train_acc, val_acc, tmp_test_acc), _ = evaluate(model, data, edge_index, norm, adj)
        if val_acc > best_val_acc:
            best_val_acc, test_acc = val_acc, tmp_test_acc
        losses.append(loss)
        print(
            f"Epoch: {epoch:03d}, Loss: {loss:.4f}, Train: {train_acc:.4f}, "
            f"Val: {val_acc:.4f}, Test: {tmp_test_acc:.4f}, Time: {time.time() - start:.4f}s"
        )
    _, test_loss = evaluate(model, data, edge_index, norm, adj)
    print(f"Best val: {best_val_acc:.4f}, test at best val: {test_acc:.4f}")
    return [*losses, test_loss]


if __name__ == "__main__":
    main()
