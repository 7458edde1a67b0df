"""A graph attention network, after pytorch/examples ``gat/main.py``, on a small synthetic
citation graph (Cora's shape at a tiny size).

The example's dense layer: ``x @ W``, per-head attention scores ``h @ a[:, :n]`` plus the
transposed ``h @ a[:, n:]`` (``.mT``), ``nn.LeakyReLU``, the non-edges masked by
``torch.where(adj > 0, e, -9e16 * ones_like(e))``, softmax, dropout on features and attention,
heads concatenated or averaged, ELU, ``log_softmax``, NLLLoss on a boolean train mask, Adam
with weight decay. ``--sparse`` runs the same layer over an edge list as PyG's ``GATConv``
does: scores gathered per edge, a softmax over each node's incoming edges made of
``scatter_reduce(..., "amax")``, ``exp`` and ``index_add_``, and messages summed by
``index_add``.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim import Adam


class GraphAttentionLayer(nn.Module):
    """
    Graph Attention Layer (GAT) as described in the paper `"Graph Attention Networks" <https://arxiv.org/pdf/1710.10903.pdf>`.
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        n_heads: int,
        concat: bool = False,
        dropout: float = 0.4,
        leaky_relu_slope: float = 0.2,
        sparse: bool = False,
    ):
        super(GraphAttentionLayer, self).__init__()

        self.n_heads = n_heads  # Number of attention heads
        self.concat = concat  # wether to concatenate the final attention heads
        self.dropout = dropout  # Dropout rate
        self.sparse = sparse

        if concat:  # concatenating the attention heads
            self.out_features = out_features  # Number of output features per node
            assert out_features % n_heads == 0  # Ensure that out_features is a multiple of n_heads
            self.n_hidden = out_features // n_heads
        else:  # averaging output over the attention heads (Used in the main paper)
            self.n_hidden = out_features

        #  A shared linear transformation, parametrized by a weight matrix W is applied to every
        #  node
        #  Initialize the weight matrix W
        self.W = nn.Parameter(torch.empty(size=(in_features, self.n_hidden * n_heads)))

        # Initialize the attention weights a
        self.a = nn.Parameter(torch.empty(size=(n_heads, 2 * self.n_hidden, 1)))

        self.leakyrelu = nn.LeakyReLU(leaky_relu_slope)  # LeakyReLU activation function
        # softmax activation function to the attention coefficients
        self.softmax = nn.Softmax(dim=1)

        self.reset_parameters()  # Reset the parameters

    def reset_parameters(self):
        """
        Reinitialize learnable parameters.
        """
        nn.init.xavier_normal_(self.W)
        nn.init.xavier_normal_(self.a)

    def _get_attention_scores(self, h_transformed: torch.Tensor):
        source_scores = torch.matmul(h_transformed, self.a[:, : self.n_hidden, :])
        target_scores = torch.matmul(h_transformed, self.a[:, self.n_hidden :, :])

        # broadcast add
        # (n_heads, n_nodes, 1) + (n_heads, 1, n_nodes) = (n_heads, n_nodes, n_nodes)
        e = source_scores + target_scores.mT
        return self.leakyrelu(e)

    def _edge_attention(self, h_transformed: torch.Tensor, edge_index: torch.Tensor):
        """Attention over an edge list: node i attends to the sources j of its edges (j -> i)."""
        n_nodes = h_transformed.shape[1]
        src, dst = edge_index
        source_scores = torch.matmul(h_transformed, self.a[:, : self.n_hidden, :]).squeeze(-1)
        target_scores = torch.matmul(h_transformed, self.a[:, self.n_hidden :, :]).squeeze(-1)
        slope = self.leakyrelu.negative_slope
        e = F.leaky_relu(source_scores[:, dst] + target_scores[:, src], slope)
        # softmax over the incoming edges of each node
        e_max = torch.full((self.n_heads, n_nodes), float("-inf")).scatter_reduce(
            1, dst.expand(self.n_heads, -1), e, reduce="amax", include_self=False
        )
        e = (e - e_max[:, dst]).exp()
        denom = torch.zeros(self.n_heads, n_nodes).index_add_(1, dst, e)
        attention = e / denom[:, dst]
        attention = F.dropout(attention, self.dropout, training=self.training)
        messages = attention.unsqueeze(-1) * h_transformed[:, src, :]
        return torch.zeros_like(h_transformed).index_add(1, dst, messages)

    def forward(self, h: torch.Tensor, adj_mat: torch.Tensor):
        n_nodes = h.shape[0]

        # Apply linear transformation to node feature -> W h
        # output shape (n_nodes, n_hidden * n_heads)
        h_transformed = torch.mm(h, self.W)
        h_transformed = F.dropout(h_transformed, self.dropout, training=self.training)

        # splitting the heads by reshaping the tensor and putting heads dim first
        # output shape (n_heads, n_nodes, n_hidden)
        h_transformed = h_transformed.view(n_nodes, self.n_heads, self.n_hidden).permute(1, 0, 2)

        if self.sparse:
            h_prime = self._edge_attention(h_transformed, adj_mat)
        else:
            # getting the attention scores
            # output shape (n_heads, n_nodes, n_nodes)
            e = self._get_attention_scores(h_transformed)

            # Set the attention score for non-existent edges to -9e15 (MASKING NON-EXISTENT EDGES)
            connectivity_mask = -9e16 * torch.ones_like(e)
            e = torch.where(adj_mat > 0, e, connectivity_mask)  # masked attention scores

            # attention coefficients are computed as a softmax over the rows
            # for each column j in the attention score matrix e
            attention = F.softmax(e, dim=-1)
            attention = F.dropout(attention, self.dropout, training=self.training)

            # final node embeddings are computed as a weighted average of the features of its
            # neighbors
            h_prime = torch.matmul(attention, h_transformed)

        # concatenating/averaging the attention heads
        # output shape (n_nodes, out_features)
        if self.concat:
            h_prime = h_prime.permute(1, 0, 2).contiguous().view(n_nodes, self.out_features)
        else:
            h_prime = h_prime.mean(dim=0)

        return h_prime


class GAT(nn.Module):
    def __init__(
        self,
        in_features,
        n_hidden,
        n_heads,
        num_classes,
        concat=False,
        dropout=0.4,
        leaky_relu_slope=0.2,
        sparse=False,
    ):
        super(GAT, self).__init__()

        # Define the Graph Attention layers
        self.gat1 = GraphAttentionLayer(
            in_features=in_features, out_features=n_hidden, n_heads=n_heads,
            concat=concat, dropout=dropout, leaky_relu_slope=leaky_relu_slope, sparse=sparse,
        )  # fmt: skip

        self.gat2 = GraphAttentionLayer(
            in_features=n_hidden, out_features=num_classes, n_heads=1,
            concat=False, dropout=dropout, leaky_relu_slope=leaky_relu_slope, sparse=sparse,
        )  # fmt: skip

    def forward(self, input_tensor: torch.Tensor, adj_mat: torch.Tensor):
        # Apply the first Graph Attention layer
        x = self.gat1(input_tensor, adj_mat)
        x = F.elu(x)  # Apply ELU activation function to the output of the first layer

        # Apply the second Graph Attention layer
        x = self.gat2(x, adj_mat)

        return F.log_softmax(x, dim=1)  # Apply log softmax activation function


def synthetic_cora(rng, num_nodes, num_features, num_classes, edges_per_node):
    """Bag-of-words features, labels, and an edge list that mostly links nodes of one class."""
    labels = rng.integers(0, num_classes, num_nodes)
    centers = rng.random((num_classes, num_features)) < 0.15
    noise = rng.random((num_nodes, num_features)) < 0.05
    features = (centers[labels] ^ noise).astype(np.float32)
    edges = []
    for i in range(num_nodes):
        same = np.flatnonzero(labels == labels[i])
        for _ in range(edges_per_node):
            j = rng.choice(same) if rng.random() < 0.8 else rng.integers(num_nodes)
            if j != i:
                edges.append((i, int(j)))
    return features, labels, np.array(edges, dtype=np.int64)


def train_iter(epoch, model, optimizer, criterion, input, target, mask_train, mask_val):
    model.train()
    optimizer.zero_grad()

    # Forward pass
    output = model(*input)
    # Compute the loss using the training mask
    loss = criterion(output[mask_train], target[mask_train])

    loss.backward()
    optimizer.step()

    # Evaluate the model performance on training and validation sets
    loss_train, acc_train = test(model, criterion, input, target, mask_train)
    loss_val, acc_val = test(model, criterion, input, target, mask_val)

    print(
        f"Epoch: {epoch:04d} loss_train: {loss_train:.4f} acc_train: "
        f"{acc_train:.4f} loss_val: {loss_val:.4f} acc_val: {acc_val:.4f}"
    )
    return [loss.item(), loss_train, acc_train, loss_val, acc_val]


def test(model, criterion, input, target, mask):
    model.eval()
    with torch.no_grad():
        output = model(*input)
        output, target = output[mask], target[mask]

        loss = criterion(output, target)
        acc = (output.argmax(dim=1) == target).float().sum() / len(target)
    return loss.item(), acc.item()


def main(argv: list[str] | None = None) -> list[float]:
    """Train; return each epoch's training loss and train/validation loss and accuracy, then
    the test loss and accuracy."""
    parser = argparse.ArgumentParser(description="PyTorch Graph Attention Network")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.005)
    parser.add_argument("--l2", type=float, default=5e-4)
    parser.add_argument("--dropout-p", type=float, default=0.6)
    parser.add_argument("--hidden-dim", type=int, default=16)
    parser.add_argument("--num-heads", type=int, default=4)
    parser.add_argument("--concat-heads", action="store_true", default=False)
    parser.add_argument("--sparse", action="store_true", default=False)
    parser.add_argument("--nodes", type=int, default=60)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    features_np, labels_np, edges_np = synthetic_cora(rng, args.nodes, 40, 4, 3)
    features = torch.FloatTensor(features_np)
    labels = torch.LongTensor(labels_np)
    edges = torch.from_numpy(edges_np)
    num_nodes = features.shape[0]

    if args.sparse:
        # both directions and self loops, as an edge list (source row, target row)
        loops = torch.arange(num_nodes)
        graph = torch.cat([edges.t(), edges.t().flip(0), torch.stack([loops, loops])], dim=1)
        graph = torch.unique(graph, dim=1)
    else:
        adj_mat = torch.eye(num_nodes)
        adj_mat[edges[:, 0], edges[:, 1]] = 1.0
        adj_mat[edges[:, 1], edges[:, 0]] = 1.0
        graph = adj_mat

    # Creating the model
    gat_net = GAT(
        in_features=features.shape[1],  # Number of input features per node
        n_hidden=args.hidden_dim,  # Output size of the first Graph Attention Layer
        n_heads=args.num_heads,  # Number of attention heads in the first Graph Attention Layer
        num_classes=labels.max().item() + 1,  # Number of classes to predict for each node
        concat=args.concat_heads,  # Wether to concatinate attention heads
        dropout=args.dropout_p,  # Dropout rate
        leaky_relu_slope=0.2,  # Alpha (slope) of the leaky relu activation
        sparse=args.sparse,
    )
    if args.init:
        gat_net.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(gat_net.state_dict(), args.save_init)

    # configure optimizer and loss function
    optimizer = Adam(gat_net.parameters(), lr=args.lr, weight_decay=args.l2)
    criterion = nn.NLLLoss()

    # Split the dataset into training, validation, and test sets
    idx = torch.randperm(len(labels))
    idx_test, idx_val, idx_train = idx[:15], idx[15:30], idx[30:]
    mask_train = torch.zeros(num_nodes, dtype=torch.bool)
    mask_train[idx_train] = True
    mask_val = torch.zeros(num_nodes, dtype=torch.bool)
    mask_val[idx_val] = True

    out: list[float] = []
    # Train and evaluate the model
    for epoch in range(args.epochs):
        out += train_iter(epoch + 1, gat_net, optimizer, criterion, (features, graph), labels,
                          mask_train, mask_val)  # fmt: skip
    loss_test, acc_test = test(gat_net, criterion, (features, graph), labels, idx_test)
    print(f"Test set results: loss {loss_test:.4f} accuracy {acc_test:.4f}")
    return out + [loss_test, acc_test]


if __name__ == "__main__":
    main()
