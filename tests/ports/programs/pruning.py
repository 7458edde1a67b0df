"""The PyTorch pruning tutorial (``torch.nn.utils.prune``) on its LeNet, then a few steps of
fine-tuning the pruned network on synthetic 32x32 images.

``random_unstructured`` (its scores from ``rand_like``, shared), ``l1_unstructured`` by
count and by fraction, ``ln_structured`` over output channels, iterative pruning (a
``PruningContainer``), ``remove``, ``global_unstructured`` with ``L1Unstructured``, and a
custom ``BasePruningMethod``; the ``weight_orig``/``weight_mask`` parameters and buffers and
the forward pre-hooks that recompute ``weight``.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune


class LeNet(nn.Module):
    def __init__(self):
        super(LeNet, self).__init__()
        # 1 input image channel, 6 output channels, 5x5 square conv kernel
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)  # 5x5 image dimension
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


class FooBarPruningMethod(prune.BasePruningMethod):
    """Prune every other entry in a tensor"""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0
        return mask


def foobar_unstructured(module, name):
    """Prunes tensor corresponding to parameter called `name` in `module`
    by removing every other entry in the tensors.
    Modifies module in place (and also return the modified module)
    by:
    1) adding a named buffer called `name+'_mask'` corresponding to the
    binary mask applied to the parameter `name` by the pruning method.
    The parameter `name` is replaced by its pruned version, while the
    original (unpruned) parameter is stored in a new parameter named
    `name+'_orig'`.
    """
    FooBarPruningMethod.apply(module, name)
    return module


def sparsity(t):
    return 100.0 * float(torch.sum(t == 0)) / float(t.nelement())


def main(argv: list[str] | None = None) -> list[float]:
    """Prune as the tutorial does; return sparsities, mask sums and the fine-tuning losses."""
    parser = argparse.ArgumentParser(description="Pruning tutorial")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    out: list[float] = []

    model = LeNet()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    initial = {k: v.clone() for k, v in model.state_dict().items()}

    module = model.conv1
    prune.random_unstructured(module, name="weight", amount=0.3)
    print(list(module.named_parameters())[0][0], list(module.named_buffers())[0][0])
    out.append(module.weight_mask.sum().item())
    prune.l1_unstructured(module, name="bias", amount=3)
    out += module.bias_mask.tolist() + module.bias.tolist()
    print(module._forward_pre_hooks)
    # iterative pruning: the second mask is computed on the unpruned entries only
    prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
    out += module.weight_mask.sum(dim=(1, 2, 3)).tolist()
    for hook in module._forward_pre_hooks.values():
        if hook._tensor_name == "weight":  # select out the correct hook
            break
    print(list(hook))  # pruning history in the container
    out.append(float(len(list(hook))))
    out.append(float(len(model.state_dict())))
    prune.remove(module, "weight")
    out += [sparsity(module.weight), float(prune.is_pruned(model))]

    new_model = LeNet()
    new_model.load_state_dict(initial)
    for _, module in new_model.named_modules():
        # prune 20% of connections in all 2D-conv layers
        if isinstance(module, torch.nn.Conv2d):
            prune.l1_unstructured(module, name="weight", amount=0.2)
        # prune 40% of connections in all linear layers
        elif isinstance(module, torch.nn.Linear):
            prune.l1_unstructured(module, name="weight", amount=0.4)
    print(dict(new_model.named_buffers()).keys())  # to verify that all masks exist
    out += [sparsity(m.weight) for m in (new_model.conv1, new_model.conv2, new_model.fc1)]

    model = LeNet()
    model.load_state_dict(initial)
    parameters_to_prune = (
        (model.conv1, "weight"),
        (model.conv2, "weight"),
        (model.fc1, "weight"),
        (model.fc2, "weight"),
        (model.fc3, "weight"),
    )
    prune.global_unstructured(
        parameters_to_prune,
        pruning_method=prune.L1Unstructured,
        amount=0.2,
    )
    for m in (model.conv1, model.conv2, model.fc1, model.fc2, model.fc3):
        out.append(sparsity(m.weight))
    foobar_unstructured(model.fc3, name="bias")
    out += model.fc3.bias_mask.tolist()

    # fine-tune the globally pruned model: the masks keep the pruned weights at zero
    rng = np.random.default_rng(args.seed)
    x = torch.from_numpy(rng.standard_normal((16, 1, 32, 32)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 10, 16))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(args.steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        print(f"step {step}: loss {loss.item():.4f}")
        out += [loss.item(), sparsity(model.fc1.weight), model.fc1.weight_orig.abs().sum().item()]
    for m, name in parameters_to_prune:
        prune.remove(m, name)
    out += [float(len(model.state_dict())), sparsity(model.fc2.weight)]
    return out


if __name__ == "__main__":
    main()
