"""Fine-tuning by model surgery, activation checkpointing and Grad-CAM, the way transfer-
learning tutorials ("Finetuning Torchvision Models", "Transfer learning for computer vision")
and the pytorch-grad-cam style scripts use a network's modules and hooks, in float64.

A small VGG-like ``features``/``classifier`` network "pretrained" (a checkpoint saved and
reloaded), its head replaced by ``setattr`` on a ``named_modules`` lookup, the features
frozen by ``requires_grad_(False)`` and unfrozen by name later, ``load_state_dict(...,
strict=False)`` reporting ``missing_keys``/``unexpected_keys``; the optimizer given only
``filter(lambda p: p.requires_grad, ...)`` and a second parameter group added by
``add_param_group`` when the last block is unfrozen; ``torch.utils.checkpoint.checkpoint``
(``use_reentrant=False``) and ``checkpoint_sequential`` around blocks; Grad-CAM with a
forward hook keeping the activations, ``register_full_backward_hook`` keeping the output
gradients, a tensor hook (``register_hook``) beside it, channel weights by ``mean`` over
space, ``F.relu`` of the weighted sum, ``F.interpolate(mode="bilinear",
align_corners=False)`` up to the input and min-max normalisation; hooks removed by their
handles. Returns the losses, the reported keys, the CAMs, gradients and parameters.
"""

from __future__ import annotations

import argparse
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint, checkpoint_sequential


class SmallVGG(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(4, 6, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(6, 6, 3, padding=1),
            nn.ReLU(),
        )
        self.avgpool = nn.AdaptiveAvgPool2d((2, 2))
        self.classifier = nn.Sequential(
            nn.Dropout(0.0), nn.Linear(24, 8), nn.ReLU(), nn.Linear(8, classes)
        )
        self.checkpointed = False

    def forward(self, x):
        if self.checkpointed:
            x = checkpoint_sequential(self.features, 2, x, use_reentrant=False)
            x = checkpoint(self.avgpool, x, use_reentrant=False)
        else:
            x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def values(model):
    out = []
    for p in model.parameters():
        out += p.detach().flatten()[:3].tolist() + [p.detach().abs().sum().item()]
        if p.grad is not None:
            out += p.grad.flatten()[:3].tolist() + [p.grad.abs().sum().item()]
    return out


def grad_cam(model, layer, x, target):
    store = {}

    def forward_hook(module, inputs, output):
        store["act"] = output.detach()
        output.register_hook(lambda g: store.__setitem__("tensor_grad", g))

    def backward_hook(module, grad_input, grad_output):
        store["grad"] = grad_output[0].detach()

    handles = [
        layer.register_forward_hook(forward_hook),
        layer.register_full_backward_hook(backward_hook),
    ]
    model.zero_grad()
    logits = model(x)
    logits.gather(1, target.unsqueeze(1)).sum().backward()
    for h in handles:
        h.remove()
    weights = store["grad"].mean(dim=(2, 3), keepdim=True)
    cam = F.relu((weights * store["act"]).sum(dim=1, keepdim=True))
    cam = F.interpolate(cam, size=x.shape[-2:], mode="bilinear", align_corners=False)
    flat = cam.flatten(1)
    low, high = flat.min(1, keepdim=True)[0], flat.max(1, keepdim=True)[0]
    cam = ((flat - low) / (high - low + 1e-12)).view_as(cam)
    same = (store["grad"] - store["tensor_grad"]).abs().max().item()
    return cam, same, len(layer._forward_hooks) + len(layer._backward_hooks)


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
    model = SmallVGG()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "pretrained.pt")
        torch.save(model.state_dict(), path)
        # the new task has 3 classes: replace the last layer, then load what still fits
        modules = dict(model.named_modules())
        setattr(modules["classifier"], "3", nn.Linear(8, 3))
        with torch.no_grad():
            head = model.classifier[3]
            head.weight.copy_(torch.linspace(-0.3, 0.3, head.weight.numel()).view_as(head.weight))
            head.bias.zero_()
        state = torch.load(path, weights_only=True)
        state = {k: v for k, v in state.items() if not k.startswith("classifier.3")}
        state["extra.buffer"] = torch.zeros(1)
        report = model.load_state_dict(state, strict=False)
        out += [float(len(report.missing_keys)), float(len(report.unexpected_keys))]
        out += [float(k == "classifier.3.weight") for k in report.missing_keys]
    model.features.requires_grad_(False)
    trainable = filter(lambda p: p.requires_grad, model.parameters())
    optimizer = torch.optim.SGD(trainable, lr=0.1, momentum=0.9)
    out.append(float(sum(p.numel() for p in model.parameters() if p.requires_grad)))
    for step in range(args.steps):
        if step == 1:  # unfreeze the last conv block, with a smaller learning rate
            last = model.features[5]
            last.requires_grad_(True)
            optimizer.add_param_group({"params": list(last.parameters()), "lr": 0.01})
            model.checkpointed = True
        x = torch.rand(4, 3, 8, 8)
        y = torch.randint(0, 3, (4,))
        x[torch.arange(4), y] += 0.7
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        out += [loss.item(), float(model.features[0].weight.grad is None)] + values(model)
    model.eval()
    cam, same, left = grad_cam(model, model.features[5], x, y)
    out += cam.flatten()[::5].tolist() + [same, float(left)]
    return out


if __name__ == "__main__":
    main()
