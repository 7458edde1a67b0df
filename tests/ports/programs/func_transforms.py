"""The torch.func tutorials at a small size: per-sample gradients (``functional_call`` +
``vmap`` + ``grad``, checked against a loop of ``torch.autograd.grad``) used for DP-SGD-style
training with per-sample clipping, model ensembling (``stack_module_state`` + ``vmap``), and
Jacobians and Hessians (``jacrev``, ``jacfwd``, ``vjp``, ``hessian``, batched by ``vmap``).
"""

from __future__ import annotations

import argparse
import copy
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, hessian, jacfwd, jacrev, stack_module_state, vjp, vmap


class SimpleCNN(nn.Module):
    def __init__(self):
        super(SimpleCNN, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


class SimpleMLP(nn.Module):
    def __init__(self):
        super(SimpleMLP, self).__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 32)
        self.fc3 = nn.Linear(32, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


def loss_fn(predictions, targets):
    return F.nll_loss(predictions, targets)


def per_sample_gradients(args, init, out):
    """The per-sample-gradients tutorial, then a few DP-SGD steps built on it."""
    model = SimpleCNN()
    if init is not None:
        model.load_state_dict(init["cnn"])
    saved = {"cnn": copy.deepcopy(model.state_dict())}
    batch_size = args.batch_size
    data = torch.randn(batch_size, 1, 8, 8)
    targets = torch.randint(10, (batch_size,))

    def compute_grad(sample, target):
        sample = sample.unsqueeze(0)  # prepend batch dimension for processing
        target = target.unsqueeze(0)
        prediction = model(sample)
        loss = loss_fn(prediction, target)
        return torch.autograd.grad(loss, list(model.parameters()))

    def compute_sample_grads(data, targets):
        """manually process each sample with per sample gradient"""
        sample_grads = [compute_grad(data[i], targets[i]) for i in range(batch_size)]
        sample_grads = zip(*sample_grads)
        sample_grads = [torch.stack(shards) for shards in sample_grads]
        return sample_grads

    per_sample_grads = compute_sample_grads(data, targets)

    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def compute_loss(params, buffers, sample, target):
        batch = sample.unsqueeze(0)
        targets = target.unsqueeze(0)
        predictions = functional_call(model, (params, buffers), (batch,))
        loss = loss_fn(predictions, targets)
        return loss

    ft_compute_grad = grad(compute_loss)
    ft_compute_sample_grad = vmap(ft_compute_grad, in_dims=(None, None, 0, 0))
    ft_per_sample_grads = ft_compute_sample_grad(params, buffers, data, targets)
    for per_sample_grad, ft_per_sample_grad in zip(per_sample_grads, ft_per_sample_grads.values()):
        assert torch.allclose(per_sample_grad, ft_per_sample_grad, atol=3e-3, rtol=1e-5)
        out.extend(ft_per_sample_grad.flatten(1).norm(dim=1).tolist())

    # DP-SGD: clip each sample's gradient to max_norm, average, add nothing (noise off).
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    for step in range(args.steps):
        x = torch.randn(batch_size, 1, 8, 8)
        y = torch.randint(10, (batch_size,))
        params = {k: v.detach() for k, v in model.named_parameters()}
        grads = ft_compute_sample_grad(params, buffers, x, y)
        norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads.values()], dim=1).norm(dim=1)
        factor = (args.max_norm / (norms + 1e-6)).clamp(max=1.0)
        for name, p in model.named_parameters():
            g = grads[name]
            p.grad = (g * factor.view(-1, *([1] * (g.dim() - 1)))).mean(0)
        optimizer.step()
        with torch.no_grad():
            loss = loss_fn(model(x), y)
        print(f"dp-sgd step {step}: loss {loss.item():.4f} mean norm {norms.mean().item():.4f}")
        out += [loss.item(), norms.mean().item()]
    return saved


def ensembling(args, init, out):
    """The model-ensembling tutorial: the same or different minibatches through N models."""
    num_models = args.num_models
    data = torch.randn(8, 16, 1, 8, 8)
    models = [SimpleMLP() for _ in range(num_models)]
    if init is not None:
        for i, m in enumerate(models):
            m.load_state_dict(init[f"mlp{i}"])
    saved = {f"mlp{i}": copy.deepcopy(m.state_dict()) for i, m in enumerate(models)}

    minibatches = data[:num_models]
    predictions_diff_minibatch_loop = [
        model(minibatch) for model, minibatch in zip(models, minibatches)
    ]
    minibatch = data[0]
    predictions2 = [model(minibatch) for model in models]

    params, buffers = stack_module_state(models)
    base_model = copy.deepcopy(models[0])
    if args.base == "meta":
        base_model = base_model.to("meta")

    def fmodel(params, buffers, x):
        return functional_call(base_model, (params, buffers), (x,))

    predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
    assert torch.allclose(
        predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-3, rtol=1e-5
    )
    predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)
    out.extend(predictions1_vmap.sum(dim=(1, 2)).tolist())
    out.extend(predictions2_vmap[:, :4, 0].flatten().tolist())
    # the ensemble's vote on the shared minibatch
    votes = predictions2_vmap.argmax(dim=-1).mode(dim=0).values
    out.extend(votes.float().tolist())
    return saved


def jacobians_hessians(args, out):
    """The Jacobians-and-Hessians tutorial."""

    def predict(weight, bias, x):
        return F.linear(x, weight, bias).tanh()

    D = args.dim
    weight = torch.randn(D, D)
    bias = torch.randn(D)
    x = torch.randn(D)  # feature vector

    xp = x.clone().requires_grad_()
    unit_vectors = torch.eye(D)

    def compute_jac(xp):
        jacobian_rows = [
            torch.autograd.grad(predict(weight, bias, xp), xp, vec)[0] for vec in unit_vectors
        ]
        return torch.stack(jacobian_rows)

    jacobian = compute_jac(xp)

    _, vjp_fn = vjp(partial(predict, weight, bias), x)
    (ft_jacobian,) = vmap(vjp_fn)(unit_vectors)
    assert torch.allclose(ft_jacobian, jacobian)
    ft_jacobian = jacrev(predict, argnums=2)(weight, bias, x)
    assert torch.allclose(ft_jacobian, jacobian)
    fwd_jacobian = jacfwd(predict, argnums=2)(weight, bias, x)
    assert torch.allclose(fwd_jacobian, ft_jacobian)
    ft_jac_weight, ft_jac_bias = jacrev(predict, argnums=(0, 1))(weight, bias, x)
    out.extend(jacobian.sum(0).tolist())
    out += [ft_jac_weight.sum().item(), ft_jac_weight.abs().sum().item()]
    out.extend(ft_jac_bias.diagonal().tolist())

    hess_api = hessian(predict, argnums=2)(weight, bias, x)
    hess_fwdfwd = jacfwd(jacfwd(predict, argnums=2), argnums=2)(weight, bias, x)
    hess_revrev = jacrev(jacrev(predict, argnums=2), argnums=2)(weight, bias, x)
    assert torch.allclose(hess_api, hess_fwdfwd)
    assert torch.allclose(hess_api, hess_revrev, atol=1e-5)
    out += [hess_api.sum().item(), hess_api.abs().sum().item()]
    out.extend(hess_api[0, 0].tolist())

    batch_size = 4
    x = torch.randn(batch_size, D)
    compute_batch_jacobian = vmap(jacrev(predict, argnums=2), in_dims=(None, None, 0))
    batch_jacobian0 = compute_batch_jacobian(weight, bias, x)

    def predict_with_output_summed(weight, bias, x):
        return predict(weight, bias, x).sum(0)

    batch_jacobian1 = jacrev(predict_with_output_summed, argnums=2)(weight, bias, x).movedim(1, 0)
    # (the tutorial's default tolerances: a vmap that runs each sample on its own, with a
    # vector through linear where torch batches a matrix, and on some CPUs' BLAS the two
    # round apart in float32's last bit, 3e-7, beyond rtol=1e-5 where 1 - tanh**2 is tiny)
    assert torch.allclose(batch_jacobian0, batch_jacobian1, atol=1e-6)
    compute_batch_hessian = vmap(hessian(predict, argnums=2), in_dims=(None, None, 0))
    batch_hess = compute_batch_hessian(weight, bias, x)
    out.extend(batch_jacobian0.sum(dim=(1, 2)).tolist())
    out.extend(batch_hess.sum(dim=(1, 2, 3)).tolist())


def main(argv: list[str] | None = None) -> list[float]:
    """Run the tutorials; return their numbers (gradient norms, losses, predictions, ...)."""
    parser = argparse.ArgumentParser(description="torch.func tutorials")
    parser.add_argument("--task", choices=["all", "per-sample", "ensemble", "jacobians"],
                        default="all")  # fmt: skip
    parser.add_argument("--batch-size", type=int, default=6)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--max-norm", type=float, default=1.0)
    parser.add_argument("--num-models", type=int, default=4)
    parser.add_argument(
        "--base", choices=["copy", "meta"], default="copy", help="the ensemble's base model"
    )
    parser.add_argument("--dim", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-init", type=str, default=None)
    parser.add_argument("--init", type=str, default=None)
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    init = torch.load(args.init) if args.init else None
    out: list[float] = []
    saved = {}
    if args.task in ("all", "per-sample"):
        saved.update(per_sample_gradients(args, init, out))
    if args.task in ("all", "ensemble"):
        saved.update(ensembling(args, init, out))
    if args.task in ("all", "jacobians"):
        jacobians_hessians(args, out)
    if args.save_init:
        torch.save(saved, args.save_init)
    return out


if __name__ == "__main__":
    main()
