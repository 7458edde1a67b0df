"""Hessian-free (truncated Newton) training with curvature products, after the Martens-style
optimisers people write in plain PyTorch, on a small regression network, in float64.

Parameters flattened with ``torch.nn.utils.parameters_to_vector`` and written back with
``vector_to_parameters``; the loss as a function of that vector through
``torch.func.functional_call`` of the unflattened pieces; Hessian-vector products by
``torch.autograd.functional.hvp`` and by double backward (``autograd.grad`` with
``create_graph=True`` then a dot with the vector); Gauss-Newton-vector products from a
forward-mode Jacobian-vector product (``torch.autograd.forward_ad``: ``dual_level``,
``make_dual``, ``unpack_dual``) followed by a reverse ``vjp``;
``torch.autograd.functional.jacobian`` of the network output and ``hessian`` of the loss in
the last layer's weights; a damped conjugate-gradient solve with a Levenberg-Marquardt
damping update from the reduction ratio; a custom ``autograd.Function`` with ``jvp``
(``ctx.save_for_forward``) and ``set_materialize_grads(False)``; ``ctx.needs_input_grad``
honoured. Returns the losses, dampings, CG residuals,
curvature products and parameters.
"""

from __future__ import annotations

import argparse

import torch
import torch.autograd.forward_ad as fwAD
import torch.nn as nn
from torch.func import functional_call
from torch.nn.utils import parameters_to_vector, vector_to_parameters


class SoftCube(torch.autograd.Function):
    """x + x^3 / 3 with a hand-written backward and forward-mode rule."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x, scale)
        ctx.save_for_forward(x, scale)
        return scale * (x + x**3 / 3)

    @staticmethod
    def backward(ctx, grad):
        if grad is None:
            return None, None
        x, scale = ctx.saved_tensors
        gx = grad * scale * (1 + x**2) if ctx.needs_input_grad[0] else None
        gs = (grad * (x + x**3 / 3)).sum().reshape(scale.shape) if ctx.needs_input_grad[1] else None
        return gx, gs

    @staticmethod
    def jvp(ctx, x_t, scale_t):
        x, scale = ctx.saved_tensors
        out = scale * (1 + x**2) * x_t
        if scale_t is not None:
            out = out + scale_t * (x + x**3 / 3)
        return out


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(2, 5)
        self.fc2 = nn.Linear(5, 1)
        self.scale = nn.Parameter(torch.tensor([0.5]))

    def forward(self, x):
        return self.fc2(SoftCube.apply(torch.tanh(self.fc1(x)), self.scale)).squeeze(-1)


def unflatten(model, vector):
    shapes = {name: p.shape for name, p in model.named_parameters()}
    out, offset = {}, 0
    for name, shape in shapes.items():
        n = shape.numel()
        out[name] = vector[offset : offset + n].view(shape)
        offset += n
    return out


def conjugate_gradient(product, b, iters=6, tol=1e-10):
    x = torch.zeros_like(b)
    r = b.clone()
    p = r.clone()
    rs = r @ r
    for _ in range(iters):
        Ap = product(p)
        alpha = rs / (p @ Ap)
        x = x + alpha * p
        r = r - alpha * Ap
        new = r @ r
        if new.sqrt() < tol:
            break
        p = r + (new / rs) * p
        rs = new
    return x, r.norm()


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
    model = Net()
    if args.init:
        model.load_state_dict(torch.load(args.init))
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
    x = torch.linspace(-1, 1, 12).view(6, 2)
    y = torch.sin(3 * x[:, 0]) * x[:, 1]

    def loss_of(vector):
        return ((functional_call(model, unflatten(model, vector), (x,)) - y) ** 2).mean()

    def outputs_of(vector):
        return functional_call(model, unflatten(model, vector), (x,))

    damping = 1.0
    out = []
    for _ in range(args.steps):
        theta = parameters_to_vector(model.parameters()).detach()
        loss = ((model(x) - y) ** 2).mean()
        grad = torch.autograd.grad(loss, model.parameters())
        g = torch.cat([t.flatten() for t in grad])

        def gauss_newton(v, theta=theta, damping=damping):
            with fwAD.dual_level():
                dual = fwAD.make_dual(theta, v)
                jv = fwAD.unpack_dual(outputs_of(dual)).tangent
            _, vjp = torch.autograd.functional.vjp(outputs_of, theta, 2 * jv / y.numel())
            return vjp + damping * v

        step, residual = conjugate_gradient(gauss_newton, -g)
        _, hv = torch.autograd.functional.hvp(loss_of, theta, step)
        theta_rg = theta.clone().requires_grad_(True)
        (g2,) = torch.autograd.grad(loss_of(theta_rg), theta_rg, create_graph=True)
        (hv2,) = torch.autograd.grad(g2 @ step, theta_rg)
        predicted = (g @ step + 0.5 * step @ (gauss_newton(step) - damping * step)).item()
        new_loss = loss_of(theta + step).item()
        rho = (new_loss - loss.item()) / predicted
        if rho > 0.75:
            damping *= 2.0 / 3.0
        elif rho < 0.25:
            damping *= 1.5
        if new_loss < loss.item():
            vector_to_parameters(theta + step, model.parameters())
        out += [loss.item(), new_loss, rho, damping, residual.item()]
        out += hv.tolist()[:6] + (hv - hv2).abs().max().unsqueeze(0).tolist()
    jac = torch.autograd.functional.jacobian(outputs_of, theta)
    theta = parameters_to_vector(model.parameters()).detach()
    head = theta[-7:-1]  # fc2's weight and bias: the curvature of the last layer

    def head_loss(w):
        return loss_of(torch.cat([theta[:-7], w, theta[-1:]]))

    hess = torch.autograd.functional.hessian(head_loss, head)
    out += list(jac.shape) + jac.flatten()[:10].tolist() + hess.diagonal().tolist()
    out += [(hess - hess.T).abs().max().item()]
    with torch.no_grad():
        out += [p.sum().item() for p in model.parameters()]
    return out


if __name__ == "__main__":
    main()
