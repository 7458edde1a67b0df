"""A one-stage object detector's training and inference (after RetinaNet as written in
yhenon/pytorch-retinanet and torchvision's ``sigmoid_focal_loss`` / ``box_iou`` / ``nms``, here
by hand as people do without torchvision), on synthetic images of bright squares, in float64.

Anchors from ``torch.meshgrid(indexing="ij")`` over a feature grid, sizes and aspect ratios
(``stack``, ``reshape``); pairwise IoU by broadcast ``max``/``min`` and ``clamp(min=0)``;
matching by ``max(dim=1)`` with positive/ignored/negative thresholds and the best anchor of
every box forced positive (``argmax`` + index assignment); box deltas encoded with ``log`` of
size ratios over standard deviations (``new_tensor``); a conv backbone with classification and
regression heads (the classification bias initialised to ``-log((1 - pi) / pi)``); the focal
loss from ``binary_cross_entropy_with_logits(reduction="none")`` weighted by
``(1 - p_t) ** gamma`` and ``alpha``, normalised by the positives;
``smooth_l1_loss(beta=1/9)`` on positives selected by a boolean mask. Inference decodes the
deltas, keeps scores over a threshold (``nonzero``) and runs greedy NMS written with
``sort(descending=True)`` and a ``while`` loop. Returns the losses, match counts and
detections.
"""

from __future__ import annotations

import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

STD = (0.1, 0.1, 0.2, 0.2)


def make_anchors(grid, stride, sizes=(6.0, 10.0), ratios=(0.5, 1.0, 2.0)):
    ys, xs = torch.meshgrid(torch.arange(grid), torch.arange(grid), indexing="ij")
    centers = torch.stack([xs, ys], dim=-1).reshape(-1, 1, 2).to(torch.get_default_dtype())
    centers = (centers + 0.5) * stride
    shapes = []
    for size in sizes:
        for ratio in ratios:
            shapes.append([size / math.sqrt(ratio), size * math.sqrt(ratio)])
    half = torch.tensor(shapes).unsqueeze(0) / 2
    return torch.cat([centers - half, centers + half], dim=-1).reshape(-1, 4)


def box_iou(a, b):
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (area_a[:, None] + area_b[None, :] - inter)


def encode(anchors, boxes):
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = anchors[:, 0] + 0.5 * aw, anchors[:, 1] + 0.5 * ah
    bw, bh = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    bx, by = boxes[:, 0] + 0.5 * bw, boxes[:, 1] + 0.5 * bh
    deltas = torch.stack([(bx - ax) / aw, (by - ay) / ah, torch.log(bw / aw), torch.log(bh / ah)])
    return deltas.t() / deltas.new_tensor(STD)


def decode(anchors, deltas):
    deltas = deltas * deltas.new_tensor(STD)
    aw, ah = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    ax, ay = anchors[:, 0] + 0.5 * aw, anchors[:, 1] + 0.5 * ah
    cx, cy = ax + deltas[:, 0] * aw, ay + deltas[:, 1] * ah
    w, h = torch.exp(deltas[:, 2]) * aw, torch.exp(deltas[:, 3]) * ah
    return torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=1)


def match(anchors, boxes, labels, pos=0.5, neg=0.4):
    iou = box_iou(anchors, boxes)
    best_iou, best_box = iou.max(dim=1)
    targets = torch.full((anchors.size(0),), -1, dtype=torch.long)  # -1: ignored
    targets[best_iou < neg] = 0  # 0: background
    positive = best_iou >= pos
    forced = iou.argmax(dim=0)
    positive[forced] = True
    best_box[forced] = torch.arange(boxes.size(0))
    targets[positive] = labels[best_box[positive]]
    return targets, best_box, positive


def focal_loss(logits, targets, alpha=0.25, gamma=2.0):
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    return alpha_t * ce * (1 - p_t) ** gamma


class Detector(nn.Module):
    def __init__(self, classes=2, anchors=6, prior=0.01):
        super().__init__()
        self.classes, self.anchors = classes, anchors
        self.backbone = nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU(),
        )  # fmt: skip
        self.cls_head = nn.Conv2d(8, anchors * classes, 3, padding=1)
        self.box_head = nn.Conv2d(8, anchors * 4, 3, padding=1)
        nn.init.normal_(self.cls_head.weight, std=0.01)
        nn.init.constant_(self.cls_head.bias, -math.log((1 - prior) / prior))

    def forward(self, x):
        f = self.backbone(x)
        n = x.size(0)
        cls = self.cls_head(f).permute(0, 2, 3, 1).reshape(n, -1, self.classes)
        box = self.box_head(f).permute(0, 2, 3, 1).reshape(n, -1, 4)
        return cls, box


def nms(boxes, scores, threshold):
    order = scores.sort(descending=True).indices
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i.item())
        if order.numel() == 1:
            break
        iou = box_iou(boxes[i].unsqueeze(0), boxes[order[1:]])[0]
        order = order[1:][iou <= threshold]
    return torch.tensor(keep, dtype=torch.long)


def scene(size=16):
    image = 0.1 * torch.randn(1, size, size)
    boxes, labels = [], []
    for k in range(2):
        x0, y0 = torch.randint(0, size - 7, (2,)).tolist()
        side = 5 + k * 2
        image[0, y0 : y0 + side, x0 : x0 + side] += 1.0 + k
        boxes.append([x0, y0, x0 + side, y0 + side])
        labels.append(k + 1)
    return image, torch.tensor(boxes, dtype=torch.get_default_dtype()), torch.tensor(labels)


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
    model = Detector()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    anchors = make_anchors(grid=4, stride=4)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    out = []
    for _ in range(args.steps):
        scenes = [scene() for _ in range(2)]
        images = torch.stack([s[0] for s in scenes])
        cls_out, box_out = model(images)
        cls_losses, box_losses, positives = [], [], 0
        for j, (_, boxes, labels) in enumerate(scenes):
            targets, assigned, positive = match(anchors, boxes, labels)
            valid = targets >= 0
            onehot = F.one_hot(targets.clamp(min=0), 3)[:, 1:].to(cls_out.dtype)
            num_pos = positive.sum().clamp(min=1)
            cls_losses.append(focal_loss(cls_out[j][valid], onehot[valid]).sum() / num_pos)
            regression = encode(anchors[positive], boxes[assigned[positive]])
            box_losses.append(F.smooth_l1_loss(box_out[j][positive], regression, beta=1 / 9))
            positives += positive.sum().item()
        loss = torch.stack(cls_losses).mean() + torch.stack(box_losses).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out += [loss.item(), torch.stack(box_losses).mean().item(), positives]
    model.eval()
    with torch.no_grad():
        image, boxes, labels = scene()
        cls_out, box_out = model(image.unsqueeze(0))
        scores, classes = torch.sigmoid(cls_out[0]).max(dim=1)
        candidates = (scores > 0.0095).nonzero().squeeze(1)
        decoded = decode(anchors[candidates], box_out[0][candidates])
        keep = nms(decoded, scores[candidates], 0.3)
        out += [candidates.numel(), keep.numel()] + keep[:4].tolist()
        out += decoded[keep[:2]].flatten().tolist() + classes[candidates][keep[:4]].tolist()
    return out
