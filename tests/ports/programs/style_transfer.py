"""Neural style transfer in the style of PyTorch's tutorial, on a small random CNN.

The tutorial's mechanics: a ``Normalization`` module of ``torch.tensor(mean).view(-1, 1, 1)``,
content and style loss modules inserted into a new ``nn.Sequential`` with ``add_module`` while
walking ``cnn.children()`` (``nn.ReLU(inplace=False)`` replacing in-place ones), the model
trimmed after the last loss by slicing the Sequential, Gram matrices by ``view`` and
``torch.mm(features, features.t())``, targets kept as ``detach()``-ed tensors, and an input
image optimised by ``optim.LBFGS([input_img])`` through a closure that clamps
``input_img.clamp_(0, 1)`` under ``torch.no_grad()``. (The tutorial's VGG-19 weights are not
available offline; the CNN here has the same layer types. It runs in float64 by default:
LBFGS magnifies float32 rounding differences between BLAS builds.)
"""

from __future__ import annotations

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim


class ContentLoss(nn.Module):
    def __init__(self, target):
        super().__init__()
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):
    a, b, c, d = input.size()
    features = input.view(a * b, c * d)
    G = torch.mm(features, features.t())
    return G.div(a * b * c * d)


class StyleLoss(nn.Module):
    def __init__(self, target_feature):
        super().__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        G = gram_matrix(input)
        self.loss = F.mse_loss(G, self.target)
        return input


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


def make_cnn():
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(8, 8, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2, 2),
        nn.Conv2d(8, 16, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.Conv2d(16, 16, 3, padding=1),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2, 2),
        nn.Conv2d(16, 16, 3, padding=1),
    ).eval()


def get_style_model_and_losses(
    cnn, mean, std, style_img, content_img, content_layers, style_layers
):
    normalization = Normalization(mean, std)
    content_losses, style_losses = [], []
    model = nn.Sequential(normalization)
    i = 0
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = f"conv_{i}"
        elif isinstance(layer, nn.ReLU):
            name = f"relu_{i}"
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = f"pool_{i}"
        elif isinstance(layer, nn.BatchNorm2d):
            name = f"bn_{i}"
        else:
            raise RuntimeError(f"Unrecognized layer: {layer.__class__.__name__}")
        model.add_module(name, layer)
        if name in content_layers:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module(f"content_loss_{i}", content_loss)
            content_losses.append(content_loss)
        if name in style_layers:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module(f"style_loss_{i}", style_loss)
            style_losses.append(style_loss)
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
            break
    model = model[: (i + 1)]
    return model, style_losses, content_losses


def main(argv=None):
    parser = argparse.ArgumentParser(description="neural style transfer")
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--size", type=int, default=16)
    parser.add_argument("--style-weight", type=float, default=1e4)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    parser.add_argument("--dtype", default="float64", help="LBFGS magnifies float32 rounding")
    args = parser.parse_args(argv)
    default_dtype = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, args.dtype))
    try:
        return transfer(args)
    finally:
        torch.set_default_dtype(default_dtype)


def transfer(args):
    torch.manual_seed(0)
    cnn = make_cnn()
    style_img = torch.rand(1, 3, args.size, args.size)
    content_img = torch.rand(1, 3, args.size, args.size)
    if args.save_init:
        torch.save({"cnn": cnn.state_dict(), "style": {"img": style_img},
                    "content": {"img": content_img}}, args.save_init)  # fmt: skip
    if args.init:
        state = torch.load(args.init)
        cnn.load_state_dict(state["cnn"])
        style_img, content_img = state["style"]["img"], state["content"]["img"]
    input_img = content_img.clone()
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    model, style_losses, content_losses = get_style_model_and_losses(
        cnn, mean, std, style_img, content_img, ["conv_3"], ["conv_1", "conv_2", "conv_3", "conv_4"]
    )
    input_img.requires_grad_(True)
    model.eval()
    model.requires_grad_(False)
    optimizer = optim.LBFGS([input_img])
    losses = []
    run = [0]
    while run[0] <= args.steps:

        def closure():
            with torch.no_grad():
                input_img.clamp_(0, 1)
            optimizer.zero_grad()
            model(input_img)
            style_score = sum(sl.loss for sl in style_losses) * args.style_weight
            content_score = sum(cl.loss for cl in content_losses)
            loss = style_score + content_score
            loss.backward()
            run[0] += 1
            losses.append(loss.item())
            return style_score + content_score

        optimizer.step(closure)
    with torch.no_grad():
        input_img.clamp_(0, 1)
    return [*losses, input_img.sum().item(), float(len(model))]


if __name__ == "__main__":
    main()
