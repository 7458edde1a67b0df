"""Stochastic gradient descent with optional momentum and Nesterov momentum."""

from __future__ import annotations

from typing import Any, Optional

from tensorweaver.optim.foreach import foreach_backend, foreach_update, natives
from tensorweaver.optim.optimizer import Optimizer, ParamsT
from tensorweaver.tensor import Tensor


class SGD(Optimizer):
    """``torch.optim.SGD``: ``buf = momentum * buf + (1 - dampening) * g``; ``p -= lr * buf``.

    The momentum buffer starts as the first gradient (no dampening on that step);
    ``nesterov`` steps along ``g + momentum * buf`` instead.
    """

    _sparse_decay_refusal = (
        "SGD: weight_decay adds the dense parameter to the sparse gradient: add(sparse, dense) "
        "is not supported. Use add(dense, sparse) instead (or weight_decay=0)"
    )

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: Optional[bool] = None,
        differentiable: bool = False,
        fused: Optional[bool] = None,
    ) -> None:
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        if group.get("nesterov") and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(
                "SGD: Nesterov momentum requires a momentum and zero dampening (nesterov=True "
                f"with momentum={group['momentum']!r}, dampening={group['dampening']!r})"
            )

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        grad = self._grad(param, group)
        momentum = group["momentum"]
        if momentum != 0:
            state = self.state[param]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.detach().clone()
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            if not group["nesterov"]:
                grad = buf
            elif _adds_into_grads(group):
                grad.add_(buf, alpha=momentum)  # (grad is param.grad itself here)
            else:
                grad = grad.add(buf, alpha=momentum)  # (PyTorch's: one rounding)
        param.add_(grad, alpha=-group["lr"])

    def _step_repeated(self, params: list[Any], group: dict[str, Any]) -> None:
        # PyTorch's loop takes every listing's momentum buffer before stepping any: a listing
        # without one starts its own from the gradient, and the last one started is kept.
        # (self.state.get: reading makes no state entry, as PyTorch's SGD keeps none without
        # momentum)
        started = {
            id(p) for p in params if self.state.get(p, {}).get("momentum_buffer") is not None
        }
        for p in params:
            if id(p) not in started:
                self.state.get(p, {}).pop("momentum_buffer", None)
            self._step_group([p], group)

    def _step_group(self, params: list[Any], group: dict[str, Any]) -> None:
        # The same ops as _update, in the same order, each over the whole group at once.
        backend = foreach_backend(params, group)
        if backend is None:
            super()._step_group(params, group)
            return
        grads = natives([p.grad for p in params])
        # Each tensor written in place where it can be, whatever its size, as torch's
        # _foreach_add_ and _foreach_mul_ write: one call for all, where rebinding the small
        # ones costs a second call and a new array each (torch:cpu, one thread, a plain step
        # over the word-LM Transformer's 29 parameters: 494 against 661 us, torch's 416)
        every = list(range(len(params)))
        if group["maximize"]:
            grads = [backend.neg(g) for g in grads]
        if group["weight_decay"] != 0:
            grads = backend.foreach_add(grads, natives(params), group["weight_decay"])
        momentum = group["momentum"]
        if momentum != 0:
            # (each parameter's buffer as the step found it: a parameter listed twice and
            # without one starts one per listing, the last kept, as PyTorch's step does)
            bufs = [self.state[p].get("momentum_buffer") for p in params]
            if all(buf is not None for buf in bufs):
                # buf.mul_(momentum).add_(g, alpha=1 - dampening), each op over all at once
                foreach_update(bufs, "mul", (momentum,), "mul_", every)
                foreach_update(bufs, "add", (grads, 1 - group["dampening"]), "add_", every)
            else:
                self._start_or_update_each(params, grads, bufs, group, backend)
            if not group["nesterov"]:
                grads = natives(bufs)
            elif _adds_into_grads(group):
                del grads  # (an array still held here is not written in place)
                grads = foreach_update(
                    [p.grad for p in params], "add", (natives(bufs), momentum), "add_", every
                )
            else:
                grads = backend.foreach_add(grads, natives(bufs), momentum)
        foreach_update(params, "add", (grads, -group["lr"]), "add_", every)

    def _start_or_update_each(
        self,
        params: list[Any],
        grads: list[Any],
        bufs: list[Any],
        group: dict[str, Any],
        backend: Any,
    ) -> None:
        """PyTorch's foreach step where some of ``bufs`` (``params``' momentum buffers) is
        None: one listing after another, a buffer started as the gradient or updated alone
        (``buf.mul_(momentum).add_(g, ...)``: a buffer listed twice is updated mul, add, mul,
        add). Fills ``bufs`` in."""
        for i, (p, g) in enumerate(zip(params, grads)):
            if bufs[i] is None:  # the first step: the buffer starts as the gradient
                # (cloned from .grad itself when that is it: its memory may be shared)
                grad = p.grad if g is p.grad.native else Tensor(g, backend, p.dtype)
                bufs[i] = self.state[p]["momentum_buffer"] = grad.detach().clone()
            else:
                foreach_update(bufs[i : i + 1], "mul", (group["momentum"],), "mul_", [0])
                foreach_update(bufs[i : i + 1], "add", ([g], 1 - group["dampening"]), "add_", [0])


def _adds_into_grads(group: dict[str, Any]) -> bool:
    """Whether a Nesterov step adds ``momentum * buf`` into the ``.grad`` tensors themselves,
    as PyTorch's ``foreach=True`` step does where the gradients it steps along are still the
    ``.grad`` tensors (no ``maximize``, no weight decay); otherwise it makes new tensors."""
    return bool(
        group["foreach"]
        and not group["differentiable"]
        and not group["maximize"]
        and group["weight_decay"] == 0
    )
