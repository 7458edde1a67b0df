"""A two-layer graph convolutional network (Kipf and Welling 2017) for node classification."""

from __future__ import annotations

import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.nn.modules.graph import GCNConv
from tensorweaver.tensor import Tensor


class GCN(nn.Module):
    """``GCNConv -> ReLU -> Dropout -> GCNConv``: node features ``(N, in_features)`` to class
    logits ``(N, num_classes)``.

    Give the graph's ``edge_index`` ``(2, E)`` here to keep it in the model (a buffer that
    moves with ``to()`` and is not saved in the state dict); then ``model(x)`` classifies the
    nodes of that graph, and ``tw.fit`` can train it on ``(x, y)`` full-batch, with
    ``batch_size=len(x)`` and ``shuffle=False`` (the rows must stay the graph's nodes).
    Targets of nodes outside the training set are ``-100``, which the loss and the accuracy
    skip. ``forward(x, edge_index)`` takes another graph instead.
    """

    def __init__(
        self,
        in_features: int,
        hidden_features: int,
        num_classes: int,
        edge_index: Tensor | None = None,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.conv1 = GCNConv(in_features, hidden_features)
        self.conv2 = GCNConv(hidden_features, num_classes)
        self.dropout = dropout
        self.register_buffer("edge_index", edge_index, persistent=False)

    def forward(self, x: Tensor, edge_index: Tensor | None = None) -> Tensor:
        if edge_index is None:
            edge_index = self.edge_index
            if edge_index is None:
                raise ValueError("GCN: no graph; pass edge_index to forward or to the constructor")
        h = F.relu(self.conv1(x, edge_index))
        h = F.dropout(h, self.dropout, self.training)
        return self.conv2(h, edge_index)
