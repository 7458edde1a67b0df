"""L-BFGS: quasi-Newton steps from a limited history of gradient and parameter changes."""

from __future__ import annotations

from typing import Any, Callable, Optional

import tensorweaver as tw
from tensorweaver.optim.line_search import strong_wolfe
from tensorweaver.optim.optimizer import Optimizer, ParamsT


class LBFGS(Optimizer):
    """``torch.optim.LBFGS``: up to ``max_iter`` iterations per ``step(closure)``, each
    along the two-loop-recursion direction, with a fixed step ``lr`` or a strong-Wolfe
    line search (``line_search_fn="strong_wolfe"``). One param group only.

    All parameters are treated as one flat vector. As in PyTorch, the curvature scalars of
    the state (``ro``, ``al``, ``H_diag``) are 0-d tensors of the parameters' dtype, and the
    first step size ``t`` is one too when the gradient's 1-norm exceeds 1.
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float = 1,
        max_iter: int = 20,
        max_eval: Optional[int] = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: Optional[str] = None,
    ) -> None:
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(
                f"LBFGS: line_search_fn={line_search_fn!r} is not supported; "
                "use None or 'strong_wolfe'"
            )
        defaults = {
            "lr": lr,
            "max_iter": max_iter,
            "max_eval": max_iter * 5 // 4 if max_eval is None else max_eval,
            "tolerance_grad": tolerance_grad,
            "tolerance_change": tolerance_change,
            "history_size": history_size,
            "line_search_fn": line_search_fn,
        }
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError(
                "LBFGS: doesn't support per-parameter options (parameter groups); "
                "pass one list of parameters"
            )
        self._params = self.param_groups[0]["params"]

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        if self.param_groups:
            raise ValueError("LBFGS: doesn't support more than one param group")
        super().add_param_group(param_group)

    # -- the parameters as one flat vector ------------------------------------------------

    # A complex parameter counts as its real and imaginary parts, as in PyTorch.

    def _gather_flat_grad(self) -> Any:
        flat = []
        for p in self._params:
            grad = tw.zeros_like(p) if p.grad is None else p.grad
            flat.append((tw.view_as_real(grad) if grad.dtype.is_complex else grad).reshape(-1))
        return tw.cat(flat)

    def _add_grad(self, step_size: float, update: Any) -> None:
        offset = 0
        for p in self._params:
            if p.dtype.is_complex:
                parts = tw.view_as_real(p)
                numel = parts.numel()
                step = update[offset : offset + numel].view_as(parts)
                p.copy_(tw.view_as_complex(parts.add(step, alpha=step_size)))
            else:
                numel = p.numel()
                p.add_(update[offset : offset + numel].view_as(p), alpha=step_size)
            offset += numel

    def _directional_evaluate(
        self, closure: Callable[[], Any], x: list[Any], t: float, d: Any
    ) -> tuple[float, Any]:
        """Loss and flat gradient at ``x + t * d``; the parameters are set back to ``x``."""
        self._add_grad(t, d)
        with tw.enable_grad():
            loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, value in zip(self._params, x):
            p.copy_(value)
        return loss, flat_grad

    # -- stepping ---------------------------------------------------------------------------

    def step(self, closure: Callable[[], Any]) -> Any:  # type: ignore[override]
        """Run up to ``max_iter`` iterations; ``closure`` clears the gradients, computes
        the loss, calls ``backward()`` and returns the loss. Returns the first loss.
        """
        if closure is None:
            raise RuntimeError("LBFGS.step: requires a closure that re-evaluates the loss")
        with tw.no_grad():
            return self._step(closure)

    def _step(self, closure: Callable[[], Any]) -> Any:
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size = group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with tw.enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max().item() <= tolerance_grad:
            return orig_loss  # already optimal

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        h_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                h_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = y.dot(s)
                if ys.item() > 1e-10:  # keep the pair only if the curvature is positive
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / y.dot(y)
                # PyTorch keeps the recursion's coefficients in the state, one slot per
                # history entry (slots past the current history keep older values).
                al = state.setdefault("al", [None] * history_size)
                d = self._two_loop_direction(flat_grad, old_dirs, old_stps, ro, al, h_diag)

            prev_flat_grad = flat_grad.clone()
            prev_loss = loss
            if state["n_iter"] == 1:
                # a 0-d tensor when the gradient's 1-norm exceeds 1, as in PyTorch
                t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr
            else:
                t = lr
            gtd = flat_grad.dot(d).item()
            if gtd > -tolerance_change:
                break  # not a descent direction

            evals = 0
            if group["line_search_fn"] == "strong_wolfe":
                x_init = [p.clone() for p in self._params]

                def obj_func(x: list[Any], t: float, d: Any) -> tuple[float, Any]:
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, evals = strong_wolfe(
                    obj_func,
                    x_init,
                    float(t),
                    d,
                    loss,
                    flat_grad,
                    gtd,
                    max_ls=max_eval - current_evals,
                )
                self._add_grad(t, d)
                opt_cond = flat_grad.abs().max().item() <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    # Re-evaluate, except after the last iteration (the caller will).
                    with tw.enable_grad():
                        loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = flat_grad.abs().max().item() <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals

            if (
                n_iter == max_iter
                or current_evals >= max_eval
                or opt_cond
                or (d * t).abs().max().item() <= tolerance_change
                or abs(loss - prev_loss) < tolerance_change
            ):
                break

        state.update(
            d=d,
            t=t,
            old_dirs=old_dirs,
            old_stps=old_stps,
            ro=ro,
            H_diag=h_diag,
            prev_flat_grad=prev_flat_grad,
            prev_loss=prev_loss,
        )
        return orig_loss

    @staticmethod
    def _two_loop_direction(
        flat_grad: Any,
        old_dirs: list[Any],
        old_stps: list[Any],
        ro: list[Any],
        al: list[Any],
        h_diag: Any,
    ) -> Any:
        """The L-BFGS two-loop recursion: the inverse-Hessian estimate times ``-flat_grad``;
        fills ``al[:len(old_dirs)]`` with the first loop's coefficients."""
        q = -flat_grad
        for i in range(len(old_dirs) - 1, -1, -1):
            al[i] = old_stps[i].dot(q) * ro[i]
            q = q - old_dirs[i] * al[i]
        r = q * h_diag
        for i in range(len(old_dirs)):
            be_i = old_dirs[i].dot(r) * ro[i]
            r = r + old_stps[i] * (al[i] - be_i)
        return r
