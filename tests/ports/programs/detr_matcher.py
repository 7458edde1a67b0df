"""DETR's set-prediction training (after facebookresearch/detr's ``models/matcher.py``,
``models/detr.py`` ``SetCriterion`` and ``util/box_ops.py``), with a tiny convolutional
backbone and transformer decoder, in float64.

Object queries from ``nn.Embedding(...).weight`` decoded by ``nn.TransformerDecoder``
(``dropout=0.0``) against a flattened feature map ``flatten(2).permute(2, 0, 1)`` plus a
learned positional ``Parameter``; class logits and ``sigmoid`` boxes. The Hungarian matcher
under ``@torch.no_grad()``: ``out_prob[:, tgt_ids]``, ``torch.cdist(p=1)``, generalized IoU
from ``unbind(-1)``/``torch.stack`` box conversions with ``torch.max``/``torch.min``
broadcasting and ``clamp(min=0)``, ``C.view(bs, num_queries, -1).cpu()`` split by
``C.split(sizes, -1)`` and solved by ``scipy.optimize.linear_sum_assignment``; indices back
through ``torch.as_tensor(i, dtype=torch.int64)``. The criterion: ``torch.full`` target
classes written by ``target_classes[idx] = target_classes_o`` with
``torch.full_like(src, i)`` batch indices, ``F.cross_entropy`` with an ``empty_weight``
buffer (``eos_coef``), ``F.l1_loss(reduction="none")`` and ``1 - torch.diag(giou)`` on the
matched boxes. AdamW with a lower-learning-rate backbone param group, ``clip_grad_norm_``,
``StepLR``. Returns every loss term, the matched indices, gradients and parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment


def box_cxcywh_to_xyxy(x):
    x_c, y_c, w, h = x.unbind(-1)
    b = [(x_c - 0.5 * w), (y_c - 0.5 * h), (x_c + 0.5 * w), (y_c + 0.5 * h)]
    return torch.stack(b, dim=-1)


def box_area(boxes):
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def box_iou(boxes1, boxes2):
    area1 = box_area(boxes1)
    area2 = box_area(boxes2)
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    union = area1[:, None] + area2 - inter
    return inter / union, union


def generalized_box_iou(boxes1, boxes2):
    assert (boxes1[:, 2:] >= boxes1[:, :2]).all()
    assert (boxes2[:, 2:] >= boxes2[:, :2]).all()
    iou, union = box_iou(boxes1, boxes2)
    lt = torch.min(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.max(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = (rb - lt).clamp(min=0)
    area = wh[:, :, 0] * wh[:, :, 1]
    return iou - (area - union) / area


class HungarianMatcher(nn.Module):
    def __init__(self, cost_class=1.0, cost_bbox=5.0, cost_giou=2.0):
        super().__init__()
        self.cost_class, self.cost_bbox, self.cost_giou = cost_class, cost_bbox, cost_giou

    @torch.no_grad()
    def forward(self, outputs, targets):
        bs, num_queries = outputs["pred_logits"].shape[:2]
        out_prob = outputs["pred_logits"].flatten(0, 1).softmax(-1)
        out_bbox = outputs["pred_boxes"].flatten(0, 1)
        tgt_ids = torch.cat([v["labels"] for v in targets])
        tgt_bbox = torch.cat([v["boxes"] for v in targets])
        cost_class = -out_prob[:, tgt_ids]
        cost_bbox = torch.cdist(out_bbox, tgt_bbox, p=1)
        cost_giou = -generalized_box_iou(box_cxcywh_to_xyxy(out_bbox), box_cxcywh_to_xyxy(tgt_bbox))
        C = self.cost_bbox * cost_bbox + self.cost_class * cost_class + self.cost_giou * cost_giou
        C = C.view(bs, num_queries, -1).cpu()
        sizes = [len(v["boxes"]) for v in targets]
        indices = [linear_sum_assignment(c[i]) for i, c in enumerate(C.split(sizes, -1))]
        return [
            (torch.as_tensor(i, dtype=torch.int64), torch.as_tensor(j, dtype=torch.int64))
            for i, j in indices
        ]


class TinyDETR(nn.Module):
    def __init__(self, num_classes=3, num_queries=5, d_model=16):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(8, d_model, 1)
        )
        layer = nn.TransformerDecoderLayer(d_model, nhead=2, dim_feedforward=32, dropout=0.0)
        self.decoder = nn.TransformerDecoder(layer, num_layers=2)
        self.query_embed = nn.Embedding(num_queries, d_model)
        self.pos = nn.Parameter(0.1 * torch.randn(16, 1, d_model))
        self.class_embed = nn.Linear(d_model, num_classes + 1)
        self.bbox_embed = nn.Sequential(nn.Linear(d_model, d_model), nn.ReLU(),
                                        nn.Linear(d_model, 4))  # fmt: skip

    def forward(self, images):
        src = self.backbone(images).flatten(2).permute(2, 0, 1)  # (HW, B, C)
        query = self.query_embed.weight.unsqueeze(1).repeat(1, images.shape[0], 1)
        hs = self.decoder(torch.zeros_like(query) + query, src + self.pos).transpose(0, 1)
        return {"pred_logits": self.class_embed(hs), "pred_boxes": self.bbox_embed(hs).sigmoid()}


class SetCriterion(nn.Module):
    def __init__(self, num_classes, matcher, eos_coef=0.1):
        super().__init__()
        self.num_classes = num_classes
        self.matcher = matcher
        empty_weight = torch.ones(num_classes + 1)
        empty_weight[-1] = eos_coef
        self.register_buffer("empty_weight", empty_weight)

    def _get_src_permutation_idx(self, indices):
        batch_idx = torch.cat([torch.full_like(src, i) for i, (src, _) in enumerate(indices)])
        src_idx = torch.cat([src for (src, _) in indices])
        return batch_idx, src_idx

    def forward(self, outputs, targets):
        indices = self.matcher(outputs, targets)
        num_boxes = max(float(sum(len(t["labels"]) for t in targets)), 1.0)
        idx = self._get_src_permutation_idx(indices)
        src_logits = outputs["pred_logits"]
        target_classes_o = torch.cat([t["labels"][J] for t, (_, J) in zip(targets, indices)])
        target_classes = torch.full(src_logits.shape[:2], self.num_classes, dtype=torch.int64)
        target_classes[idx] = target_classes_o
        loss_ce = F.cross_entropy(src_logits.transpose(1, 2), target_classes, self.empty_weight)

        src_boxes = outputs["pred_boxes"][idx]
        target_boxes = torch.cat([t["boxes"][i] for t, (_, i) in zip(targets, indices)], dim=0)
        loss_bbox = F.l1_loss(src_boxes, target_boxes, reduction="none").sum() / num_boxes
        loss_giou = 1 - torch.diag(
            generalized_box_iou(box_cxcywh_to_xyxy(src_boxes), box_cxcywh_to_xyxy(target_boxes))
        )
        loss_giou = loss_giou.sum() / num_boxes
        return {"loss_ce": loss_ce, "loss_bbox": loss_bbox, "loss_giou": loss_giou}, indices


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:4].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:4].tolist() + [p.grad.abs().sum().item()]
    return out


def make_targets(counts):
    targets = []
    for n in counts:
        centre = torch.rand(n, 2) * 0.6 + 0.2
        size = torch.rand(n, 2) * 0.3 + 0.1
        targets.append({"labels": torch.randint(0, 3, (n,)), "boxes": torch.cat([centre, size], 1)})
    return targets


def main(argv: list[str] | None = None) -> list[float]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=3)
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
    model = TinyDETR()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    criterion = SetCriterion(3, HungarianMatcher())
    weight_dict = {"loss_ce": 1, "loss_bbox": 5, "loss_giou": 2}
    param_dicts = [
        {"params": [p for n, p in model.named_parameters() if "backbone" not in n]},
        {
            "params": [p for n, p in model.named_parameters() if "backbone" in n],
            "lr": 1e-3,
        },
    ]
    optimizer = torch.optim.AdamW(param_dicts, lr=1e-2, weight_decay=1e-4)
    lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 2)
    out = []
    for _ in range(args.steps):
        images = torch.rand(2, 3, 8, 8)
        targets = make_targets([2, 3])
        outputs = model(images)
        loss_dict, indices = criterion(outputs, targets)
        losses = sum(loss_dict[k] * weight_dict[k] for k in loss_dict.keys())
        optimizer.zero_grad()
        losses.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        lr_scheduler.step()
        out += [losses.item(), norm.item()] + [v.item() for v in loss_dict.values()]
        out += [float(k) for i, j in indices for k in torch.cat([i, j]).tolist()]
        out += values(model)
    return out


if __name__ == "__main__":
    main()
