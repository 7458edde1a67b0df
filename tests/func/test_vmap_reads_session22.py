"""Reads of Python values inside ``vmap`` as PyTorch 2.13's: refused for batched tensors
only (the per-element slices and what is computed from them), allowed for a tensor made
inside from unmapped values, an argument with ``in_dims=None`` or a captured tensor. Each
case runs one program on torch and on tensorweaver and compares what it returns, or the
class of the error it raises.

Fixed here (each failed before: tw refused every read by the function's own code inside
vmap, func/_batched_values.py now marks the batched values):
* ``.item()``, ``float()``, ``int()``, ``bool()``, ``.tolist()`` of unbatched tensors;
* an inner vmap's output over unbatched values reads inside an outer vmap;
* an output with ``out_dims=None`` that is batched but equal for every element is refused
  (it was accepted).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import tensorweaver as tw
import torch


def _outcome(fn: Any, m: Any) -> Any:
    """What ``fn(m)`` returns (as a list), or its error's class name."""
    m.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            result = fn(m)
        except (RuntimeError, ValueError) as e:
            return type(e).__name__
    return result.tolist() if isinstance(result, (tw.Tensor, torch.Tensor)) else result


def _like_torch(fn: Any) -> None:
    assert _outcome(fn, tw) == _outcome(fn, torch)


def _x(m: Any) -> Any:
    return m.arange(1.0, 7.0, dtype=m.float64).reshape(2, 3)


_READS = {
    # unbatched: allowed
    "item_made_inside": lambda m: m.func.vmap(lambda a: a * m.tensor(2.0).item())(_x(m)),
    "float_made_inside": lambda m: m.func.vmap(lambda a: a * float(m.tensor(2.0)))(_x(m)),
    "int_made_inside": lambda m: m.func.vmap(lambda a: a * int(m.tensor(3)))(_x(m)),
    "bool_made_inside": lambda m: m.func.vmap(lambda a: a if m.tensor(True) else -a)(_x(m)),
    "ops_of_unbatched": lambda m: m.func.vmap(lambda a: a * (m.ones(4) * 2).sum().item())(_x(m)),
    "unmapped_item": lambda m: m.func.vmap(lambda a, s: a * s.item(), in_dims=(0, None))(
        _x(m), m.tensor(3.0)
    ),
    "unmapped_tolist": lambda m: m.func.vmap(lambda a, s: a * len(s.tolist()), in_dims=(0, None))(
        _x(m), m.ones(4)
    ),
    "unmapped_in_a_tuple": lambda m: m.func.vmap(
        lambda p: p[0] * p[1].max().item(), in_dims=((0, None),)
    )((_x(m), m.tensor([1.0, 5.0]))),
    "captured": lambda m: (lambda c: m.func.vmap(lambda a: a * c.sum().item())(_x(m)))(
        m.tensor([2.0, 3.0])
    ),
    "random_same": lambda m: m.func.vmap(
        lambda a: a * 0 + float(m.rand(()) < 2), randomness="same"
    )(_x(m)),
    "inner_vmap_of_unbatched": lambda m: m.func.vmap(
        lambda a: a * m.func.vmap(lambda u: u * 2)(m.ones(3)).sum().item()
    )(_x(m)),
    "inner_unmapped_of_unbatched": lambda m: m.func.vmap(
        lambda a: m.func.vmap(lambda b, s: b * s.item(), in_dims=(0, None))(a, m.tensor(2.0))
    )(_x(m)),
    # batched: refused
    "item_of_slice": lambda m: m.func.vmap(lambda a: a * a[0].item())(_x(m)),
    "item_of_detached_slice": lambda m: m.func.vmap(lambda a: a * a.detach()[0].item())(_x(m)),
    "item_of_mixed": lambda m: m.func.vmap(lambda a: a * (m.tensor(2.0) + a[0]).item())(_x(m)),
    "bool_of_slice": lambda m: m.func.vmap(lambda a: a if a.sum() > 0 else -a)(_x(m)),
    "tolist_of_clone": lambda m: m.func.vmap(lambda a: a * len(a.clone().tolist()))(_x(m)),
    "random_different": lambda m: m.func.vmap(
        lambda a: a * float(m.rand(()) < 2), randomness="different"
    )(_x(m)),
    "unmapped_of_outer_batched": lambda m: m.func.vmap(
        lambda a: m.func.vmap(lambda b, s: b * s.item(), in_dims=(0, None))(a, a[0])
    )(_x(m)),
    "inner_vmap_of_outer_batched": lambda m: m.func.vmap(
        lambda a: a * m.func.vmap(lambda u: u * a[0])(m.ones(3)).sum().item()
    )(_x(m)),
    "out_dims_none_equal_batched": lambda m: m.func.vmap(lambda a: a * 0, out_dims=None)(_x(m)),
    "out_dims_none_unbatched": lambda m: m.func.vmap(lambda a: (a, m.ones(2)), out_dims=(0, None))(
        _x(m)
    )[1],
}


@pytest.mark.parametrize("case", list(_READS))
def test_reads_in_vmap_as_torch(backend: str, case: str) -> None:
    _like_torch(_READS[case])


def test_an_op_on_a_batched_value_after_a_read_of_an_unbatched_one(backend: str) -> None:
    # the marks follow in-place writes: an unbatched tensor that takes a batched value is
    # batched from then on (torch refuses the write itself; tw's per-element calls refuse
    # the repeated write into a tensor made outside, so here one made inside)
    def program(m: Any) -> Any:
        def element(a: Any) -> Any:
            u = m.zeros(3, dtype=m.float64)
            scale = u.sum().item() + 1  # unbatched: reads
            return a * scale + u.add(a).sum()

        return m.func.vmap(element)(_x(m))

    _like_torch(program)


def test_marks_end_with_the_vmap_call() -> None:
    # the backends' methods are shadowed only while a vmap call runs
    from tensorweaver.tensor import VMAPPED

    backend = tw.ones(1).backend
    tw.func.vmap(lambda a: a * a[0])(tw.ones(2, 3))
    assert not [k for k, v in vars(backend).items() if getattr(v, "_tw_vmap_shadow", 0)]
    assert not VMAPPED.batched
