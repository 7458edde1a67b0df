"""``repr(optimizer)`` and ``param_groups`` keys equal PyTorch's for every optimizer both
``tensorweaver.optim`` and ``torch.optim`` have, with default and with non-default
hyperparameters."""

from __future__ import annotations

from typing import Any, Callable

import pytest
import tensorweaver as tw
import torch

# Each builder takes the optim namespace and a parameter list.
OPTIMIZERS: dict[str, Callable[[Any, list], Any]] = {
    "SGD": lambda o, p: o.SGD(p, lr=0.1),
    "SGD_momentum": lambda o, p: o.SGD(p, lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-4),
    "Adam": lambda o, p: o.Adam(p),
    "Adam_amsgrad": lambda o, p: o.Adam(p, lr=3e-4, betas=(0.8, 0.99), amsgrad=True),
    "AdamW": lambda o, p: o.AdamW(p, lr=1e-3, weight_decay=0.05),
    "RMSprop": lambda o, p: o.RMSprop(p, lr=0.01, momentum=0.5, centered=True),
    "Adagrad": lambda o, p: o.Adagrad(p, lr=0.1, lr_decay=0.01),
    "Adadelta": lambda o, p: o.Adadelta(p),
    "Adamax": lambda o, p: o.Adamax(p, lr=0.002),
    "NAdam": lambda o, p: o.NAdam(p, decoupled_weight_decay=True, weight_decay=0.01),
    "RAdam": lambda o, p: o.RAdam(p, lr=1e-3),
    "ASGD": lambda o, p: o.ASGD(p, lr=0.01),
    "Rprop": lambda o, p: o.Rprop(p, lr=0.01, etas=(0.4, 1.3)),
    "SparseAdam": lambda o, p: o.SparseAdam(p, lr=0.01, betas=(0.8, 0.9)),
    "LBFGS": lambda o, p: o.LBFGS(p, lr=1, history_size=5, line_search_fn="strong_wolfe"),
    "Adafactor": lambda o, p: o.Adafactor(p, lr=0.02, eps=(1e-30, 1e-3), maximize=True),
    "Muon": lambda o, p: o.Muon([q for q in p if q.dim() == 2], adjust_lr_fn="match_rms_adamw"),
}


def _both(build: Callable[[Any, list], Any]) -> tuple[Any, Any]:
    ours = build(tw.optim, [tw.nn.Parameter(tw.zeros(2, 3)), tw.nn.Parameter(tw.zeros(3))])
    theirs = build(
        torch.optim, [torch.nn.Parameter(torch.zeros(2, 3)), torch.nn.Parameter(torch.zeros(3))]
    )
    return ours, theirs


def test_groups_and_scheduler_keys_match_torch() -> None:
    """Several groups print blank-line separated; a scheduler's ``initial_lr`` shows."""
    reprs = []
    for lib in (tw, torch):
        params = [lib.nn.Parameter(lib.zeros(2)) for _ in range(3)]
        opt = lib.optim.Adam([{"params": params[:1]}, {"params": params[1:2], "lr": 0.5}])
        opt.add_param_group({"params": params[2:], "weight_decay": 0.1})
        lib.optim.lr_scheduler.StepLR(opt, step_size=2)
        reprs.append(repr(opt))
    assert reprs[0] == reprs[1]


def test_every_shared_optimizer_has_a_case() -> None:
    shared = {
        name
        for name in dir(torch.optim)
        if isinstance(getattr(torch.optim, name), type)
        and issubclass(getattr(torch.optim, name), torch.optim.Optimizer)
        and name != "Optimizer"
        and hasattr(tw.optim, name)
    }
    assert shared - {name.split("_")[0] for name in OPTIMIZERS} == set()


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_repr_matches_torch(name: str) -> None:
    ours, theirs = _both(OPTIMIZERS[name])
    assert repr(ours) == repr(theirs)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_param_group_keys_include_torch_keys(name: str) -> None:
    ours, theirs = _both(OPTIMIZERS[name])
    for mine, their in zip(ours.param_groups, theirs.param_groups):
        assert set(their) <= set(mine)
        assert {k: mine[k] for k in their if k != "params"} == {
            k: v for k, v in their.items() if k != "params"
        }
