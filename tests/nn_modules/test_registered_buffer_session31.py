"""A tensor made by ``nn.Buffer(t)`` and assigned to a module (``self.mask = nn.Buffer(t)``,
or passed to ``register_buffer``) is a plain Tensor there, as PyTorch's buffer is, and still a
Buffer to ``isinstance``; its ``persistent`` decides ``state_dict`` as before."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from snippet_outcomes import same
from tw_backends import FAST


def _registered_buffers(m: Any) -> tuple:
    class Masked(m.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mask = m.nn.Buffer(m.ones(2))
            self.grid = m.nn.Buffer(m.zeros(2), persistent=False)
            self.mask = m.nn.Buffer(m.ones(3), persistent=False)  # reassigned: its own flag
            self.register_buffer("given", m.nn.Buffer(m.ones(1), persistent=False))
            self.again = self.grid  # a registered Buffer(t) assigned again is one still

    module = Masked()
    moved = copy.deepcopy(module).to(m.float64)
    return (
        [type(b) is m.Tensor for b in module.buffers()],
        isinstance(module.mask, m.nn.Buffer),
        isinstance(m.ones(1), m.nn.Buffer),
        list(module._buffers),
        sorted(module._non_persistent_buffers_set),
        list(module.state_dict()),
        list(moved.state_dict()),
        [type(b) is m.Tensor for b in moved.buffers()],
        module.mask.sum(),
    )


@pytest.mark.parametrize("spec", FAST)
def test_registered_buffer_is_a_plain_tensor_as_torch(spec: str) -> None:
    same(_registered_buffers, spec)
