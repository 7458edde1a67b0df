"""Weight averaging (``torch.optim.swa_utils``): stochastic weight averaging and exponential
moving averages of a model's parameters (:class:`AveragedModel`), the SWA learning-rate
schedule (:class:`SWALR`) and :func:`update_bn`, which recomputes batch-norm statistics for the
averaged weights.

Averages are written into the averaged model's own parameters under ``no_grad``; the lists a
``multi_avg_fn`` receives hold those parameters themselves, so an in-place update of a list
element (``lerp_``, ``copy_``) updates the average, as in PyTorch.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Iterable
from typing import Any, Callable, Optional, Union

import tensorweaver as tw
from tensorweaver.nn.modules.batchnorm import _BatchNorm
from tensorweaver.nn.modules.module import Module
from tensorweaver.optim.lr_scheduler import LRScheduler, _per_group
from tensorweaver.optim.optimizer import Optimizer

__all__ = [
    "SWALR",
    "AveragedModel",
    "get_ema_avg_fn",
    "get_ema_multi_avg_fn",
    "get_swa_avg_fn",
    "get_swa_multi_avg_fn",
    "update_bn",
]

AvgFn = Callable[[Any, Any, Any], Any]
MultiAvgFn = Callable[[list, list, Any], None]


def _check_decay(owner: str, decay: float) -> None:
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"{owner}: decay must be in [0, 1], got {decay}")


def get_ema_multi_avg_fn(decay: float = 0.999) -> MultiAvgFn:
    """An in-place EMA update of lists of averaged and current parameters."""
    _check_decay("get_ema_multi_avg_fn", decay)

    @tw.no_grad()
    def ema_update(ema_param_list: list, current_param_list: list, _: Any) -> None:
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            if p_ema.dtype.is_floating_point:
                p_ema.lerp_(p_model, 1 - decay)
            else:
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> MultiAvgFn:
    """An in-place running-mean update of lists of averaged and current parameters."""

    @tw.no_grad()
    def swa_update(averaged_param_list: list, current_param_list: list, num_averaged: Any) -> None:
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            if p_avg.dtype.is_floating_point:
                p_avg.lerp_(p_model, 1 / (num_averaged + 1))
            else:
                p_avg.add_((p_model - p_avg) / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> AvgFn:
    """``decay * averaged + (1 - decay) * current``: one tensor's EMA update."""
    _check_decay("get_ema_avg_fn", decay)

    @tw.no_grad()
    def ema_update(ema_param: Any, current_param: Any, num_averaged: Any) -> Any:
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> AvgFn:
    """``averaged + (current - averaged) / (num_averaged + 1)``: one tensor's running mean."""

    @tw.no_grad()
    def swa_update(averaged_param: Any, current_param: Any, num_averaged: Any) -> Any:
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A deep copy of ``model`` whose parameters (and with ``use_buffers=True`` buffers) hold
    an average of the weights passed to :meth:`update_parameters`.

    The first update copies the weights; later ones apply ``multi_avg_fn`` (in place, to
    lists), else ``avg_fn`` (per tensor, returning the new average), else the equal-weight
    running mean. ``n_averaged`` counts the updates. Without ``use_buffers`` the buffers are
    copied from ``model`` at each update.
    """

    n_averaged: Any

    def __init__(
        self,
        model: Module,
        device: Any = None,
        avg_fn: Optional[AvgFn] = None,
        multi_avg_fn: Optional[MultiAvgFn] = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            # AssertionError, as PyTorch raises
            raise AssertionError("AveragedModel: pass avg_fn or multi_avg_fn, not both")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tw.tensor(0, dtype=tw.long, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The averaged model's output."""
        return self.module(*args, **kwargs)

    def _averaged(self, model: Module) -> tuple[list, list]:
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        averaged, current = [], []
        for p_averaged, p_model in zip(mine, theirs):
            averaged.append(p_averaged)
            current.append(p_model.detach().to(p_averaged.device))
        return averaged, current

    @tw.no_grad()
    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average."""
        averaged, current = self._averaged(model)
        if int(self.n_averaged) == 0:
            for p_averaged, p_model in zip(averaged, current):
                p_averaged.copy_(p_model)
        elif self.multi_avg_fn is not None:
            self.multi_avg_fn(averaged, current, self.n_averaged)
        else:
            avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
            for p_averaged, p_model in zip(averaged, current):
                n_averaged = self.n_averaged.to(p_averaged.device)
                p_averaged.copy_(avg_fn(p_averaged.detach(), p_model, n_averaged))
        if not self.use_buffers:
            # Buffers are not averaged: keep them in sync with the source model.
            for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                b_swa.copy_(b_model.detach().to(b_swa.device))
        self.n_averaged += 1


@tw.no_grad()
def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute the running statistics of ``model``'s batch norms with one pass over
    ``loader`` (its items, or their first element, are the model's input)."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None  # a cumulative average over the whole pass
    for input in loader:
        if isinstance(input, (list, tuple)):
            input = input[0]
        if device is not None:
            input = input.to(device)
        model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's lr to ``swa_lr`` over ``anneal_epochs`` steps (``"cos"`` or
    ``"linear"``), then holds it."""

    def __init__(
        self,
        optimizer: Optimizer,
        swa_lr: Union[float, list[float]],
        anneal_epochs: int = 10,
        anneal_strategy: str = "cos",
        last_epoch: int = -1,
    ) -> None:
        for lr, group in zip(
            _per_group("SWALR", "swa_lr", optimizer, swa_lr), optimizer.param_groups
        ):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"SWALR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}"
            )
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(
                f"SWALR: anneal_epochs must be a non-negative int, got {anneal_epochs!r}"
            )
        self._set_anneal_func(anneal_strategy)
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        # The state dict keeps the strategy's name, not the function.
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer and the anneal function."""
        return {k: v for k, v in super().state_dict().items() if k != "anneal_func"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by ``state_dict()``."""
        super().load_state_dict(state_dict)
        self._set_anneal_func(self._anneal_strategy)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        # The lr the schedule started from, undone from the current one.
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list[float]:
        """Each group's lr for the current step of the annealing."""
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]
