"""Node classification with a two-layer GCN on a synthetic graph of two communities.

Nodes link mostly within their community (a stochastic block model); their features carry
only a faint hint of it. With 10 labelled nodes per community, the GCN classifies the rest by
pooling features over neighbourhoods; an MLP on the features alone, trained the same way,
shows what the graph adds.

    python examples/gcn.py [--device torch:cpu]
"""

from __future__ import annotations

import argparse

import numpy as np
import tensorweaver as tw

IGNORE = -100  # targets the loss and the accuracy skip


def two_communities(
    n: int, features: int, p_in: float, p_out: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Node features ``(n, features)``, community labels ``(n,)`` and the undirected edges as
    ``edge_index`` ``(2, E)`` (each edge in both directions)."""
    labels = np.arange(n) % 2
    same = labels[:, None] == labels[None, :]
    linked = rng.random((n, n)) < np.where(same, p_in, p_out)
    linked = np.triu(linked, 1)
    source, target = np.nonzero(linked | linked.T)
    hint = np.where(labels[:, None] == 1, 0.3, -0.3)
    x = hint + rng.standard_normal((n, features))
    return x.astype(np.float32), labels, np.stack([source, target])


def masked(labels: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """``labels`` where ``nodes`` are, ``IGNORE`` elsewhere."""
    out = np.full_like(labels, IGNORE)
    out[nodes] = labels[nodes]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="numpy", help="e.g. numpy, torch:cpu, torch:cuda")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    n = 400
    x, labels, edges = two_communities(n, features=16, p_in=0.03, p_out=0.008, rng=rng)
    order = rng.permutation(n)
    train = np.concatenate([order[labels[order] == c][:10] for c in (0, 1)])
    rest = np.setdiff1d(order, train)
    val, test = rest[:100], rest[100:]
    print(f"{n} nodes, {edges.shape[1] // 2} edges, {len(train)} labelled")

    tw.manual_seed(0)
    models = {
        "GCN": tw.models.GCN(16, 32, 2, edge_index=tw.tensor(edges)),
        "MLP": tw.models.MLP(16, [32], 2, dropout=0.5),
    }
    for name, model in models.items():
        history = tw.fit(
            model,
            (x, masked(labels, train)),
            val=(x, masked(labels, val)),
            epochs=100,
            batch_size=n,  # full batch: the rows are the graph's nodes, in order
            shuffle=False,
            lr=1e-2,
            device=args.device,
            seed=0,
            progress=False,
        )
        test_acc = tw.evaluate(model, (x, masked(labels, test)), batch_size=n)["accuracy"]
        print(
            f"{name}: val accuracy {history.metrics['val_accuracy'][-1]:.2%}, "
            f"test accuracy {test_acc:.2%} on {history.device} in {history.wall_time:.1f} s"
        )


if __name__ == "__main__":
    main()
