"""The optional foreach primitives of the backend API 2.4 (see ``OPTIONAL`` in
``tensorweaver.contract.ir``): one torch call updates a whole list of arrays, where the core
would dispatch one kernel per parameter (an SGD step over a U-Net's 50 parameters)."""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import Tensor


class ForeachOps:
    """Mixed into the backend class; each method is one optional primitive."""

    def foreach_norm(self, xs: list[Tensor], ord: float) -> list[Tensor]:
        return list(torch._foreach_norm(xs, ord))

    def foreach_add(self, xs: list[Tensor], ys: list[Tensor], alpha: float) -> list[Tensor]:
        if len(xs) == 1 and xs[0].is_cpu:
            # One pair (``p.add_(g, alpha=-lr)``): torch.add is the kernel the CPU's foreach
            # loop calls per pair (the same bits), without the list's overhead (1-8 us).
            return [torch.add(xs[0], ys[0], alpha=alpha)]
        return torch._foreach_add(xs, ys, alpha=alpha)

    def foreach_mul(self, xs: list[Tensor], scalar: float) -> list[Tensor]:
        return torch._foreach_mul(xs, scalar)

    def foreach_add_scalar(self, xs: list[Tensor], scalar: float) -> list[Tensor]:
        return torch._foreach_add(xs, scalar)

    def foreach_div_scalars(self, xs: list[Tensor], scalars: list[float]) -> list[Tensor]:
        return torch._foreach_div(xs, scalars)

    def foreach_sqrt(self, xs: list[Tensor]) -> list[Tensor]:
        return torch._foreach_sqrt(xs)

    def foreach_maximum(self, xs: list[Tensor], ys: list[Tensor]) -> list[Tensor]:
        return torch._foreach_maximum(xs, ys)

    def foreach_lerp(self, xs: list[Tensor], ys: list[Tensor], weight: float) -> list[Tensor]:
        return torch._foreach_lerp(xs, ys, weight)

    def foreach_addcmul(
        self, xs: list[Tensor], ys: list[Tensor], zs: list[Tensor], value: float
    ) -> list[Tensor]:
        return torch._foreach_addcmul(xs, ys, zs, value)

    def foreach_addcdiv(
        self, xs: list[Tensor], ys: list[Tensor], zs: list[Tensor], values: list[float]
    ) -> list[Tensor]:
        return torch._foreach_addcdiv(xs, ys, zs, values)

    def foreach_inplace(self, name: str, xs: list[Tensor], *args: Any) -> bool:
        if name == "add" and len(xs) == 1 and xs[0].is_cpu:
            # One pair (``p.data.add_(g, alpha=-lr)``, once a parameter a step): as
            # foreach_add, the kernel torch's CPU loop calls, with no look-up and no call
            xs[0].add_(args[0][0], alpha=args[1])
            return True
        write = _IN_PLACE.get(name)
        if write is None:
            return False
        write(xs, *args)
        return True


def _mul_(xs: list[Tensor], scalar: Any) -> None:
    # (clip_grad_norm_'s factor is a 0-d tensor: torch.mul's kernel.) On the CPU,
    # torch._foreach_mul_ rounds a Python number to float16/bfloat16 before multiplying,
    # where torch._foreach_mul and mul_ do not: other bits than foreach_mul's.
    if len(xs) == 1 or (xs[0].is_cpu and any(x.dtype in _HALVES for x in xs)):
        for x in xs:
            x.mul_(scalar)
    else:
        torch._foreach_mul_(xs, scalar)


_HALVES = (torch.float16, torch.bfloat16)


#: foreach_inplace's writers: the same torch kernels as the out-of-place primitives above.
_IN_PLACE: dict[str, Callable[..., None]] = {
    "add": lambda xs, ys, alpha: torch._foreach_add_(xs, ys, alpha=alpha),
    "mul": _mul_,
    "add_scalar": lambda xs, scalar: torch._foreach_add_(xs, scalar),
    "div_scalars": lambda xs, scalars: torch._foreach_div_(xs, scalars),
    "sqrt": lambda xs: torch._foreach_sqrt_(xs),
    "maximum": lambda xs, ys: torch._foreach_maximum_(xs, ys),
    "lerp": lambda xs, ys, weight: torch._foreach_lerp_(xs, ys, weight),
    "addcmul": lambda xs, ys, zs, value: torch._foreach_addcmul_(xs, ys, zs, value),
    "addcdiv": lambda xs, ys, zs, values: torch._foreach_addcdiv_(xs, ys, zs, values),
}
