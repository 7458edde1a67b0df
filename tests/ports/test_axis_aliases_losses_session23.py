"""NumPy's ``axis=``/``keepdims=`` spellings of ``dim``/``keepdim`` on the reductions, and the
class-target losses on unbatched and batched inputs, against torch 2.13 (the same calls on
both libraries: values, gradients and exception classes).

PyTorch's argument parser takes ``axis`` for ``dim`` and ``keepdims`` for ``keepdim`` on every
native function and method; the reductions of ``ops/reduce.py`` take them through a trailing
``**aliases`` (``norm`` is a Python function in torch and takes neither), and so do the
dim-taking functions of ``ops/numeric.py``, ``ops/order_stats.py``, ``ops/sort.py`` and
``ops/integration.py``, with ``out=`` too. The strict xfails at the end are what is left
elsewhere.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tw_backends import entered


def _outcome(fn: Callable[[], Any]) -> Any:
    """``fn()``'s tensor (or its first, for a ``(values, indices)`` pair) as its shape and
    float64 values, or the name of the class of the exception it raises."""
    try:
        out = fn()
    except Exception as e:  # the class is what is compared
        return type(e).__name__
    if isinstance(out, tuple):
        out = out[0]
    return tuple(out.shape), np.asarray(out.double().tolist())


def _same(ours: list, theirs: list) -> None:
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if isinstance(b, str) or isinstance(a, str):
            assert a == b, (i, a, b)
        else:
            assert a[0] == b[0], (i, a[0], b[0])
            np.testing.assert_allclose(a[1], b[1], rtol=1e-12, atol=1e-12, err_msg=str(i))


# -- axis= and keepdims= -------------------------------------------------------------------

REDUCTIONS = (
    "sum mean prod amax amin max min argmax argmin var std logsumexp cumsum all any "
    "count_nonzero norm"
).split()

#: Each call form, on the method (``t``) or the function (``f``) of one reduction, after the
#: arguments that come before ``dim`` (``lead``: quantile's q, topk's k): the NumPy spellings
#: alone, mixed with PyTorch's, both spellings of one argument (TypeError), unknown keywords
#: (TypeError) and keepdims where the op has no keepdim.
FORMS: dict[str, Callable[..., Any]] = {
    "f axis": lambda f, t, *lead: f(t, *lead, axis=1),
    "t axis": lambda f, t, *lead: getattr(t, f.__name__)(*lead, axis=1),
    "t axis=0": lambda f, t, *lead: getattr(t, f.__name__)(*lead, axis=0),
    "t axis=-1": lambda f, t, *lead: getattr(t, f.__name__)(*lead, axis=-1),
    "t axis tuple": lambda f, t, *lead: getattr(t, f.__name__)(*lead, axis=(0, 1)),
    "t dim keepdims": lambda f, t, *lead: getattr(t, f.__name__)(*lead, 1, keepdims=True),
    "t axis keepdims": lambda f, t, *lead: getattr(t, f.__name__)(*lead, axis=1, keepdims=True),
    "f axis keepdim": lambda f, t, *lead: f(t, *lead, axis=1, keepdim=True),
    "f dim= keepdims": lambda f, t, *lead: f(t, *lead, dim=1, keepdims=True),
    "f dim and axis": lambda f, t, *lead: f(t, *lead, dim=1, axis=1),
    "t dim and axis": lambda f, t, *lead: getattr(t, f.__name__)(*lead, dim=1, axis=0),
    "t positional dim and axis": lambda f, t, *lead: getattr(t, f.__name__)(*lead, 1, axis=1),
    "t keepdims only": lambda f, t, *lead: getattr(t, f.__name__)(*lead, keepdims=True),
    "t unknown keyword": lambda f, t, *lead: getattr(t, f.__name__)(*lead, axes=1),
    "f unknown keyword": lambda f, t, *lead: f(t, *lead, keep=True),
    "t plain": lambda f, t, *lead: getattr(t, f.__name__)(*lead),
}


def _reductions(m: Any) -> list:
    x = m.linspace(-2, 3, 6, dtype=m.float64).reshape(2, 3)
    out = []
    for op in REDUCTIONS:
        t = x > 0 if op in ("all", "any") else x
        fn = getattr(m, op)
        for form in FORMS.values():
            out.append(_outcome(lambda: form(fn, t)))  # noqa: B023 (called at once)
    return out


def test_reductions_take_numpys_spellings_as_torch(spec: str) -> None:
    theirs = _reductions(torch)
    with entered(spec):
        ours = _reductions(tw)
    _same(ours, theirs)


#: The dim-taking functions of other modules (ops/numeric.py, ops/order_stats.py, ops/sort.py,
#: ops/integration.py) that take the NumPy spellings the same way, with the arguments that
#: come before their dim.
OTHER_REDUCTIONS = {
    "nansum": (),
    "nanmean": (),
    "var_mean": (),
    "std_mean": (),
    "aminmax": (),
    "cumprod": (),
    "cummax": (),
    "cummin": (),
    "logcumsumexp": (),
    "median": (),
    "nanmedian": (),
    "mode": (),
    "kthvalue": (1,),
    "quantile": (0.5,),
    "nanquantile": (0.5,),
    "sort": (),
    "argsort": (),
    "topk": (1,),
    "trapezoid": (),
    "trapz": (),
    "cumulative_trapezoid": (),
}


#: The forms they meet (a cheap share: torch's TypeErrors that list its overloads are slow).
OTHER_FORMS = [
    FORMS[name]
    for name in (
        "f axis",
        "t axis=-1",
        "t axis keepdims",
        "f dim= keepdims",
        "f dim and axis",
        "t positional dim and axis",
        "t keepdims only",
        "t unknown keyword",
    )
]


def _other_reductions(m: Any) -> list:
    x = m.linspace(-2, 3, 6, dtype=m.float64).reshape(2, 3)
    out = []
    for op, lead in OTHER_REDUCTIONS.items():
        fn = getattr(m, op)
        for form in OTHER_FORMS:
            out.append(_outcome(lambda: form(fn, x, *lead)))  # noqa: B023 (called at once)
    return out


def test_other_dim_functions_take_numpys_spellings_as_torch() -> None:
    """The failing cases before: every ``axis=`` form was TypeError."""
    _same(_other_reductions(tw), _other_reductions(torch))


def test_numpys_spellings_keep_gradients() -> None:
    a = np.linspace(-1, 2, 12).reshape(3, 4)
    grads = []
    for m in (torch, tw):
        x = m.tensor(a, dtype=m.float64, requires_grad=True)
        y = x.sum(axis=1, keepdims=True) * m.logsumexp(x, axis=0) + x.var(axis=0).sum()
        y.amax(axis=1).sum().backward()
        grads.append(np.asarray(x.grad.tolist()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)


def test_both_spellings_name_the_keyword() -> None:
    x = tw.ones(2, 3)
    with pytest.raises(TypeError, match=r"sum\(\) got an unexpected keyword argument 'axis'"):
        x.sum(1, axis=1)
    with pytest.raises(TypeError, match=r"cumsum\(\) got an unexpected keyword argument 'keepd"):
        x.cumsum(axis=1, keepdims=True)
    with pytest.raises(TypeError, match=r"logsumexp\(\) missing 1 required positional"):
        x.logsumexp(keepdims=True)


# -- class-target losses -------------------------------------------------------------------

RNG = np.random.default_rng(23)
X1 = RNG.standard_normal(4)
X2 = RNG.standard_normal((3, 4))
X3 = RNG.standard_normal((3, 4, 2))
W = np.array([1.0, 2.0, 0.5, 3.0])
P2 = RNG.dirichlet(np.ones(4), 3)

#: (loss, input, target, its dtype, keywords): unbatched and batched shapes, targets of
#: PyTorch's accepted shapes (a (C,) input's class index as 0-d or of shape (1,)) and of
#: refused ones (another batch size: ValueError; more target dims: RuntimeError).
CLASS_CASES: list[tuple[str, np.ndarray, Any, str, dict]] = []
#: The keywords each (input, target) pair meets, one reduction each (a cheap share of the
#: product): class weights, an ignored class, label smoothing, margins.
_INDEX_KW = ({"reduction": "mean"}, {"reduction": "none", "weight": W}, {"ignore_index": 2})
_SMOOTH_KW = ({"label_smoothing": 0.2}, {"label_smoothing": 0.1, "weight": W, "reduction": "none"})
_MARGIN_KW = ({}, {"p": 2, "margin": 0.5, "weight": W, "reduction": "none"})
for _loss in ("nll_loss", "cross_entropy"):
    for _x, _t in (
        (X1, 2),
        (X1, [2]),
        (X1, [-100]),
        (X1, [1, 2]),
        (X1, [[2]]),
        (X2, [0, 3, 1]),
        (X2, [0, 3]),
        (X2, 1),
        (X2, [[0], [3], [1]]),
        (X3, [[0, 1], [3, 3], [2, 0]]),
        (X3, [[0, 1], [3, 3]]),
        (X3, [0, 1, 2]),
        (X3, 1),
    ):
        CLASS_CASES += [(_loss, _x, _t, "int64", _kw) for _kw in _INDEX_KW]
    CLASS_CASES.append((_loss, X1, [2], "int64", {"reduction": "sum", "weight": W}))
    CLASS_CASES.append((_loss, X1, [2.0], "float64", {}))
    CLASS_CASES.append((_loss, X2, [0.0, 3.0], "float64", {}))
for _x, _t, _dt in (
    (X1, 2, "int64"),
    (X1, [2], "int64"),
    (X2, [0, 3, 1], "int64"),
    (X1, P2[0], "float64"),
    (X1, P2[0, :2], "float64"),
    (X2, P2, "float64"),
    (X2, P2[:2], "float64"),
    (X2, [[0, 1, 2, 3]] * 3, "int64"),
    (X1, [0, 1, 2, 3], "int64"),
):
    CLASS_CASES += [("cross_entropy", _x, _t, _dt, _kw) for _kw in _SMOOTH_KW]
CLASS_CASES.append(("cross_entropy", X2, P2, "float64", {"weight": W, "reduction": "sum"}))
for _x, _t in ((X1, 2), (X1, [2]), (X1, [1, 2]), (X2, [0, 3, 1]), (X2, [0, 3]), (X2, 1)):
    CLASS_CASES += [("multi_margin_loss", _x, _t, "int64", _kw) for _kw in _MARGIN_KW]
for _x, _t in ((X1, [3, 0, -1, 1]), (X1, [3]), (X2, [[3, 0, -1, 1]] * 3), (X2, [3, 0, -1, 1])):
    for _red in ("mean", "none"):
        CLASS_CASES.append(("multilabel_margin_loss", _x, _t, "int64", {"reduction": _red}))
for _x, _t in ((X1, [1.0, 0, 1, 0]), (X2, P2.round()), (X2, [1.0, 0, 1, 0]), (X2, P2[:2])):
    for _kw in ({}, {"weight": W, "reduction": "none"}):
        CLASS_CASES.append(("multilabel_soft_margin_loss", _x, _t, "float64", _kw))
CLASS_CASES.append(("nll_loss", np.array(1.0), 0, "int64", {}))
CLASS_CASES.append(("cross_entropy", np.array(1.0), 0, "int64", {}))
CLASS_CASES.append(("cross_entropy", np.array(1.0), [0], "int64", {}))


def _one_class_index(loss: str, x: Any, t: Any) -> bool:
    """Whether ``t`` is a (C,) input's class index of shape (1,) for nll_loss/cross_entropy."""
    return loss in ("nll_loss", "cross_entropy") and x.dim() == 1 and tuple(t.shape) == (1,)


def _class_losses(m: Any) -> list:
    out = []
    for loss, xv, tv, tdtype, kw in CLASS_CASES:
        x = m.tensor(xv, dtype=m.float64, requires_grad=True)
        t = m.tensor(tv, dtype=getattr(m, tdtype))
        kw = {k: m.tensor(v, dtype=m.float64) if k == "weight" else v for k, v in kw.items()}
        try:
            value = differentiated = getattr(m.nn.functional, loss)(x, t, **kw)
            if m is torch and _one_class_index(loss, x, t):
                # torch's backward of this target raises RuntimeError ("size mismatch (got
                # input: [4], target: [1])", where its forward takes it): the gradient of
                # the same loss of the 0-d target, which tensorweaver gives for both
                differentiated = getattr(m.nn.functional, loss)(x, t.reshape(()), **kw)
            (grad,) = m.autograd.grad(differentiated.sum(), x)
        except Exception as e:  # the class is what is compared (in place of both results)
            out += [type(e).__name__] * 2
            continue
        out.append((tuple(value.shape), np.asarray(value.tolist())))
        out.append((tuple(grad.shape), np.asarray(grad.tolist())))
    return out


def test_class_losses_of_unbatched_and_batched_inputs_as_torch(spec: str) -> None:
    theirs = _class_losses(torch)
    with entered(spec):
        ours = _class_losses(tw)
    _same(ours, theirs)


def test_a_one_class_target_of_a_single_sample() -> None:
    """The failing case before: (C,) logits with a target of shape (1,) gave RuntimeError."""
    x = tw.tensor([0.1, 0.5, 0.4], dtype=tw.float64).log()
    loss = tw.nn.functional.cross_entropy(x, tw.tensor([1]), reduction="none")
    want = torch.nn.functional.cross_entropy(
        torch.tensor(x.numpy()), torch.tensor([1]), reduction="none"
    )
    assert loss.shape == want.shape == ()
    assert loss.item() == pytest.approx(want.item(), rel=1e-12)
    with pytest.raises(ValueError, match=r"nll_loss: a \(C,\) input takes one class index"):
        tw.nn.functional.nll_loss(x, tw.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"its batch size must be the input's"):
        tw.nn.functional.nll_loss(tw.ones(2, 3), tw.tensor(0))


# -- what is left in other files -------------------------------------------------------------


def _written_with_axis(m: Any) -> list:
    """What ``out=`` holds after calls that spell ``dim`` as ``axis`` (sum and median take
    ``out=`` only with a dim; a complex mean along a dim writes a real ``out``)."""
    x = m.linspace(-2, 3, 6, dtype=m.float64).reshape(2, 3)
    out = []
    for op in ("sum", "prod", "nansum", "mean", "var", "cumprod", "median", "quantile", "sort"):
        lead = (0.25,) if op == "quantile" else ()
        shape = (2, 3) if op in ("cumprod", "sort") else (2,)
        o = m.empty(shape, dtype=m.float64)
        if op in ("median", "sort"):
            o = (o, m.empty(shape, dtype=m.int64))
        out.append(_outcome(lambda: getattr(m, op)(x, *lead, axis=1, out=o)))  # noqa: B023
        out.append(_outcome(lambda: o))  # noqa: B023
    o = m.empty(2, dtype=m.float64)
    out.append(_outcome(lambda: m.mean(x * (1 + 1j), axis=1, out=o)))
    out.append(_outcome(lambda: m.sum(x, keepdims=True, out=o)))
    return out


def test_out_with_axis() -> None:
    """The failing case before: sum/prod/median(x, axis=1, out=o) were TypeError (out= is
    taken only with a dim) and a complex mean's real out RuntimeError."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (complex values cast to real)
        _same(_written_with_axis(tw), _written_with_axis(torch))


#: Functions of modules other helpers own this wave that PyTorch's parser lets take ``axis=``
#: for ``dim=`` (its rule holds for every native function with a ``dim``), with the
#: arguments before their dim (index tensors by keyword), and where each lives.
OTHER_AXIS_TAKERS: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "softmax": ("ops/spellings.py", lambda m, t: m.softmax(t, axis=1)),
    "log_softmax": ("ops/spellings.py", lambda m, t: t.log_softmax(axis=1)),
    "tensor_split": ("ops/spellings.py", lambda m, t: m.tensor_split(t, 2, axis=1)),
    "squeeze": ("ops/views.py", lambda m, t: t[:, :1].squeeze(axis=1)),
    "unsqueeze": ("ops/views.py", lambda m, t: m.unsqueeze(t, axis=1)),
    "unbind": ("ops/views.py", lambda m, t: m.unbind(t, axis=1)),
    "chunk": ("ops/views.py", lambda m, t: t.chunk(2, axis=1)),
    "cat": ("ops/movement.py", lambda m, t: m.cat([t, t], axis=1)),
    "stack": ("ops/movement.py", lambda m, t: m.stack([t, t], axis=1)),
    "diff": ("ops/structure.py", lambda m, t: m.diff(t, axis=0)),
    "repeat_interleave": ("ops/structure.py", lambda m, t: t.repeat_interleave(2, axis=1)),
    "gather": ("ops/index.py", lambda m, t: m.gather(t, axis=1, index=m.tensor([[0], [2]]))),
    "index_select": ("ops/index.py", lambda m, t: t.index_select(axis=1, index=m.tensor([2]))),
    "take_along_dim": (
        "ops/index.py",
        lambda m, t: m.take_along_dim(t, m.tensor([[0], [2]]), axis=1),
    ),
    "scatter_add": (
        "ops/index.py",
        lambda m, t: t.scatter_add(axis=1, index=m.tensor([[0], [2]]), src=t),
    ),
    "index_fill": (
        "ops/index_write.py",
        lambda m, t: t.index_fill(axis=1, index=m.tensor([2]), value=1.0),
    ),
}


#: Those of them that take ``axis=`` now.
AXIS_TAKEN = {
    "cat",
    "stack",
    "chunk",
    "diff",
    "gather",
    "index_fill",
    "index_select",
    "log_softmax",
    "repeat_interleave",
    "scatter_add",
    "softmax",
    "squeeze",
    "take_along_dim",
    "tensor_split",
    "unbind",
    "unsqueeze",
}


@pytest.mark.parametrize(
    "op",
    [
        pytest.param(
            op,
            marks=pytest.mark.xfail(
                strict=True,
                reason=f"{where} {op}() refuses axis= (TypeError): give it a trailing "
                "**aliases translated by ops/reduce.py numpy_names when not empty (`dim = "
                "numpy_names(op, aliases, dim, None, (its default,))[0]`), as ops/numeric.py "
                "cumprod does",
            ),
        )
        for op, (where, _) in sorted(OTHER_AXIS_TAKERS.items())
        if op not in AXIS_TAKEN
    ]
    + sorted(AXIS_TAKEN),
)
def test_other_functions_take_axis(op: str) -> None:
    call = OTHER_AXIS_TAKERS[op][1]
    a = np.linspace(-1, 2, 6).reshape(2, 3)
    _same(
        [_outcome(lambda: call(tw, tw.tensor(a)))], [_outcome(lambda: call(torch, torch.tensor(a)))]
    )


@pytest.mark.xfail(
    strict=True,
    reason="PyTorch's parser also takes x= and a= for input= (tw.sum(a=t)); the reductions' "
    "input is a required positional parameter: give it a default and read aliases['x'/'a'] "
    "in ops/reduce.py numpy_names (only when aliases is not empty)",
)
def test_input_spelled_x_or_a() -> None:
    t = tw.ones(2, 3)
    assert tw.sum(a=t).item() == 6 and tw.mean(x=t).item() == 1
