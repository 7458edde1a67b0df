"""Complex parameters, stepped as PyTorch steps them: as pairs of real numbers.

PyTorch's optimizers view a complex parameter, its gradient and its state as real
tensors with a trailing dimension of 2 (``torch.view_as_real``), so squares, maxima and
signs act on the real and imaginary parts separately. Here each complex parameter is
swapped for such a real stand-in for the step, and the stand-in's values and state are
written back as complex tensors afterwards.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import tensorweaver as tw


@contextmanager
def stepped_as_real(state: dict[Any, dict[str, Any]], params: list[Any]) -> Iterator[list[Any]]:
    """Yield ``params`` with each complex one replaced by a real stand-in (its gradient
    and its entry in ``state`` likewise; one stand-in for a parameter listed twice); on exit
    copy the results back."""
    params = list(params)
    stand_ins: dict[int, tuple[Any, Any]] = {}  # id(param) -> (param, its stand-in)
    for i, p in enumerate(params):
        if p.dtype.kind != "c":
            continue
        if id(p) not in stand_ins:
            stand_in = tw.view_as_real(p.detach())
            stand_in.grad = tw.view_as_real(p.grad)
            if p in state:
                state[stand_in] = {k: _real(v) for k, v in state[p].items()}
            stand_ins[id(p)] = (p, stand_in)
        params[i] = stand_ins[id(p)][1]
    try:
        yield params
    finally:
        for p, stand_in in stand_ins.values():
            p.copy_(tw.view_as_complex(stand_in))
            if stand_in in state:  # p keeps its place in the state's order
                state[p] = {k: _complex(v, stand_in) for k, v in state.pop(stand_in).items()}


def _real(value: Any) -> Any:
    return (
        tw.view_as_real(value) if isinstance(value, tw.Tensor) and value.dtype.is_complex else value
    )


def _complex(value: Any, stand_in: Any) -> Any:
    """A state tensor shaped as the stand-in is complex in PyTorch (``zeros_like(param)``)."""
    if isinstance(value, tw.Tensor) and value.shape == stand_in.shape:
        return tw.view_as_complex(value)
    return value
