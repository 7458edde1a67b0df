"""Semantics the session-22 second-round fast paths must keep (issue 16), against PyTorch
2.13: ``no_grad``/``enable_grad`` made in one Python call (nesting, decorators, generator
functions, threads, a block left in another context), ``add_``/``sub_`` with and without
``alpha`` (values, versions, PyTorch's checks of the alpha), writes through ``.data`` and
``detach()`` aliases reaching their bases (a parameter, a view, an alias of an alias), and
``tensorweaver.contract.dtypes``'s cheap miss for dunder names."""

from __future__ import annotations

import contextvars
import threading

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _pair(shape: tuple = (3, 4), seed: int = 0) -> tuple:
    a = np.random.default_rng(seed).standard_normal(shape)
    return tw.tensor(a), torch.tensor(a)


# -- grad mode ------------------------------------------------------------------------------


@pytest.mark.parametrize("outer", ["no_grad", "enable_grad"])
@pytest.mark.parametrize("inner", ["no_grad", "enable_grad", "none"])
def test_nested_modes_like_torch(outer: str, inner: str) -> None:
    seen = []
    for lib in (tw, torch):
        with getattr(lib, outer)():
            if inner == "none":
                here = lib.is_grad_enabled()
            else:
                with getattr(lib, inner)():
                    here = lib.is_grad_enabled()
            after_inner = lib.is_grad_enabled()
        seen.append((here, after_inner, lib.is_grad_enabled()))
    assert seen[0] == seen[1]


def test_one_object_entered_twice_nests_like_torch() -> None:
    seen = []
    for lib in (tw, torch):
        off = lib.no_grad()
        with lib.enable_grad():
            with off:
                with lib.enable_grad():
                    with off:
                        first = lib.is_grad_enabled()
                    second = lib.is_grad_enabled()
                third = lib.is_grad_enabled()
            seen.append((first, second, third, lib.is_grad_enabled()))
    assert seen[0] == seen[1]


def _decorated(lib: object, name: str) -> tuple:
    """What functions decorated with ``lib``'s mode ``name`` see, called in the other mode."""
    mode = getattr(lib, name)

    @mode
    def bare() -> bool:
        return lib.is_grad_enabled()

    @mode()
    def called() -> bool:
        return lib.is_grad_enabled()

    @mode()
    def steps() -> object:
        yield lib.is_grad_enabled()
        yield lib.is_grad_enabled()

    with lib.set_grad_enabled(name != "enable_grad"):
        gen = steps()
        got = [bare(), called(), next(gen), lib.is_grad_enabled(), next(gen)]
    return got, lib.is_grad_enabled(), bare.__name__


@pytest.mark.parametrize("name", ["no_grad", "enable_grad"])
def test_decorators_like_torch(name: str) -> None:
    assert _decorated(tw, name) == _decorated(torch, name)


def test_modes_are_per_thread() -> None:
    seen: list[bool] = []
    with tw.no_grad():
        worker = threading.Thread(target=lambda: seen.append(tw.is_grad_enabled()))
        worker.start()
        worker.join()
        seen.append(tw.is_grad_enabled())
    assert seen == [True, False]


def test_a_block_left_in_another_context_restores_the_mode_before_it() -> None:
    for made in (tw.no_grad, tw.enable_grad):
        with tw.set_grad_enabled(not made().mode):
            before = tw.is_grad_enabled()
            block = made()
            contextvars.copy_context().run(block.__enter__)
            block.__exit__(None, None, None)  # (its tokens belong to the other context)
            assert tw.is_grad_enabled() is before


def test_no_grad_is_a_set_grad_enabled_and_leaves_inference_mode_alone() -> None:
    assert isinstance(tw.no_grad(), tw.set_grad_enabled)
    assert tw.no_grad().mode is False and tw.enable_grad().mode is True
    with tw.inference_mode():
        with tw.no_grad():
            assert tw.is_inference_mode_enabled() and not tw.is_grad_enabled()
        with tw.enable_grad():  # grad mode on, yet inference mode records no graph
            assert tw.is_grad_enabled()
            assert not tw.ones(2, requires_grad=True).mul(2).requires_grad
    with pytest.raises(TypeError):
        tw.no_grad(1, 2)


# -- add_ and sub_ --------------------------------------------------------------------------


CALLS = [(m, a) for m in ("add_", "sub_") for a in (None, 2, -0.25)]
CALLS += [("__iadd__", None), ("__isub__", None)]


@pytest.mark.parametrize(("method", "alpha"), CALLS)
def test_add_and_sub_like_torch(backend: str, method: str, alpha: object) -> None:
    x, y = _pair()
    o, p = _pair(seed=1)
    view, view_t = x[1], y[1]
    kwargs = {} if alpha is None else {"alpha": alpha}
    out = getattr(x, method)(o, **kwargs)
    out_t = getattr(y, method)(p, **kwargs)
    assert out is x and out_t is y
    np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-15, atol=0)
    np.testing.assert_array_equal(view.numpy(), view_t.numpy())
    assert x._version == y._version


@pytest.mark.parametrize("alpha", [1e5, True, 2.5])
def test_alpha_checks_like_torch(backend: str, alpha: object) -> None:
    dtype = "float16" if alpha != 2.5 else "int64"
    x, o = tw.ones(3, dtype=getattr(tw, dtype)), tw.ones(3, dtype=getattr(tw, dtype))
    y, p = torch.ones(3, dtype=getattr(torch, dtype)), torch.ones(3, dtype=getattr(torch, dtype))
    with pytest.raises(RuntimeError) as theirs:
        y.add_(p, alpha=alpha)
    with pytest.raises(RuntimeError):
        x.add_(o, alpha=alpha)
    assert theirs.value is not None
    np.testing.assert_array_equal(x.numpy(), y.numpy())


def test_other_as_a_keyword_like_torch(backend: str) -> None:
    x, y = _pair()
    o, p = _pair(seed=1)
    x.sub_(other=o, alpha=3)
    y.sub_(other=p, alpha=3)
    np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-15, atol=0)


def test_add_under_grad_mode_records_like_torch(backend: str) -> None:
    x, y = _pair()
    o, p = _pair(seed=1)
    o.requires_grad_()
    p.requires_grad_()
    a, b = x.clone(), y.clone()
    a.add_(o, alpha=-2)
    b.add_(p, alpha=-2)
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_array_equal(o.grad.numpy(), p.grad.numpy())


# -- writes through .data and detach() ------------------------------------------------------


def test_a_data_write_reaches_a_parameter_like_torch(backend: str) -> None:
    x, y = _pair()
    g, h = _pair(seed=1)
    p, q = tw.nn.Parameter(x), torch.nn.Parameter(y)
    other, other_t = p.detach(), q.detach()  # an alias that must follow
    for _ in range(3):
        p.data.add_(g, alpha=-0.1)
        q.data.add_(h, alpha=-0.1)
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-14)
    np.testing.assert_array_equal(other.numpy(), p.detach().numpy())
    assert p._version == q._version and other._version == other_t._version


def test_a_data_write_into_a_parameter_over_a_dropped_tensor(backend: str) -> None:
    p = tw.nn.Parameter(tw.zeros(3, dtype=tw.float64))
    q = torch.nn.Parameter(torch.zeros(3, dtype=torch.float64))
    p.data.sub_(tw.ones(3, dtype=tw.float64), alpha=2)
    q.data.sub_(torch.ones(3, dtype=torch.float64), alpha=2)
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert p._version == q._version


def test_a_data_write_into_a_view_reaches_its_base_like_torch(backend: str) -> None:
    x, y = _pair()
    g, h = _pair((4,), seed=1)
    row, row_t = x[1], y[1]
    row.data.add_(g, alpha=0.5)
    row_t.data.add_(h, alpha=0.5)
    np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-15, atol=0)
    assert (x._version, row._version) == (y._version, row_t._version)


def test_a_write_through_an_alias_of_an_alias_like_torch(backend: str) -> None:
    x, y = _pair()
    g, h = _pair(seed=1)
    d, e = x.detach(), y.detach()
    d.data.add_(g, alpha=2)
    e.data.add_(h, alpha=2)
    d.detach().sub_(g)
    e.detach().sub_(h)
    np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-15, atol=0)
    assert (x._version, d._version) == (y._version, e._version)


def test_a_saved_tensor_changed_through_data_is_not_refused_like_torch(backend: str) -> None:
    x, y = _pair()
    x.requires_grad_()
    y.requires_grad_()
    out, out_t = (x * x).sum(), (y * y).sum()
    x.data.add_(tw.ones(3, 4, dtype=tw.float64), alpha=1)
    y.data.add_(torch.ones(3, 4, dtype=torch.float64), alpha=1)
    out.backward()
    out_t.backward()
    np.testing.assert_allclose(x.grad.numpy(), y.grad.numpy(), rtol=1e-15, atol=0)


# -- contract.dtypes --------------------------------------------------------------------------


def test_dtypes_module_misses_and_its_bool() -> None:
    from tensorweaver.contract import dtypes

    assert dtypes.bool is dtypes.bool_
    assert not hasattr(dtypes, "__path__")  # a module, not a package
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        dtypes.nothing  # noqa: B018
    with pytest.raises(AttributeError):
        dtypes.__nothing__  # noqa: B018
    from tensorweaver.contract.dtypes import ALL, bool  # noqa: A004

    assert bool in ALL
