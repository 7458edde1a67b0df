"""Named cases of ``out=`` on functions that raised TypeError ("unexpected keyword argument
'out'") before ops/out_arguments.py, and of the checks whose inputs the op database sweep
cannot carry over (views that share memory, expanded outs), each against torch."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch


def _pair(values: np.ndarray) -> tuple[torch.Tensor, tw.Tensor]:
    return torch.tensor(values), tw.tensor(values)


def _same(t: torch.Tensor, w: tw.Tensor) -> None:
    assert str(w.dtype).rpartition(".")[2] == str(t.dtype).rpartition(".")[2]
    assert tuple(w.shape) == tuple(t.shape)
    # torch computes some results in out's dtype, tw in the result's and then converts
    tolerance = 1e-12 if t.dtype in (torch.float64, torch.complex128) else 1e-6
    np.testing.assert_allclose(np.asarray(w), t.numpy(), rtol=tolerance, atol=tolerance)


RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4))
INDEX = np.array([[0, 2, 1, 0], [2, 1, 0, 1]])


def _cases() -> dict:
    """name: (torch call, tw call), each taking (library, x, index, out)."""
    return {
        "gather": lambda lib, x, i, out: lib.gather(x, 0, i, out=out),
        "index_select": lambda lib, x, i, out: lib.index_select(x, 1, i[0], out=out),
        "take": lambda lib, x, i, out: lib.take(x, i, out=out),
        "masked_select": lambda lib, x, i, out: lib.masked_select(x, x > 0, out=out),
        "cat": lambda lib, x, i, out: lib.cat([x, x], 1, out=out),
        "complex": lambda lib, x, i, out: lib.complex(x, x, out=out),
        "cumsum": lambda lib, x, i, out: lib.cumsum(x, 1, out=out),
        "tril": lambda lib, x, i, out: lib.tril(x, out=out),
    }


@pytest.mark.parametrize("name", sorted(_cases()))
def test_out_returns_out_with_torchs_values(name: str) -> None:
    call = _cases()[name]
    (tx, wx), (ti, wi) = _pair(X), _pair(INDEX)
    expected = call(torch, tx, ti, None)
    t_out = torch.empty(0, dtype=expected.dtype)
    w_out = tw.empty(0, dtype=getattr(tw, str(expected.dtype).rpartition(".")[2]))
    assert call(torch, tx, ti, t_out) is t_out
    assert call(tw, wx, wi, w_out) is w_out
    _same(t_out, w_out)


def test_kthvalue_sort_and_max_write_a_tuple_of_outs() -> None:
    tx, wx = _pair(X)
    for fn, args in (("kthvalue", (2, 1)), ("sort", (1,)), ("max", (0,)), ("topk", (2,))):
        t_out = (torch.empty(0, dtype=torch.float64), torch.empty(0, dtype=torch.int64))
        w_out = (tw.empty(0, dtype=tw.float64), tw.empty(0, dtype=tw.int64))
        t_result = getattr(torch, fn)(tx, *args, out=t_out)
        w_result = getattr(tw, fn)(wx, *args, out=w_out)
        assert type(w_result).__name__ == type(t_result).__name__ == f"{fn}_out"
        assert w_result[0] is w_out[0] and w_result[1] is w_out[1]
        _same(t_out[0], w_out[0])
        _same(t_out[1], w_out[1])


def test_random_functions_write_out() -> None:
    probabilities = np.full((2, 5), 0.2)
    tp, wp = _pair(probabilities)
    t_out, w_out = torch.empty(0, dtype=torch.int64), tw.empty(0, dtype=tw.int64)
    assert tw.multinomial(wp, 3, out=w_out) is w_out
    _same_layout = torch.multinomial(tp, 3, out=t_out)
    assert tuple(w_out.shape) == tuple(_same_layout.shape) and w_out.dtype is tw.int64
    t_out, w_out = torch.empty(0, dtype=torch.float64), tw.empty(0, dtype=tw.float64)
    assert tw.bernoulli(wp, out=w_out) is w_out
    torch.bernoulli(tp, out=t_out)
    assert tuple(w_out.shape) == tuple(t_out.shape) and w_out.dtype is tw.float64


def _raises_like_torch(torch_call, tw_call) -> None:
    try:
        torch_call()
    except Exception as error:
        with pytest.raises(type(error)):
            tw_call()
        return
    tw_call()


def test_out_that_is_an_input_raises_as_torch() -> None:
    (tx, wx), (ti, wi) = _pair(X), _pair(INDEX)
    tw_gather = tw.tensor(X[:2])
    _raises_like_torch(
        lambda: torch.gather(tx[:2], 0, ti, out=tx[:2]), lambda: tw.gather(wx, 0, wi, out=wx)
    )
    with pytest.raises(RuntimeError, match="single memory location"):
        tw.gather(tw_gather, 0, wi, out=tw_gather)
    a, b = torch.tensor(X), torch.tensor(X)
    wa, wb = tw.tensor(X), tw.tensor(X)
    _raises_like_torch(lambda: torch.cat([a, b], out=a), lambda: tw.cat([wa, wb], out=wa))
    _raises_like_torch(
        lambda: torch.kthvalue(a[0], 2, out=(a[0], torch.empty(0, dtype=torch.int64))),
        lambda: tw.kthvalue(wa[0], 2, out=(wa[0], tw.empty(0, dtype=tw.int64))),
    )


def test_out_that_overlaps_an_input_in_part_raises_as_torch() -> None:
    t_base, w_base = _pair(RNG.standard_normal(8))
    t_index, w_index = _pair(np.array([0, 1, 2]))
    _raises_like_torch(
        lambda: torch.take(t_base[:6], t_index, out=t_base[2:5]),
        lambda: tw.take(w_base[:6], w_index, out=w_base[2:5]),
    )
    # apart in memory: both write
    torch.take(t_base[:4], t_index, out=t_base[5:8])
    tw.take(w_base[:4], w_index, out=w_base[5:8])
    _same(t_base, w_base)


def test_expanded_out_of_the_results_shape_raises_as_torch() -> None:
    (tx, wx), (ti, wi) = _pair(X), _pair(INDEX)
    _raises_like_torch(
        lambda: torch.gather(tx, 0, ti, out=torch.zeros(1, 1, dtype=torch.float64).expand(2, 4)),
        lambda: tw.gather(wx, 0, wi, out=tw.zeros(1, 1, dtype=tw.float64).expand(2, 4)),
    )


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64"])
def test_out_dtype_checks_as_torch(dtype: str) -> None:
    (tx, wx), (ti, wi) = _pair(X), _pair(INDEX)
    t_dtype, w_dtype = getattr(torch, dtype), getattr(tw, dtype)
    for fn, t_call, w_call in (
        ("gather", lambda o: torch.gather(tx, 0, ti, out=o), lambda o: tw.gather(wx, 0, wi, out=o)),
        ("cat", lambda o: torch.cat([tx, tx], out=o), lambda o: tw.cat([wx, wx], out=o)),
        ("cumsum", lambda o: torch.cumsum(tx, 0, out=o), lambda o: tw.cumsum(wx, 0, out=o)),
        (
            "outer",
            lambda o: torch.outer(tx[0], tx[1], out=o),
            lambda o: tw.outer(wx[0], wx[1], out=o),
        ),
    ):
        if fn == "cumsum" and dtype == "bool":
            continue  # torch has no bool cumsum kernel (NotImplementedError)
        t_out, w_out = torch.empty(0, dtype=t_dtype), tw.empty(0, dtype=w_dtype)
        try:
            t_call(t_out)
        except Exception as error:
            with pytest.raises(type(error)):
                w_call(w_out)
            continue
        assert w_call(w_out) is w_out
        _same(t_out, w_out)


def test_out_that_requires_grad_raises_as_torch() -> None:
    (tx, wx), (ti, wi) = _pair(X), _pair(INDEX)
    _raises_like_torch(
        lambda: torch.gather(
            tx, 0, ti, out=torch.empty(0, dtype=torch.float64, requires_grad=True)
        ),
        lambda: tw.gather(wx, 0, wi, out=tw.empty(0, dtype=tw.float64, requires_grad=True)),
    )


def test_resize_warns_as_torch() -> None:
    wx, wi = tw.tensor(X), tw.tensor(INDEX)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tw.gather(wx, 0, wi, out=tw.zeros(5, dtype=tw.float64))
    assert any("was resized" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tw.multinomial(tw.full((2, 5), 0.2), 3, out=tw.zeros(5, dtype=tw.int64))
    assert not any("was resized" in str(w.message) for w in caught)  # as torch's: quietly


def test_signatures_show_out() -> None:
    for name in ("gather", "cat", "kthvalue", "sort", "multinomial", "index_select"):
        parameter = inspect.signature(getattr(tw, name)).parameters["out"]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY and parameter.default is None


def test_a_function_with_its_own_out_is_not_wrapped() -> None:
    from tensorweaver.ops.out_arguments import call_with_out, given_out

    def gather(input, dim, index, *, sparse_grad=False, out=None):  # noqa: ANN001, ANN202
        if out is not None:
            return call_with_out("gather", gather, (input, dim, index), {}, out)
        return tw.gather(input, dim, index)

    assert given_out("gather", gather) is gather
    (tx, wx), (ti, wi) = _pair(X), _pair(INDEX)
    t_out, w_out = torch.empty(0, dtype=torch.float64), tw.empty(0, dtype=tw.float64)
    torch.gather(tx, 0, ti, out=t_out)
    assert gather(wx, 0, wi, out=w_out) is w_out
    _same(t_out, w_out)
    with pytest.raises(RuntimeError, match="single memory location"):
        gather(wx, 0, wi, out=wx)


# Functions PyTorch defines no derivative for write an out= that requires grad as data (it
# keeps its flag and history); tw refused them all ("functions with out=... don't support
# automatic differentiation"), as it still does, like torch, for differentiable ones.
NO_DERIVATIVE = {
    "eq": lambda lib, a, out: lib.eq(a, 0.5, out=out),
    "lt": lambda lib, a, out: lib.lt(a, a.flip(0), out=out),
    "logical_and": lambda lib, a, out: lib.logical_and(a, a > 0, out=out),
    "logical_not": lambda lib, a, out: lib.logical_not(a, out=out),
    "histc": lambda lib, a, out: lib.histc(a, bins=4, out=out),
    "special.bessel_j0": lambda lib, a, out: lib.special.bessel_j0(a, out=out),
    "special.legendre_polynomial_p": lambda lib, a, out: lib.special.legendre_polynomial_p(
        a, 2, out=out
    ),
}


@pytest.mark.parametrize("name", NO_DERIVATIVE)
@pytest.mark.parametrize("out_kind", ("leaf", "non-leaf", "empty"))
def test_out_requiring_grad_of_a_function_without_derivative(name, out_kind):
    values = np.array([0.25, 0.5, 1.5, -2.0])
    results = []
    for lib in (torch, tw):
        a = lib.tensor(values, requires_grad=True)
        if out_kind == "empty":
            out = lib.zeros(0, dtype=lib.float64, requires_grad=True)
        else:
            out = lib.zeros(4, dtype=lib.float64, requires_grad=True)
            out = out.clone() if out_kind == "non-leaf" else out
        returned = NO_DERIVATIVE[name](lib, a, out)
        assert returned is out
        history = None if out.grad_fn is None else type(out.grad_fn).__name__
        results.append((out.detach().numpy().copy(), out.requires_grad, history))
    (t_values, *t_rest), (w_values, *w_rest) = results
    np.testing.assert_allclose(w_values, t_values, rtol=1e-12)
    assert w_rest == t_rest


def test_out_requiring_grad_of_a_differentiable_function_is_still_refused():
    for lib in (torch, tw):
        with pytest.raises(RuntimeError, match="out=... arguments don't support automatic"):
            lib.sin(lib.ones(3, dtype=lib.float64), out=lib.zeros(3, requires_grad=True))


def test_normalize_out_is_resized_and_refuses_grad_like_torch():
    # F.normalize(..., out=) copied into out and raised from expand where out had another shape
    values = np.random.default_rng(3).standard_normal((3, 4))
    results = []
    for lib in (torch, tw):
        out = lib.zeros(0, dtype=lib.float64)
        returned = lib.nn.functional.normalize(lib.tensor(values), dim=0, out=out)
        assert returned is out
        results.append(out.numpy().copy())
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            lib.nn.functional.normalize(
                lib.tensor(values, requires_grad=True), out=lib.zeros(3, 4, dtype=lib.float64)
            )
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)
