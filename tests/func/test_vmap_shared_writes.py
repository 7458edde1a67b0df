"""vmap's guard against in-place writes into tensors that are not mapped over
(func/_unbatched_writes.py), compared with ``torch.func.vmap`` 2.13 on the same inputs: the
writes it must refuse as torch does (reached through globals, closures, bound methods),
with torch's batch norm message, and the writes it must allow (into the memory of a mapped
input, through another view or alias of it)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from func_twins import arrays, like_torch, raises_like_torch

BATCH_NORM = "Batch norm got a batched tensor as input while the running_mean or running_var"

#: The batch norm and framework the functions below reach as globals (set by the test).
_NORM: Any = None
_M: Any = None


def _norm_of_global(a: Any) -> Any:
    """A batch norm in training mode that the function reaches through its globals only."""
    return _NORM(a)


def _statistics_of_global(a: Any) -> Any:
    return _M.nn.functional.batch_norm(a, _NORM.running_mean, _NORM.running_var, training=True)


@pytest.mark.parametrize("function", [_norm_of_global, _statistics_of_global])
def test_vmap_refuses_a_batch_norm_reached_through_globals(backend, function):
    """A function naming a global batch norm in training updated its running statistics
    once per element without an error; torch raises its batch norm RuntimeError."""
    (x,) = arrays((5, 4, 3))

    def build(m):
        global _NORM, _M
        _NORM, _M = m.nn.BatchNorm1d(3).double(), m
        return m.func.vmap(function, in_dims=1)

    error = raises_like_torch(build, x)
    assert str(error).startswith(BATCH_NORM), str(error)


def test_vmap_of_a_captured_batch_norm_raises_torchs_message(backend):
    """A captured batch norm (directly, or through functional_call's dicts) raised a message
    about a tensor of shape [] (num_batches_tracked); torch names the running statistics."""
    (x,) = arrays((5, 4, 3))

    def direct(m):
        norm = m.nn.BatchNorm1d(3).double()
        return m.func.vmap(lambda a: norm(a), in_dims=1)

    def functional(m):
        norm = m.nn.BatchNorm1d(3).double()
        state = (dict(norm.named_parameters()), dict(norm.named_buffers()))
        return m.func.vmap(lambda a: m.func.functional_call(norm, state, (a,)), in_dims=1)

    def bound_method(m):
        norm = m.nn.BatchNorm1d(3).double()
        return m.func.vmap(norm.forward, in_dims=1)

    for build in (direct, functional, bound_method):
        error = raises_like_torch(build, x)
        assert str(error).startswith(BATCH_NORM), str(error)


def test_vmap_allows_writes_through_other_views_of_a_mapped_input(backend):
    """Writing into a mapped input also changes the tensor it views and its other views
    and aliases; the guard took that for a repeated write into a captured tensor (a
    spurious RuntimeError where torch writes once)."""
    (x,) = arrays((4, 3))

    def captured(view: str):
        def build(m):
            def run(x):
                base = x.clone()
                other = {"view": base.view(12), "row": base[0], "alias": base.detach()}[view]
                # other's values are not read inside: the per-element calls would see
                # the earlier elements' writes where torch's one batched call sees all
                out = m.func.vmap(lambda a: a.add_(1.0) * other.dim())(base)
                return out, base, other

            return run

        return build

    for view in ("view", "row", "alias"):
        like_torch(captured(view), x)

    def mapped_view(m):
        def run(x):
            base = x.clone()
            out = m.func.vmap(lambda a: a.mul_(3.0) * base.dim())(base.T)
            return out, base

        return run

    like_torch(mapped_view, x)


def test_vmap_stops_at_the_first_elements_repeated_write(backend):
    """The guard checked only after the last element, so a captured counter was written
    once per element before the error; it is now checked after the first as well (torch
    writes once: its counter ends at 1, see the strict xfail in test_sweep_func.py)."""
    ours = tw.zeros((), dtype=tw.float64)
    theirs = torch.zeros((), dtype=torch.float64)
    x = np.ones((4, 3))
    torch.func.vmap(lambda a: (theirs.add_(1.0), a * 2)[1])(torch.tensor(x))
    with pytest.raises(RuntimeError, match="not mapped over"):
        tw.func.vmap(lambda a: (ours.add_(1.0), a * 2)[1])(tw.tensor(x))
    assert ours.item() == theirs.item()
