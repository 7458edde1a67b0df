"""Learning to rank and embedding losses, in the style of the RankNet / ListNet / LambdaRank
tutorials written in plain PyTorch and of metric-learning scripts, on synthetic query-document
features, in float64.

A scorer MLP; RankNet's pairwise loss by ``nn.MarginRankingLoss`` on all ordered pairs
(``torch.combinations`` of the document indices, ``torch.sign`` of the label differences)
and by ``F.binary_cross_entropy_with_logits`` on score differences with ``pos_weight``;
ListNet's top-one cross entropy between ``softmax``ed labels and scores
(``nn.KLDivLoss(reduction="batchmean", log_target=True)`` beside it); NDCG@k from
``torch.sort(descending=True)``, ``gather`` and ``torch.log2`` discounts, used as
LambdaRank's ``|delta NDCG|`` pair weights; an embedding head trained with
``nn.TripletMarginWithDistanceLoss(distance_function=cosine distance, swap=True)``,
``nn.CosineEmbeddingLoss`` and ``nn.HingeEmbeddingLoss``; ``nn.MultiLabelSoftMarginLoss``
on a tag head; ``nn.PoissonNLLLoss(log_input=True)`` on click counts and
``nn.GaussianNLLLoss`` with a predicted variance. Adam. Returns the losses, NDCGs,
gradients and parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F


class Scorer(nn.Module):
    def __init__(self, d=5):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d, 8), nn.SiLU(), nn.Linear(8, 8), nn.SiLU())
        self.score = nn.Linear(8, 1)
        self.embed = nn.Linear(8, 4)
        self.tags = nn.Linear(8, 3)
        self.var = nn.Linear(8, 1)

    def forward(self, x):
        h = self.body(x)
        return (
            self.score(h).squeeze(-1),
            self.embed(h),
            self.tags(h),
            F.softplus(self.var(h)).squeeze(-1),
        )


def ndcg_at_k(scores, labels, k):
    _, order = torch.sort(scores, descending=True, dim=-1)
    gains = (2 ** labels.gather(-1, order) - 1)[..., :k]
    discounts = torch.log2(torch.arange(2, k + 2, dtype=scores.dtype))
    dcg = (gains / discounts).sum(-1)
    ideal = (2 ** labels.sort(descending=True, dim=-1).values - 1)[..., :k]
    idcg = (ideal / discounts).sum(-1)
    return dcg / idcg.clamp(min=1e-12)


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:3].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:3].tolist() + [p.grad.abs().sum().item()]
    return out


def cosine_distance(a, b):
    return 1.0 - F.cosine_similarity(a, b)


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return train(args)
    finally:
        torch.set_default_dtype(previous)


def train(args):
    torch.manual_seed(0)
    model = Scorer()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    margin = nn.MarginRankingLoss(margin=0.5)
    kl = nn.KLDivLoss(reduction="batchmean", log_target=True)
    triplet = nn.TripletMarginWithDistanceLoss(
        distance_function=cosine_distance, margin=0.3, swap=True
    )
    cos = nn.CosineEmbeddingLoss(margin=0.1)
    hinge = nn.HingeEmbeddingLoss(margin=1.0)
    multilabel = nn.MultiLabelSoftMarginLoss(weight=torch.tensor([1.0, 2.0, 0.5]))
    poisson = nn.PoissonNLLLoss(log_input=True, full=True)
    gaussian = nn.GaussianNLLLoss(eps=1e-6)
    w = torch.tensor([1.0, -0.5, 0.3, 0.8, 0.0])
    out = []
    docs = 6
    for _ in range(args.steps):
        x = torch.randn(2, docs, 5)
        relevance = (x @ w).clamp(-1.5, 1.5).add(1.5).round()  # grades 0..3
        scores, emb, tags, var = model(x)
        pairs = torch.combinations(torch.arange(docs), r=2)
        i, j = pairs[:, 0], pairs[:, 1]
        s_i, s_j = scores[:, i], scores[:, j]
        target = torch.sign(relevance[:, i] - relevance[:, j])
        keep = target != 0
        loss_margin = margin(s_i[keep], s_j[keep], target[keep])
        ndcg = ndcg_at_k(scores.detach(), relevance, 4)
        # LambdaRank: |delta NDCG| of swapping i and j as the pair weight
        swapped = scores.detach().clone()
        delta = []
        for a, b in pairs.tolist():
            s = swapped.clone()
            s[:, [a, b]] = s[:, [b, a]]
            delta.append((ndcg_at_k(s, relevance, 4) - ndcg).abs())
        delta = torch.stack(delta, dim=1)
        loss_rank = F.binary_cross_entropy_with_logits(
            s_i - s_j, (target > 0).double(), weight=delta * keep, pos_weight=torch.tensor(1.5)
        )
        loss_list = -(F.softmax(relevance, -1) * F.log_softmax(scores, -1)).sum(-1).mean()
        loss_kl = kl(F.log_softmax(scores, -1), F.log_softmax(relevance, -1))
        e = emb.reshape(-1, 4)
        r = relevance.reshape(-1)
        best, worst = r.argmax(), r.argmin()
        loss_triplet = triplet(
            e[best].expand(3, -1), e[best].expand(3, -1) + 0.1 * e[:3], e[worst].expand(3, -1)
        )
        same = torch.where(r[:6] >= 2, 1.0, -1.0)
        loss_cos = cos(e[:6], e[best].expand(6, -1), same)
        loss_hinge = hinge((e[:6] - e[best]).norm(dim=1), same)
        tag_target = torch.stack([r >= 1, r >= 2, r >= 3], dim=1).double()
        loss_tags = multilabel(tags.reshape(-1, 3), tag_target)
        clicks = relevance.reshape(-1)
        loss_clicks = poisson(scores.reshape(-1), clicks)
        loss_gauss = gaussian(scores.reshape(-1), r, var.reshape(-1))
        losses = [loss_margin, loss_rank, loss_list, loss_kl, loss_triplet, loss_cos, loss_hinge,
                  loss_tags, loss_clicks, loss_gauss]  # fmt: skip
        total = sum(losses)
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
        out += [loss.item() for loss in losses] + ndcg.tolist() + values(model)
    return out


if __name__ == "__main__":
    main()
