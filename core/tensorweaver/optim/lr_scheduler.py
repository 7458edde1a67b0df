"""Learning-rate schedulers (``torch.optim.lr_scheduler``'s API and arithmetic).

A scheduler rewrites ``group["lr"]`` of its optimizer's param groups each time
``step()`` is called (after ``optimizer.step()``). Most schedules are computed
recursively from the current lr, exactly as PyTorch does, so the sequences agree
with PyTorch's to the last bit; ``_get_closed_form_lr`` gives the value at an
arbitrary epoch (``SequentialLR`` uses it at milestones). ``state_dict()`` holds
numbers, strings, lists and dicts only.
"""

from __future__ import annotations

import copy
import math
import types
import warnings
import weakref
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import wraps
from typing import Any, Callable, Optional, Union

import tensorweaver as tw
from tensorweaver.optim.optimizer import Optimizer

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]


# PyTorch's words, so that filters written for PyTorch's warnings catch these too.
_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and "
    "later, you should call them in the opposite order: `optimizer.step()` before "
    "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first "
    "value of the learning rate schedule. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)
EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available. Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def _check_optimizer(owner: str, optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{owner}: {type(optimizer).__name__} is not a tw.optim.Optimizer")


def _per_group(owner: str, name: str, optimizer: Optimizer, value: Any) -> list[Any]:
    """One value per param group: a list of that length, or a single value repeated."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(
                f"{owner}: {name} has {len(value)} values but the optimizer has "
                f"{len(optimizer.param_groups)} param groups"
            )
        return list(value)
    return [value] * len(optimizer.param_groups)


def _track_step_calls(optimizer: Optimizer) -> None:
    """Make ``optimizer.step()`` set ``optimizer._opt_called``, as PyTorch does.

    The instance's ``step`` is wrapped (once), so a subclass's own ``step`` is tracked
    whether or not it calls the base class's. The wrapper holds the optimizer weakly:
    it is stored on the optimizer itself.
    """
    step = optimizer.step
    if hasattr(step, "_tracked_by_lr_scheduler"):
        return
    func = getattr(step, "__func__", None)
    owner = weakref.ref(optimizer)

    @wraps(step)
    def tracked(*args: Any, **kwargs: Any) -> Any:
        opt = owner()
        opt._opt_called = True  # type: ignore[union-attr]
        # A bound method is re-bound to the optimizer; a callable set on the instance is called.
        return func(opt, *args, **kwargs) if func is not None else step(*args, **kwargs)

    tracked._tracked_by_lr_scheduler = True  # type: ignore[attr-defined]
    optimizer.step = tracked  # type: ignore[method-assign]


def _set_lr(group: dict[str, Any], value: Any) -> None:
    """Write ``value`` as the group's lr: into its tensor in place when the lr is a tensor,
    as PyTorch does (an lr given as a tensor stays that tensor)."""
    if isinstance(group["lr"], tw.Tensor):
        group["lr"].fill_(value)
    else:
        group["lr"] = value


def _set_lrs(scheduler: LRScheduler, values: Any) -> None:
    """Write ``values``, one per param group, as the groups' lrs; a ValueError for another
    count, as PyTorch's strict pairing (a custom ``get_lr`` returning too few or too many)."""
    values, groups = list(values), scheduler.optimizer.param_groups
    if len(values) != len(groups):
        raise ValueError(
            f"{type(scheduler).__name__}.step: get_lr() returned {len(values)} learning rates "
            f"for the optimizer's {len(groups)} param groups; return one per group"
        )
    for group, lr in zip(groups, values):
        _set_lr(group, lr)


def _warn_outside_step(scheduler: LRScheduler) -> None:
    """PyTorch's warning when ``get_lr()`` is called by the user rather than by ``step()``
    (its value there is the next epoch's recursion, not the current lr)."""
    if not scheduler._get_lr_called_within_step:
        warnings.warn(
            "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
            UserWarning,
            stacklevel=3,
        )


def _copy(value: Any) -> Any:
    """A tensor lr cloned (so a later in-place write leaves the copy), a number itself."""
    return value.clone() if isinstance(value, tw.Tensor) else value


class LRScheduler:
    """Base class: tracks ``last_epoch`` and writes ``get_lr()``'s values into the groups.

    Creating a scheduler performs its first step (epoch 0) and records each group's
    ``initial_lr``; with ``last_epoch >= 0`` (resuming) the groups must already hold one.
    """

    _is_initial = False
    # True while step() calls get_lr() (a state_dict() key, as PyTorch's).
    _get_lr_called_within_step = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"{type(self).__name__}: param_groups[{i}] has no 'initial_lr' although "
                        f"last_epoch={last_epoch} says training resumes; load the optimizer's "
                        "state dict first, or use last_epoch=-1 for a fresh run"
                    )
        self.base_lrs: list[float] = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        _track_step_calls(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        """Reset the step count and perform the step that sets epoch 0's lr."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        """The lr of each group for ``self.last_epoch`` (called by ``step``)."""
        raise NotImplementedError

    def _get_closed_form_lr(self) -> list[float]:
        """The lr of each group at ``self.last_epoch`` computed directly from ``base_lrs``."""
        return self.get_lr()

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step()`` set, one per param group."""
        return self._last_lr

    def step(self, epoch: Optional[int] = None) -> None:
        """Advance one epoch (``epoch=`` jumps to that epoch; deprecated in PyTorch)."""
        if self._step_count == 1 and not hasattr(self.optimizer.step, "_tracked_by_lr_scheduler"):
            warnings.warn(
                "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                "initialization. Please, make sure to call `optimizer.step()` before "
                "`lr_scheduler.step()`. See more details at "
                "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                UserWarning,
                stacklevel=2,
            )
        elif self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(_ORDER_WARNING, UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: Optional[int] = None) -> None:
        if epoch is None:
            self.last_epoch += 1
        else:
            self.last_epoch = epoch
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr() if epoch is None else self._get_closed_form_lr()
        finally:
            self._get_lr_called_within_step = False
        _set_lrs(self, values)
        self._last_lr = self._current_lrs()

    def _current_lrs(self) -> list[float]:
        return [_copy(group["lr"]) for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the attributes saved by ``state_dict()`` (a copy of them)."""
        self.__dict__.update(copy.deepcopy(state_dict))


class _LRScheduler(LRScheduler):
    """The old name of :class:`LRScheduler`, which older scripts still subclass."""


class LambdaLR(LRScheduler):
    """``lr = base_lr * lr_lambda(epoch)``; one function, or one per param group.

    Functions are not saved; the ``__dict__`` of callable objects is.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        lr_lambda: Union[Callable[[int], float], Sequence[Callable[[int], float]]],
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(type(self).__name__, optimizer)
        self.lr_lambdas = _per_group(type(self).__name__, "lr_lambda", optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in super().state_dict().items() if k != "lr_lambdas"}
        # Functions cannot be saved; a callable object's attributes can.
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else dict(getattr(fn, "__dict__", {}))
            for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        saved = state.pop("lr_lambdas")
        super().load_state_dict(state)
        for fn, attrs in zip(self.lr_lambdas, saved):
            if attrs is not None:
                fn.__dict__.update(copy.deepcopy(attrs))


class MultiplicativeLR(LambdaLR):
    """Multiply the lr by ``lr_lambda(epoch)`` every epoch; one function, or one per group."""

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        if self._is_initial:
            return self._current_lrs()
        return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, self._current_lrs())]


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone (a repeated milestone counts twice)."""

    def __init__(
        self,
        optimizer: Optimizer,
        milestones: Iterable[int],
        gamma: float = 0.1,
        last_epoch: int = -1,
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        passed = bisect_right(sorted(self.milestones.elements()), self.last_epoch)
        return [base * self.gamma**passed for base in self.base_lrs]

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        # After a JSON round trip the milestone keys are strings.
        self.milestones = Counter({int(k): v for k, v in self.milestones.items()})


class ConstantLR(LRScheduler):
    """Multiply the lr by ``factor`` until epoch ``total_iters``."""

    def __init__(
        self,
        optimizer: Optimizer,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if not 0 <= factor <= 1.0:
            raise ValueError(f"ConstantLR: factor={factor!r} must be in [0, 1]")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current_lrs()]
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return [lr * (1.0 / self.factor) for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        reached = self.last_epoch >= self.total_iters
        return [base * (self.factor + reached * (1 - self.factor)) for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the lr linearly from ``start_factor`` to ``end_factor`` over ``total_iters``."""

    def __init__(
        self,
        optimizer: Optimizer,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if not 0 < start_factor <= 1.0:
            raise ValueError(f"LinearLR: start_factor={start_factor!r} must be in (0, 1]")
        if not 0 <= end_factor <= 1.0:
            raise ValueError(f"LinearLR: end_factor={end_factor!r} must be in [0, 1]")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        delta = self.end_factor - self.start_factor
        factor = 1.0 + delta / (
            self.total_iters * self.start_factor + (self.last_epoch - 1) * delta
        )
        return [lr * factor for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        progress = min(self.total_iters, self.last_epoch) / self.total_iters
        factor = self.start_factor + (self.end_factor - self.start_factor) * progress
        return [base * factor for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        if self._is_initial:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the lr as ``(1 - epoch / total_iters) ** power`` until ``total_iters``."""

    def __init__(
        self,
        optimizer: Optimizer,
        total_iters: int = 5,
        power: float = 1.0,
        last_epoch: int = -1,
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        decay = (
            (1.0 - self.last_epoch / self.total_iters)
            / (1.0 - (self.last_epoch - 1) / self.total_iters)
        ) ** self.power
        return [lr * decay for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        left = 1.0 - min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * left**self.power for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from ``base_lr`` to ``eta_min`` over ``T_max`` epochs (SGDR without
    restarts); past ``T_max`` the cosine continues, rising again, as in PyTorch.
    """

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and self.last_epoch > 0:
            return self._get_closed_form_lr()
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            # At the bottom of the cosine the recursive ratio is 0/0: add the increment.
            rise = (1 - math.cos(math.pi / self.T_max)) / 2
            return [
                lr + (base - self.eta_min) * rise
                for lr, base in zip(self._current_lrs(), self.base_lrs)
            ]
        ratio = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / (
            1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)
        )
        return [ratio * (lr - self.eta_min) + self.eta_min for lr in self._current_lrs()]

    def _get_closed_form_lr(self) -> list[float]:
        return [
            self.eta_min
            + (base - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
            for base in self.base_lrs
        ]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from ``base_lr`` to ``eta_min`` that restarts after ``T_0`` epochs,
    each later period ``T_mult`` times longer (SGDR).

    ``step(epoch)`` may be given a fractional epoch (e.g. ``epoch + i / iters``), as in
    PyTorch, where it is not deprecated for this scheduler.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_0={T_0!r} must be a positive int")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_mult={T_mult!r} must be an int >= 1")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"CosineAnnealingWarmRestarts: eta_min={eta_min!r} must be a number")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur: float = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        return [
            self.eta_min
            + (base - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
            for base in self.base_lrs
        ]

    def step(self, epoch: Optional[float] = None) -> None:
        """Advance one epoch, or go to ``epoch`` (which may be fractional)."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur %= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"CosineAnnealingWarmRestarts.step: epoch={epoch!r} must be >= 0")
        elif epoch < self.T_0:
            self.T_i = self.T_0
            self.T_cur = epoch
        elif self.T_mult == 1:
            self.T_cur = epoch % self.T_0
        else:
            # The restart count n solves T_0 * (T_mult**n - 1) / (T_mult - 1) <= epoch.
            n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
            self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
            self.T_i = self.T_0 * self.T_mult**n
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        _set_lrs(self, values)
        self._last_lr = self._current_lrs()


class CyclicLR(LRScheduler):
    """Cycle the lr between ``base_lr`` and ``max_lr`` (and momentum, or Adam's beta1, the
    opposite way between ``max_momentum`` and ``base_momentum``); call ``step()`` after
    every batch.

    A cycle rises for ``step_size_up`` steps and falls for ``step_size_down`` (default:
    the same). The amplitude is scaled per cycle (``"triangular"``: constant,
    ``"triangular2"``: halved each cycle) or per step (``"exp_range"``: ``gamma**step``),
    or by ``scale_fn`` of the cycle or step number (``scale_mode``).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        base_lr: Union[float, list[float]],
        max_lr: Union[float, list[float]],
        step_size_up: int = 2000,
        step_size_down: Optional[int] = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Optional[Callable[[float], float]] = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: Union[float, list[float]] = 0.8,
        max_momentum: Union[float, list[float]] = 0.9,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer("CyclicLR", optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("CyclicLR", "base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _set_lr(group, lr)
        self.max_lrs = _per_group("CyclicLR", "max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = up if step_size_down is None else float(step_size_down)
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(
                f"CyclicLR: mode={mode!r} must be 'triangular', 'triangular2' or 'exp_range' "
                "when no scale_fn is given"
            )
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        if scale_fn is None:
            scale_mode = "iterations" if mode == "exp_range" else "cycle"
        self.scale_mode = scale_mode

        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "CyclicLR: cycle_momentum=True needs an optimizer with momentum or betas; "
                    f"{type(optimizer).__name__} has neither (pass cycle_momentum=False)"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _per_group("CyclicLR", "base_momentum", optimizer, base_momentum)
            self.max_momentums = _per_group("CyclicLR", "max_momentum", optimizer, max_momentum)
            if last_epoch == -1:
                for top, bottom, group in zip(
                    self.max_momentums, self.base_momentums, optimizer.param_groups
                ):
                    _set_momentum(group, top, self.use_beta1)
                    group["max_momentum"] = top
                    group["base_momentum"] = bottom
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def scale_fn(self, x: float) -> float:
        """The amplitude's scale at cycle (or step) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle  # position in the cycle, [0, 1)
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [
            base + (top - base) * scale_factor * scale
            for base, top in zip(self.base_lrs, self.max_lrs)
        ]
        if self.cycle_momentum:
            for group, bottom, top in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums
            ):
                _set_momentum(group, top - (top - bottom) * scale_factor * scale, self.use_beta1)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in super().state_dict().items() if k != "_scale_fn_custom"}
        fn = self._scale_fn_custom
        # Functions cannot be saved; a callable object's attributes can.
        saved = fn is not None and not isinstance(fn, types.FunctionType)
        state["_scale_fn_custom"] = dict(getattr(fn, "__dict__", {})) if saved else None
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        attrs = state.pop("_scale_fn_custom")
        super().load_state_dict(state)
        if attrs is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(copy.deepcopy(attrs))


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after another, switching at each of ``milestones``."""

    def __init__(
        self,
        optimizer: Optimizer,
        schedulers: Sequence[LRScheduler],
        milestones: Sequence[int],
        last_epoch: int = -1,
    ) -> None:
        _check_schedulers("SequentialLR", optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                f"SequentialLR: expected {len(schedulers) - 1} milestones for "
                f"{len(schedulers)} schedulers, got {len(milestones)}"
            )
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Undo the initial step every scheduler took, then take the first one's again.
        for group in optimizer.param_groups:
            _set_lr(group, group["initial_lr"])
        for scheduler in self._schedulers:
            _undo_initial_step(scheduler)
        first = self._schedulers[bisect_right(self._milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:  # type: ignore[override]
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()

    def state_dict(self) -> dict[str, Any]:
        return _state_with_children(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        _load_with_children(self, state_dict)


class ChainedScheduler(LRScheduler):
    """Step every scheduler of ``schedulers`` at each step (their factors multiply)."""

    def __init__(
        self, schedulers: Sequence[LRScheduler], optimizer: Optional[Optimizer] = None
    ) -> None:
        if not schedulers:
            raise ValueError("ChainedScheduler: expected at least one scheduler, got none")
        optimizer = optimizer or schedulers[0].optimizer
        _check_schedulers("ChainedScheduler", optimizer, schedulers)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = self._current_lrs()

    def step(self) -> None:  # type: ignore[override]
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._current_lrs()

    def state_dict(self) -> dict[str, Any]:
        return _state_with_children(self)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        _load_with_children(self, state_dict)


def _check_schedulers(owner: str, optimizer: Any, schedulers: Sequence[Any]) -> None:
    if not schedulers:
        raise ValueError(f"{owner}: expected at least one scheduler, got none")
    for i, scheduler in enumerate(schedulers):
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{owner}: schedulers[{i}] is a ReduceLROnPlateau, whose step() needs a metric; "
                "step it yourself instead"
            )
        if not isinstance(scheduler, LRScheduler):
            raise TypeError(f"{owner}: schedulers[{i}] is not an LRScheduler")
        if scheduler.optimizer is not optimizer:
            raise ValueError(
                f"{owner}: schedulers[{i}] ({type(scheduler).__name__}) belongs to another "
                "optimizer; all schedulers must share one"
            )


def _undo_initial_step(scheduler: LRScheduler) -> None:
    children = getattr(scheduler, "_schedulers", None)
    if children is None:
        scheduler.last_epoch -= 1
    else:
        for child in children:
            _undo_initial_step(child)


def _state_with_children(scheduler: LRScheduler) -> dict[str, Any]:
    state = {k: v for k, v in scheduler.__dict__.items() if k not in ("optimizer", "_schedulers")}
    state["_schedulers"] = [s.state_dict() for s in scheduler._schedulers]
    return state


def _load_with_children(scheduler: LRScheduler, state_dict: dict[str, Any]) -> None:
    state = dict(state_dict)
    children = state.pop("_schedulers")
    scheduler.__dict__.update(copy.deepcopy(state))
    for child, child_state in zip(scheduler._schedulers, children):
        child.load_state_dict(child_state)


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr rises from ``max_lr / div_factor`` to ``max_lr``, then anneals to
    ``initial_lr / final_div_factor``; momentum (or Adam's beta1) cycles the opposite way.

    Call ``step()`` after every batch; ``total_steps`` (or ``epochs * steps_per_epoch``)
    is the length of the cycle. ``three_phase`` adds a symmetric way down before the
    final annealing, as in fast.ai.
    """

    def __init__(
        self,
        optimizer: Optimizer,
        max_lr: Union[float, list[float]],
        total_steps: Optional[int] = None,
        epochs: Optional[int] = None,
        steps_per_epoch: Optional[int] = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: Union[float, list[float]] = 0.85,
        max_momentum: Union[float, list[float]] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer("OneCycleLR", optimizer)
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: pct_start={pct_start!r} must be a float in [0, 1]")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"OneCycleLR: anneal_strategy={anneal_strategy!r} must be 'cos' or 'linear'"
            )
        # (in PyTorch's order: state_dict() lists the attributes as they were set)
        self._schedule_phases = _phases(self.total_steps, pct_start, three_phase)
        self._anneal_func_type = anneal_strategy

        max_lrs = _per_group("OneCycleLR", "max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, top in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor

        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    f"OneCycleLR: cycle_momentum=True needs an optimizer with momentum or betas; "
                    f"{type(optimizer).__name__} has neither (pass cycle_momentum=False)"
                )
            self.use_beta1 = "betas" in optimizer.defaults
            tops = _per_group("OneCycleLR", "max_momentum", optimizer, max_momentum)
            bases = _per_group("OneCycleLR", "base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for group, top, base in zip(optimizer.param_groups, tops, bases):
                    _set_momentum(group, top, self.use_beta1)
                    group["max_momentum"] = top
                    group["base_momentum"] = base
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        _warn_outside_step(self)
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"OneCycleLR: stepped {step_num} times but total_steps={self.total_steps}; "
                "make total_steps (or epochs * steps_per_epoch) cover the whole run"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    break
                start_step = end_step
            lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]], pct))
            if self.cycle_momentum:
                momentum = self._anneal(
                    group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                )
                _set_momentum(group, momentum, self.use_beta1)
        return lrs


def _total_steps(
    total_steps: Optional[int], epochs: Optional[int], steps_per_epoch: Optional[int]
) -> int:
    if total_steps is not None:
        if not isinstance(total_steps, int) or total_steps <= 0:
            raise ValueError(f"OneCycleLR: total_steps={total_steps!r} must be a positive int")
        return total_steps
    if epochs is None or steps_per_epoch is None:
        raise ValueError("OneCycleLR: give total_steps, or both epochs and steps_per_epoch")
    for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
        if not isinstance(value, int) or value <= 0:
            raise ValueError(f"OneCycleLR: {name}={value!r} must be a positive int")
    return epochs * steps_per_epoch


def _phases(total_steps: int, pct_start: float, three_phase: bool) -> list[dict[str, Any]]:
    """The phases of the cycle: where each ends and which group keys it anneals between."""

    def phase(end_step: float, lr: tuple[str, str], momentum: tuple[str, str]) -> dict[str, Any]:
        return {
            "end_step": end_step,
            "start_lr": lr[0],
            "end_lr": lr[1],
            "start_momentum": momentum[0],
            "end_momentum": momentum[1],
        }

    up = phase(
        float(pct_start * total_steps) - 1,
        ("initial_lr", "max_lr"),
        ("max_momentum", "base_momentum"),
    )
    if not three_phase:
        down = phase(total_steps - 1, ("max_lr", "min_lr"), ("base_momentum", "max_momentum"))
        return [up, down]
    down = phase(
        float(2 * pct_start * total_steps) - 2,
        ("max_lr", "initial_lr"),
        ("base_momentum", "max_momentum"),
    )
    tail = phase(total_steps - 1, ("initial_lr", "min_lr"), ("max_momentum", "max_momentum"))
    return [up, down, tail]


def _set_momentum(group: dict[str, Any], value: float, use_beta1: bool) -> None:
    """Set a group's momentum, or Adam's beta1 in its ``betas``."""
    if use_beta1:
        group["betas"] = (value, *group["betas"][1:])
    else:
        group["momentum"] = value


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` when a metric has stopped improving for ``patience``
    epochs; ``step(metric)`` takes the metric (a number or a one-element tensor).
    """

    def __init__(
        self,
        optimizer: Optimizer,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: Union[float, list[float]] = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor={factor!r} must be < 1.0")
        _check_optimizer("ReduceLROnPlateau", optimizer)
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            self.default_min_lr = None
            self.min_lrs = _per_group("ReduceLROnPlateau", "min_lr", optimizer, min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = self._current_lrs()
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode={mode!r} must be 'min' or 'max'")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(
                f"ReduceLROnPlateau: threshold_mode={threshold_mode!r} must be 'rel' or 'abs'"
            )
        # (mode_worse first: state_dict() lists the attributes in PyTorch's order)
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            if self.threshold_mode == "rel":
                return a < best * (1.0 - self.threshold)
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics: Any, epoch: Optional[int] = None) -> None:  # type: ignore[override]
        current = float(metrics.item()) if isinstance(metrics, tw.Tensor) else float(metrics)
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs during cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"ReduceLROnPlateau: the optimizer has {len(groups)} param groups but "
                    f"min_lrs has {len(self.min_lrs)} (a group was added); set min_lrs to match"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                _set_lr(group, new_lr)

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
