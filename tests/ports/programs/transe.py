"""TransE knowledge-graph embeddings, after the popular ``TransE-PyTorch`` implementation:
entity and relation ``nn.Embedding`` tables with one extra padding row, uniform
initialisation in ``[-6/sqrt(d), 6/sqrt(d)]``, relations L1-normalised once and entities
re-normalised in place through ``weight.data[:-1, :].div_(...norm(p=1, dim=1,
keepdim=True))`` before every batch, distances ``(h + r - t).norm(p=1, dim=1)``,
``nn.MarginRankingLoss(margin, reduction='none')`` against corrupted triples (head or tail
replaced, chosen by ``torch.randint``), SGD, and mean rank / hits@k evaluation with
``argsort``.

The graph is synthetic: entities on a ring, relations "k steps ahead".
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
from torch import optim
from torch.utils import data as torch_data


class TransE(nn.Module):
    def __init__(self, entity_count, relation_count, device, norm=1, dim=16, margin=1.0):
        super(TransE, self).__init__()
        self.entity_count = entity_count
        self.relation_count = relation_count
        self.device = device
        self.norm = norm
        self.dim = dim
        self.entities_emb = self._init_enitity_emb()
        self.relations_emb = self._init_relation_emb()
        self.criterion = nn.MarginRankingLoss(margin=margin, reduction="none")

    def _init_enitity_emb(self):
        entities_emb = nn.Embedding(
            num_embeddings=self.entity_count + 1,
            embedding_dim=self.dim,
            padding_idx=self.entity_count,
        )
        uniform_range = 6 / np.sqrt(self.dim)
        entities_emb.weight.data.uniform_(-uniform_range, uniform_range)
        return entities_emb

    def _init_relation_emb(self):
        relations_emb = nn.Embedding(
            num_embeddings=self.relation_count + 1,
            embedding_dim=self.dim,
            padding_idx=self.relation_count,
        )
        uniform_range = 6 / np.sqrt(self.dim)
        relations_emb.weight.data.uniform_(-uniform_range, uniform_range)
        # -1 to avoid nan for OOV vector
        relations_emb.weight.data[:-1, :].div_(
            relations_emb.weight.data[:-1, :].norm(p=1, dim=1, keepdim=True)
        )
        return relations_emb

    def forward(self, positive_triplets, negative_triplets):
        # -1 to avoid nan for OOV vector
        self.entities_emb.weight.data[:-1, :].div_(
            self.entities_emb.weight.data[:-1, :].norm(p=2, dim=1, keepdim=True)
        )

        assert positive_triplets.size()[1] == 3
        positive_distances = self._distance(positive_triplets)

        assert negative_triplets.size()[1] == 3
        negative_distances = self._distance(negative_triplets)

        return (
            self.loss(positive_distances, negative_distances),
            positive_distances,
            negative_distances,
        )

    def predict(self, triplets):
        return self._distance(triplets)

    def loss(self, positive_distances, negative_distances):
        target = torch.tensor([-1], dtype=torch.long, device=self.device)
        return self.criterion(positive_distances, negative_distances, target)

    def _distance(self, triplets):
        """Triplets should have shape Bx3 where dim 3 are head id, relation id, tail id."""
        assert triplets.size()[1] == 3
        heads = triplets[:, 0]
        relations = triplets[:, 1]
        tails = triplets[:, 2]
        return (
            self.entities_emb(heads) + self.relations_emb(relations) - self.entities_emb(tails)
        ).norm(p=self.norm, dim=1)


def ring_graph(n_entities, steps):
    triples = [(h, r, (h + k) % n_entities) for r, k in enumerate(steps) for h in range(n_entities)]
    return torch.tensor(triples, dtype=torch.long)


def main(argv: list[str] | None = None) -> list[float]:
    """Train; every batch's mean loss, then mean rank and hits@3 of the true tails."""
    parser = argparse.ArgumentParser(description="TransE")
    parser.add_argument("--entities", type=int, default=12)
    parser.add_argument("--dim", type=int, default=16)
    parser.add_argument("--norm", type=int, default=1)
    parser.add_argument("--margin", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=12)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)
    device = torch.device("cpu")
    triples = ring_graph(args.entities, [1, 2])
    train_generator = torch_data.DataLoader(
        torch_data.TensorDataset(triples), batch_size=args.batch_size, shuffle=True
    )
    model = TransE(args.entities, 2, device, norm=args.norm, dim=args.dim, margin=args.margin)
    model = model.to(device)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    optimizer = optim.SGD(model.parameters(), lr=args.lr)

    losses = []
    for epoch_id in range(1, args.epochs + 1):
        model.train()
        for (positive_triples,) in train_generator:
            head_or_tail = torch.randint(2, size=(positive_triples.size(0),), device=device)
            random_entities = torch.randint(
                args.entities, size=(positive_triples.size(0),), device=device
            )
            broken_heads = torch.where(head_or_tail == 1, random_entities, positive_triples[:, 0])
            broken_tails = torch.where(head_or_tail == 0, random_entities, positive_triples[:, 2])
            negative_triples = torch.stack(
                (broken_heads, positive_triples[:, 1], broken_tails), dim=1
            )

            optimizer.zero_grad()
            loss, pd, nd = model(positive_triples, negative_triples)
            loss.mean().backward()
            optimizer.step()
            losses.append(loss.mean().item())
        print(f"epoch {epoch_id}: loss {losses[-1]:.4f}")

    model.eval()
    with torch.no_grad():
        heads, relations, tails = triples[:, 0], triples[:, 1], triples[:, 2]
        entity_ids = torch.arange(args.entities)
        candidates = torch.stack([
            torch.stack([heads.repeat_interleave(args.entities),
                         relations.repeat_interleave(args.entities),
                         entity_ids.repeat(len(triples))], dim=1)
        ]).squeeze(0)  # fmt: skip
        distances = model.predict(candidates).view(len(triples), args.entities)
        ranks = (distances.argsort(dim=1) == tails[:, None]).nonzero()[:, 1].float() + 1
    losses += [ranks.mean().item(), (ranks <= 3).float().mean().item()]
    return losses


if __name__ == "__main__":
    main()
