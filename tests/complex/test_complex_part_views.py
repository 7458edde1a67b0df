"""``z.real``, ``z.imag``, ``view_as_real`` and ``view_as_complex`` are views, as PyTorch's:
``z.real.zero_()`` left ``z`` unchanged (the parts were copies), a silent difference."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from tw_backends import entered


def _writes(lib) -> list:
    z = lib.tensor([1 + 2j, 3 - 1j])
    z.real.zero_()
    z.imag.mul_(2)
    w = lib.tensor([1 + 2j])
    lib.view_as_real(w)[0, 0] = 9
    q = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    lib.view_as_complex(q).mul_(2)
    u = lib.tensor([1 + 1j])
    r = lib.real(u)
    u.add_(1)  # the view follows its base
    return [z.tolist(), w.tolist(), q.tolist(), r.tolist()]


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu"])
def test_complex_parts_are_views_like_torch(spec: str) -> None:
    with entered(spec):
        ours = _writes(tw)
    assert ours == _writes(torch)


def test_the_real_part_of_a_real_tensor_is_the_tensor() -> None:
    x = tw.tensor([1.0, 2.0])
    assert x.real is x
