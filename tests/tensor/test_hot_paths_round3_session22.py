"""Semantics the session-22 third-round fast paths must keep (issue 16), against PyTorch
2.13: optimizer updates handed to ``Tensor._assign`` as bare arrays (written in place or
rebound: values, versions, views and aliases that follow), ``detach()``/``.data``/
``nn.Parameter`` aliases registered without ``_follow`` (many of them, dropped ones, the
``.data`` alias's own counter), and the in-place checks ``_inplace_source`` now skips
where they have nothing to check."""

from __future__ import annotations

import re

import numpy as np
import pytest
import tensorweaver as tw
import torch

#: At least ops/in_place_writes.py SMALLEST elements: written into the tensor's own memory.
LARGE = (300, 256)


def _pair(shape: tuple = (3, 4), seed: int = 0) -> tuple:
    a = np.random.default_rng(seed).standard_normal(shape)
    return tw.tensor(a), torch.tensor(a)


# -- updates handed over as bare arrays -----------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 4), LARGE], ids=["rebound", "in_place"])
def test_data_add_with_alpha_keeps_views_and_versions_like_torch(
    backend: str, shape: tuple
) -> None:
    x, y = _pair(shape)
    g, h = _pair(shape, seed=1)
    p, q = tw.nn.Parameter(x), torch.nn.Parameter(y)
    row, row_t = p.detach()[1], q.detach()[1]
    for _ in range(2):
        p.data.add_(g, alpha=-0.5)
        q.data.add_(h, alpha=-0.5)
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-15, atol=0)
    np.testing.assert_array_equal(row.numpy(), p.detach()[1].numpy())
    np.testing.assert_array_equal(x.numpy(), p.detach().numpy())  # the tensor it was made of
    assert (p._version, x._version, row._version) == (q._version, y._version, row_t._version)


@pytest.mark.parametrize("shape", [(3, 4), LARGE], ids=["rebound", "in_place"])
@pytest.mark.parametrize("foreach", [False, True])
def test_sgd_and_clip_like_torch(backend: str, shape: tuple, foreach: bool) -> None:
    """clip_grad_norm_ scales the gradients and SGD with momentum updates parameter and
    state through ops/in_place_writes.py: values and version counters as torch's."""
    results = []
    for lib in (tw, torch):
        w = lib.nn.Parameter(lib.tensor(np.random.default_rng(2).standard_normal(shape)))
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9, foreach=foreach)
        for step in range(2):
            w.grad = lib.tensor(np.random.default_rng(3 + step).standard_normal(shape))
            lib.nn.utils.clip_grad_norm_([w], 0.5, foreach=foreach)
            opt.step()
        state = opt.state[w]["momentum_buffer"]
        results.append((w.detach().numpy().copy(), state.numpy().copy(), w._version))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-13, atol=1e-15)
    assert results[0][2] == results[1][2]


def test_a_bare_array_of_another_shape_is_refused(backend: str) -> None:
    x = tw.zeros(3, dtype=tw.float64)
    with pytest.raises(RuntimeError, match=r"add_: the result has shape .*\(in-place"):
        x._assign(tw.zeros(2, 3, dtype=tw.float64).native, "add_")
    assert x._version == 0


def test_a_bare_array_leaves_the_history_as_no_grad_does(backend: str) -> None:
    """A bare array is a result without history: under no_grad the tensor keeps its node
    (as a Tensor result made there), with grad enabled the tensor becomes a leaf."""
    a = tw.ones(3, dtype=tw.float64, requires_grad=True)
    b = a * 2
    with tw.no_grad():
        b._assign(tw.zeros(3, dtype=tw.float64).native, "add_")
    assert b.grad_fn is not None
    c = tw.ones(3, dtype=tw.float64)
    c._assign(tw.zeros(3, dtype=tw.float64).native, "add_")
    assert c.grad_fn is None and not c.requires_grad and c._version == 1


# -- aliases registered inline --------------------------------------------------------------


def test_many_detached_aliases_follow_and_dead_ones_are_dropped(backend: str) -> None:
    x, y = _pair()
    kept = [x.detach() for _ in range(5)]
    kept_t = [y.detach() for _ in range(5)]
    for _ in range(100):  # dropped at once: the list of followers must not grow with them
        x.detach()
    assert len(x._views) <= 64
    x.add_(1.0)
    y.add_(1.0)
    for a, b in zip(kept, kept_t):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert a._version == b._version
    kept[2].mul_(2.0)
    kept_t[2].mul_(2.0)
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    np.testing.assert_array_equal(kept[4].numpy(), kept_t[4].numpy())
    assert (x._version, kept[0]._version) == (y._version, kept_t[0]._version)


def test_data_has_its_own_counter(backend: str) -> None:
    x, y = _pair()
    d, e = x.data, y.data
    d.add_(1.0)
    e.add_(1.0)
    x.mul_(2.0)
    y.mul_(2.0)
    assert (x._version, d._version) == (y._version, e._version)
    np.testing.assert_array_equal(d.numpy(), e.numpy())
    # (the flag of the alias alone: a detach() alias shares its tensor's counter)
    assert (d._own_counter, x._own_counter, x.detach()._own_counter) == (True, False, False)


def test_a_detached_alias_write_refuses_a_saved_value_like_torch(backend: str) -> None:
    outcomes = []
    for lib in (tw, torch):
        a = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        b = a * 1.0
        out = (b * b).sum()
        b.detach().add_(1.0)
        with pytest.raises(RuntimeError) as error:
            out.backward()
        outcomes.append(re.search("at version 1[,;] expected version 0", str(error.value)))
    assert all(outcomes)


def test_a_parameter_of_an_inference_tensor_like_torch(backend: str) -> None:
    outcomes = []
    for lib in (tw, torch):
        with lib.inference_mode():
            t = lib.ones(3, dtype=lib.float64)
        d = t.detach()
        try:
            d.add_(1.0)
            outcomes.append(("ok", d.numpy().tolist()))
        except RuntimeError as error:
            outcomes.append(("refused", "Inplace update to inference tensor" in str(error)))
    assert outcomes[0] == outcomes[1]


# -- in-place checks ------------------------------------------------------------------------


def test_in_place_checks_still_refuse_like_torch(backend: str) -> None:
    for lib in (tw, torch):
        leaf = lib.ones(3, dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="leaf"):
            leaf.add_(1.0)
        with lib.no_grad():
            view = leaf[1:]
        with pytest.raises(RuntimeError, match="no_grad"):
            view.mul_(2.0)
        plain = lib.ones(3, dtype=lib.float64)  # nothing to check: the call it skips
        plain.sub_(1.0)
        assert plain.sum().item() == 0.0 and plain._version == 1
