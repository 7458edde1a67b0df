"""``functionalize``, ``debug_unwrap`` and ``replace_all_batch_norm_modules_`` against
``torch.func``: the same outputs and input mutations, buffers, and errors; a batch norm
without running statistics under ``vmap``."""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from func_twins import arrays, assert_tree_like, like_torch, raises_like_torch


def test_functionalize_keeps_outputs_and_input_mutations(backend):
    (x,) = arrays((2, 3))

    def build(m):
        def f(a):
            a[0].add_(1.0)
            return a.sum(0) * 2

        def run(x):
            out = m.func.functionalize(f, remove="mutations_and_views")(x)
            return out, x

        return run

    like_torch(build, x)
    raises_like_torch(lambda m: lambda x: m.func.functionalize(lambda a: a, remove="views")(x), x)


def test_debug_unwrap(backend):
    (x,) = arrays((3,))
    # outside a transform (inside one, PyTorch's result is documented as undefined)
    like_torch(lambda m: lambda a: m.func.debug_unwrap(a, recurse=False).exp(), x)


def _bn_model(m):
    return m.nn.Sequential(m.nn.Linear(3, 4), m.nn.BatchNorm1d(4), m.nn.Tanh())


def test_batch_norm_without_running_stats_under_vmap(backend):
    theirs = _bn_model(torch).double()
    ours = _bn_model(tw)
    ours.load_state_dict({k: tw.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    assert torch.func.replace_all_batch_norm_modules_(theirs) is theirs
    assert tw.func.replace_all_batch_norm_modules_(ours) is ours
    assert dict(ours.named_buffers()) == dict(theirs.named_buffers()) == {}
    assert ours[1].running_mean is None and not ours[1].track_running_stats
    (x,) = arrays((2, 5, 3))
    got = tw.func.vmap(ours)(tw.tensor(x))
    assert_tree_like(got, torch.func.vmap(theirs)(torch.tensor(x)))


@pytest.mark.parametrize(
    "name", ["functionalize", "debug_unwrap", "replace_all_batch_norm_modules_"]
)
def test_names_exist(name):
    assert callable(getattr(tw.func, name)) and callable(getattr(torch.func, name))
