"""Adam and AdamW (Adam with decoupled weight decay): one implementation, one flag."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.optim.foreach import foreach_backend, foreach_update, large, natives
from tensorweaver.optim.moment_estimates import MomentEstimates
from tensorweaver.optim.optimizer import ParamsT, count_steps


class Adam(MomentEstimates):
    """``torch.optim.Adam``: bias-corrected moment estimates, optionally AMSGrad.

    With ``decoupled_weight_decay=True`` weight decay shrinks the parameter by
    ``lr * weight_decay`` instead of being added to the gradient (that is AdamW).
    """

    _tensor_options = ("lr", "betas")  # (its step computes with them as PyTorch's)
    _sparse_refusal = (  # (AdamW's too, as PyTorch's)
        "Adam does not support sparse gradients, please consider SparseAdam instead"
    )

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: Optional[bool] = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: Optional[bool] = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        super().__init__(
            params,
            lr,
            tuple(betas),  # (PyTorch's Adam, and AdamW through it, makes a tuple)
            eps,
            weight_decay,
            amsgrad=amsgrad,
            maximize=maximize,
            foreach=foreach,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=decoupled_weight_decay,
        )

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        kinds = {
            type(b) if isinstance(b, tw.Tensor) else isinstance(b, float) for b in group["betas"]
        }
        if kinds not in ({True}, {tw.Tensor}):
            raise ValueError(
                f"{type(self).__name__}: betas must be either both floats or both Tensors, got "
                f"{group['betas']!r}"
            )
        if group.get("foreach") and not group.get("capturable") and "params" not in group:
            # PyTorch's foreach kernels take these as numbers only; its constructor checks
            # its own options (a param group's: see _refuse_tensor_options)
            named = [("lr", group.get("lr"))]
            named += [(f"betas[{i}]", b) for i, b in enumerate(group.get("betas", ()))]
            for option, value in named:
                if isinstance(value, tw.Tensor):
                    raise ValueError(
                        f"{type(self).__name__}: {option} as a Tensor is not supported for "
                        "capturable=False and foreach=True; pass a number, or foreach=False"
                    )

    @staticmethod
    def _lerp_beta(beta1: Any, param: Any) -> Any:
        # (PyTorch's Adam casts a tensor beta1 to the parameter's dtype for lerp_ alone)
        return beta1.to(param.dtype) if isinstance(beta1, tw.Tensor) else beta1

    def _init_state(self, param: Any, group: dict[str, Any]) -> dict[str, Any]:
        state = super()._init_state(param, group)
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = tw.zeros_like(param)
        return state

    def _update(self, param: Any, group: dict[str, Any]) -> None:
        state, step, _ = self._moments_step(param, group, group["decoupled_weight_decay"])
        beta1, beta2 = group["betas"]
        exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
        step_size = group["lr"] / (1 - beta1**step)
        bias_correction2_sqrt = (1 - beta2**step) ** 0.5
        if group["amsgrad"]:
            # AMSGrad normalises by the largest second moment seen so far.
            second = state["max_exp_avg_sq"].copy_(tw.maximum(state["max_exp_avg_sq"], exp_avg_sq))
        else:
            second = exp_avg_sq
        if group["differentiable"]:
            # PyTorch's recorded form: the step size folded into the denominator, and a
            # copy of exp_avg (which the next step changes in place) for the backward.
            step_size_neg = -step_size
            denom = second.sqrt() / (bias_correction2_sqrt * step_size_neg)
            param.addcdiv_(exp_avg.clone(), denom + group["eps"] / step_size_neg)
            return
        denom = second.sqrt() / bias_correction2_sqrt + group["eps"]
        param.addcdiv_(exp_avg, denom, value=-step_size)

    def _refuse_tensor_options(self, params: list[Any], group: dict[str, Any]) -> None:
        """PyTorch's errors for a param group's tensor lr or betas with ``foreach=True`` and
        ``capturable=False``, which its step raises: after it made the state of the group's
        first parameter (lr: RuntimeError) or of all (betas: ValueError)."""
        name = type(self).__name__
        if isinstance(group["lr"], tw.Tensor):
            self._state_of(params[0], group)
            raise RuntimeError(
                f"{name}: lr as a Tensor is not supported for capturable=False and "
                "foreach=True; pass a number, or foreach=False"
            )
        for i, beta in enumerate(group["betas"]):
            if isinstance(beta, tw.Tensor):
                for p in params:
                    self._state_of(p, group)
                raise ValueError(
                    f"{name}: beta{i + 1} as a Tensor is not supported for capturable=False "
                    "and foreach=True; pass a number, or foreach=False"
                )

    def _step_group(self, params: list[Any], group: dict[str, Any]) -> None:
        # The same ops as _update, in the same order, each over the whole group at once.
        if group["foreach"] and not group["capturable"]:
            self._refuse_tensor_options(params, group)
        backend = foreach_backend(params, group)
        if backend is None:
            super()._step_group(params, group)
            return
        beta1, beta2 = group["betas"]
        lr, weight_decay = group["lr"], group["weight_decay"]
        states = [self._state_of(p, group) for p in params]
        steps = count_steps(states)
        grads = natives([p.grad for p in params])
        sizes = large(params)  # (the moments': their parameters' shapes)
        if group["maximize"]:
            grads = [backend.neg(g) for g in grads]
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                foreach_update(params, "mul", (1 - lr * weight_decay,), "mul_", sizes)
            else:
                grads = backend.foreach_add(grads, natives(params), weight_decay)

        exp_avgs = [state["exp_avg"] for state in states]
        exp_avg_sqs = [state["exp_avg_sq"] for state in states]
        first = foreach_update(exp_avgs, "lerp", (grads, 1 - beta1), "lerp_", sizes)
        foreach_update(exp_avg_sqs, "mul", (beta2,), "mul_", sizes)
        second = foreach_update(
            exp_avg_sqs, "addcmul", (grads, grads, 1 - beta2), "addcmul_", sizes
        )
        if group["amsgrad"]:
            largest = [state["max_exp_avg_sq"] for state in states]
            second = foreach_update(largest, "maximum", (second,), "copy_", sizes)
        roots = backend.foreach_sqrt(second)
        del second  # (a reference to the moments' arrays: the next step writes them in place)
        roots = backend.foreach_div_scalars(roots, [(1 - beta2**k) ** 0.5 for k in steps])
        denom = backend.foreach_add_scalar(roots, group["eps"])
        step_sizes = [-(lr / (1 - beta1**k)) for k in steps]
        foreach_update(params, "addcdiv", (first, denom, step_sizes), "addcdiv_", sizes)


class AdamW(Adam):
    """``torch.optim.AdamW``: Adam with decoupled weight decay (default 1e-2)."""

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: Optional[bool] = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: Optional[bool] = None,
    ) -> None:
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )
