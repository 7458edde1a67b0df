"""MAML on sine regression with torch.func, after functorch's example
``maml_regression/evjang_transforms.py``, at a small size.

A functional MLP over a list of raw tensors (``torch.Tensor(n, m).uniform_(...)``), the inner
step ``grad(inner_loss)(tuple(params), x1, y1)`` inside ``vmap`` over tasks, the adapted
parameters ``params[i] - inner_lr * grads[i]``, and the outer loss's ``backward()`` through the
inner gradient (second order) into Adam; tasks drawn with ``np.random`` as the example does.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import torch
from torch.func import grad, vmap
from torch.nn import functional as F

mse_loss = F.mse_loss


def net(params, x):
    x = F.linear(x, params[0], params[1])
    x = F.relu(x)

    x = F.linear(x, params[2], params[3])
    x = F.relu(x)

    x = F.linear(x, params[4], params[5])
    return x


def sample_tasks(outer_batch_size, inner_batch_size):
    # Select amplitude and phase for the task
    As = []
    phases = []
    for _ in range(outer_batch_size):
        As.append(np.random.uniform(low=0.1, high=0.5))
        phases.append(np.random.uniform(low=0.0, high=np.pi))

    def get_batch():
        xs, ys = [], []
        for A, phase in zip(As, phases):
            x = np.random.uniform(low=-5.0, high=5.0, size=(inner_batch_size, 1))
            y = A * np.sin(x + phase)
            xs.append(x)
            ys.append(y)
        return torch.tensor(np.array(xs), dtype=torch.float), torch.tensor(
            np.array(ys), dtype=torch.float
        )

    x1, y1 = get_batch()
    x2, y2 = get_batch()
    return x1, y1, x2, y2


def main(argv: list[str] | None = None) -> list[float]:
    """Meta-train; return each iteration's outer loss, then the loss on new tasks before and
    after one adaptation step."""
    parser = argparse.ArgumentParser(description="MAML sine regression with torch.func")
    parser.add_argument("--iterations", type=int, default=6)
    parser.add_argument("--hidden", type=int, default=40)
    parser.add_argument("--num-tasks", type=int, default=4)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--inner-lr", type=float, default=1e-2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    np.random.seed(args.seed)
    h = args.hidden

    params = [
        torch.Tensor(h, 1).uniform_(-1.0, 1.0).requires_grad_(),
        torch.Tensor(h).zero_().requires_grad_(),
        torch.Tensor(h, h).uniform_(-1.0 / math.sqrt(h), 1.0 / math.sqrt(h)).requires_grad_(),
        torch.Tensor(h).zero_().requires_grad_(),
        torch.Tensor(1, h).uniform_(-1.0 / math.sqrt(h), 1.0 / math.sqrt(h)).requires_grad_(),
        torch.Tensor(1).zero_().requires_grad_(),
    ]
    if args.init:
        init = torch.load(args.init)
        with torch.no_grad():
            for i, p in enumerate(params):
                p.copy_(init[f"p{i}"])
    if args.save_init:
        torch.save({f"p{i}": p.detach() for i, p in enumerate(params)}, args.save_init)

    opt = torch.optim.Adam(params, lr=1e-2)
    inner_lr = args.inner_lr

    def get_loss_for_task(x1, y1, x2, y2):
        def inner_loss(params, x1, y1):
            f = net(params, x1)
            loss = mse_loss(f, y1)
            return loss

        grads = grad(inner_loss)(tuple(params), x1, y1)
        new_params = [(params[i] - inner_lr * grads[i]) for i in range(len(params))]

        v_f = net(new_params, x2)
        return mse_loss(v_f, y2)

    out: list[float] = []
    for it in range(args.iterations):
        opt.zero_grad()
        task = sample_tasks(args.num_tasks, args.k)
        inner_losses = vmap(get_loss_for_task)(task[0], task[1], task[2], task[3])
        loss2 = sum(inner_losses) / len(inner_losses)
        loss2.backward()
        opt.step()
        print(f"Iteration {it}: loss {loss2.item():.4f}")
        out += [loss2.item(), params[0].grad.norm().item()]

    # adapt to new tasks: the loss before and after one inner step
    x1, y1, x2, y2 = sample_tasks(args.num_tasks, args.k)
    with torch.no_grad():
        before = [mse_loss(net(params, x2[i]), y2[i]).item() for i in range(args.num_tasks)]
    after = vmap(get_loss_for_task)(x1, y1, x2, y2)
    return out + before + after.tolist()


if __name__ == "__main__":
    main()
