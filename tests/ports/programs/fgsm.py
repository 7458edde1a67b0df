"""Adversarial examples by the fast gradient sign method, in the style of PyTorch's "Adversarial
Example Generation" tutorial.

A small LeNet is trained briefly (optionally on FGSM examples too: adversarial training), then
put in ``model.eval()``; for each epsilon every test image is attacked one at a time:
``data.requires_grad = True`` (or ``requires_grad_()``), ``F.nll_loss``, ``model.zero_grad()``,
``loss.backward()``, ``data.grad.data.sign()``, the image de-normalised, perturbed,
``torch.clamp``-ed to [0, 1] and normalised again, and re-classified. The accuracy under
attack and a few adversarial examples' statistics are the results. The digits are synthetic.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

MEAN, STD = 0.1307, 0.3081


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 8, 3)
        self.dropout1 = nn.Dropout(0.25)
        self.fc1 = nn.Linear(8 * 2 * 2, 24)
        self.fc2 = nn.Linear(24, 4)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = torch.flatten(x, 1)
        x = self.dropout1(F.relu(self.fc1(x)))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def synthetic_digits(rng, templates, count):
    labels = rng.integers(0, len(templates), size=count)
    noise = rng.normal(0.0, 0.2, size=(count,) + templates.shape[1:])
    images = np.clip(templates[labels] + noise, 0.0, 1.0)
    images = (images - MEAN) / STD
    return torch.tensor(images[:, None], dtype=torch.float32), torch.from_numpy(labels)


# FGSM attack code
def fgsm_attack(image, epsilon, data_grad):
    # Collect the element-wise sign of the data gradient
    sign_data_grad = data_grad.sign()
    # Create the perturbed image by adjusting each pixel of the input image
    perturbed_image = image + epsilon * sign_data_grad
    # Adding clipping to maintain [0,1] range
    perturbed_image = torch.clamp(perturbed_image, 0, 1)
    return perturbed_image


def denorm(batch, mean=(MEAN,), std=(STD,)):
    mean = torch.tensor(mean).view(1, -1, 1, 1)
    std = torch.tensor(std).view(1, -1, 1, 1)
    return batch * std + mean


def normalize(batch):
    return (batch - MEAN) / STD


def test(model, test_x, test_y, epsilon, spelling):
    correct = 0
    adv_examples = []
    for i in range(len(test_y)):
        data, target = test_x[i : i + 1].clone(), test_y[i : i + 1]
        if spelling == "attribute":
            data.requires_grad = True
        else:
            data.requires_grad_()
        output = model(data)
        init_pred = output.max(1, keepdim=True)[1]
        # If the initial prediction is wrong, don't bother attacking
        if init_pred.item() != target.item():
            continue
        loss = F.nll_loss(output, target)
        model.zero_grad()
        loss.backward()
        data_grad = data.grad.data
        data_denorm = denorm(data)
        perturbed_data = fgsm_attack(data_denorm, epsilon, data_grad)
        perturbed_data_normalized = normalize(perturbed_data)
        output = model(perturbed_data_normalized)
        final_pred = output.max(1, keepdim=True)[1]
        if final_pred.item() == target.item():
            correct += 1
        elif len(adv_examples) < 3:
            adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
            adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))
    final_acc = correct / float(len(test_y))
    print(f"Epsilon: {epsilon}\tTest Accuracy = {correct} / {len(test_y)} = {final_acc}")
    return final_acc, adv_examples


def main(argv=None):
    parser = argparse.ArgumentParser(description="FGSM adversarial examples")
    parser.add_argument("--size", type=int, default=14)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--test-count", type=int, default=12)
    parser.add_argument("--lr", type=float, default=2e-2)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.0, 0.05, 0.2])
    parser.add_argument("--adversarial-training", action="store_true")
    parser.add_argument("--spelling", choices=["attribute", "method"], default="attribute")
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)

    rng = np.random.default_rng(0)
    templates = np.zeros((4, args.size, args.size))
    templates[0, 3:11, 6:8] = 1.0
    templates[1, 6:8, 3:11] = 1.0
    templates[2, 3:11, 3:11] = np.eye(8)
    templates[3, 3:11, 3:11] = np.eye(8)[::-1]
    train_x, train_y = synthetic_digits(rng, templates, args.steps * args.batch_size)
    test_x, test_y = synthetic_digits(rng, templates, args.test_count)

    model = Net()
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    if args.init:
        model.load_state_dict(torch.load(args.init))
    optimizer = optim.Adam(model.parameters(), lr=args.lr)

    losses = []
    model.train()
    for step in range(args.steps):
        data = train_x[step * args.batch_size : (step + 1) * args.batch_size]
        target = train_y[step * args.batch_size : (step + 1) * args.batch_size]
        if args.adversarial_training:
            # FGSM examples from the current model, then a step on clean + adversarial
            x = data.clone().requires_grad_(True)
            attack_loss = F.nll_loss(model(x), target)
            (grad,) = torch.autograd.grad(attack_loss, x)
            x_adv = normalize(fgsm_attack(denorm(data), 0.1, grad)).detach()
            data = torch.cat([data, x_adv])
            target = torch.cat([target, target])
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    # Set the model in evaluation mode. In this case this is for the Dropout layers
    model.eval()
    for eps in args.epsilons:
        acc, ex = test(model, test_x, test_y, eps, args.spelling)
        losses.append(acc)
        losses += [float(np.abs(e).mean()) for _, _, e in ex]
    return losses


if __name__ == "__main__":
    main()
