"""A seeded sweep of higher-order autograd against PyTorch, in float64 on the same inputs.

Each case is a differentiable call ``fn(m, *leaves)`` written once for ``m = tensorweaver``
and ``m = torch``. On both it takes ``g = grad(out, leaves, v, create_graph=True)`` and then
the gradient of ``sum(g * w)`` with respect to the leaves AND to the cotangent ``v`` (double
backward in both directions), then a third derivative. Values,
``requires_grad`` and the presence of a ``grad_fn`` on each result must agree with PyTorch's,
and where PyTorch raises (a double backward it does not implement), tensorweaver must raise
the same built-in class at the same step. A share of the cases is also checked by finite
differences with ``tw.autograd.gradgradcheck``.

The suite runs one seed per case; ``TENSORWEAVER_SWEEP_SEEDS=n`` runs ``n`` seeds (a few
minutes). The nn.functional cases are in ``test_sweep_double_backward_nn.py``, linear
algebra, FFTs, distributions and values on kinks in ``test_sweep_double_backward_other.py``;
both reuse this file's harness. ``test_sweep_double_backward_fixes.py`` holds the named
regression tests, the retain_graph checks and the cuPyNumeric share.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensor.tensor_reference import builtin_class, make, signed

pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")
SEEDS = range(int(os.environ.get("TENSORWEAVER_SWEEP_SEEDS", "1")))
#: Second and third derivatives pass through more roundings than a forward value.
RTOL = 1e-9


@dataclass(frozen=True)
class Case:
    """One differentiable call and the float64 host arrays its leaves are made from."""

    name: str
    fn: Callable[..., Any]
    inputs: Callable[[int], list[np.ndarray]]
    #: also compare a third derivative (False where torch's is wrong: those are checked by
    #: finite differences in test_sweep_double_backward_fixes.py)
    third: bool = True
    fd: bool = False  # also run tw.autograd.gradgradcheck
    #: torch has no double backward here (it raises); tensorweaver's is checked by finite
    #: differences instead
    beyond_torch: bool = False


def away(*shapes: tuple[int, ...], low: float = 0.5, high: float = 2.0) -> Callable:
    """Inputs of magnitude in [low, high) and random sign (kinks and poles stay away)."""
    return lambda seed: [signed(s, low, high, seed + i) for i, s in enumerate(shapes)]


def positive(*shapes: tuple[int, ...], low: float = 0.5, high: float = 2.0) -> Callable:
    """Inputs in [low, high) (logs, roots, the base of a power)."""
    return lambda seed: [np.abs(signed(s, low, high, seed + i)) for i, s in enumerate(shapes)]


def fixed(*arrays: Any) -> Callable:
    """The same inputs for every seed: ties, zeros and values on a kink."""
    return lambda seed: [np.array(a, dtype=np.float64) for a in arrays]


# -- running one case on one module -------------------------------------------------------


@dataclass
class Trace:
    """What each step gave on one module: tensors as host arrays (None kept), the flags of the
    first gradients, and the step at which it raised (with the exception), if it did."""

    steps: dict[str, Any] = field(default_factory=dict)
    raised_at: str | None = None
    error: BaseException | None = None


def _host(t: Any) -> Any:
    if t is None:
        return None
    return (
        t.detach().numpy(force=True).copy()
        if isinstance(t, torch.Tensor)
        else np.asarray(t.detach())
    )


def _flags(g: Any) -> tuple[bool, bool] | None:
    return None if g is None else (bool(g.requires_grad), g.grad_fn is not None)


def trace(m: Any, case: Case, arrays: list[np.ndarray], seed: int) -> Trace:
    """Run the case's derivatives on module ``m``, stopping at the first step that raises."""
    out = Trace()
    rng = np.random.default_rng(seed + 1000)
    step = "forward"
    try:
        leaves = [make(m, a, "float64", requires_grad=True) for a in arrays]
        y = case.fn(m, *leaves)
        out.steps[step] = _host(y)
        step = "first"
        v = make(m, rng.standard_normal(tuple(y.shape)), "float64", requires_grad=True)
        g = m.autograd.grad(y, leaves, v, create_graph=True, allow_unused=True)
        out.steps[step] = [_host(gi) for gi in g]
        out.steps["flags"] = [_flags(gi) for gi in g]
        terms = [
            (gi * make(m, rng.standard_normal(tuple(gi.shape)))).sum()
            for gi in g
            if gi is not None and gi.requires_grad
        ]
        if not terms:
            return out
        step = "second"
        h = m.autograd.grad(sum(terms), [*leaves, v], allow_unused=True, create_graph=case.third)
        out.steps[step] = [_host(hi) for hi in h]
        if not case.third or h[0] is None or not h[0].requires_grad:
            return out
        step = "third"
        u = make(m, rng.standard_normal(tuple(h[0].shape)))
        k = m.autograd.grad((h[0] * u).sum(), leaves, allow_unused=True)
        out.steps[step] = [_host(ki) for ki in k]
    except Exception as error:  # noqa: BLE001 - the class is compared with torch's below
        out.raised_at, out.error = step, error
    return out


def _same(ours: Any, theirs: Any, what: str) -> None:
    if theirs is None or ours is None:
        # torch leaves a gradient None where it is zero by construction; tensorweaver may
        # give the zeros (or the reverse): only the values are the spec here.
        other = theirs if ours is None else ours
        assert other is None or np.all(np.abs(other) <= RTOL), f"{what}: None against {other}"
        return
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape}, torch {theirs.shape}"
    finite = np.abs(theirs[np.isfinite(theirs)])
    atol = RTOL * max(float(finite.max()) if finite.size else 0.0, 1.0)
    np.testing.assert_allclose(ours, theirs, rtol=RTOL, atol=atol, err_msg=what)


def check_case(case: Case, seed: int) -> None:
    """The case's first, second (and third) derivatives on tensorweaver are torch's."""
    arrays = case.inputs(seed)
    theirs = trace(torch, case, arrays, seed)
    ours = trace(tw, case, arrays, seed)
    if case.beyond_torch:
        assert theirs.raised_at == "second", f"torch differentiates {case.name} twice now"
        assert ours.raised_at is None, f"tensorweaver raised {ours.error!r}"
        finite_differences(case, seed)
        ours.steps.pop("second")  # the first derivatives are still compared below
        ours.steps.pop("third", None)
    elif theirs.raised_at is not None:
        assert ours.raised_at == theirs.raised_at, (
            f"torch raises {type(theirs.error).__name__} at the {theirs.raised_at} step "
            f"({theirs.error}); tensorweaver raised at {ours.raised_at}: {ours.error!r}"
        )
        assert isinstance(ours.error, builtin_class(theirs.error)), (
            f"torch raises {builtin_class(theirs.error).__name__}, tensorweaver {ours.error!r}"
        )
    elif ours.raised_at is not None:
        raise AssertionError(f"tensorweaver raised at the {ours.raised_at} step") from ours.error
    for i, (a, b) in enumerate(zip(ours.steps.get("flags", ()), theirs.steps.get("flags", ()))):
        # torch may hand back the cotangent leaf itself (no grad_fn) where tw copies it
        if a is not None and b is not None:
            assert a[0] == b[0], f"first grad {i}: requires_grad {a[0]}, torch {b[0]}"
            assert a[1] or not b[1], f"first grad {i}: no grad_fn, torch has one"
    for step in ("forward", "first", "second", "third"):
        got, expected = ours.steps.get(step), theirs.steps.get(step)
        if step == "forward":
            _same(got, expected, "forward")
        elif got is not None and expected is not None:
            for i, (a, b) in enumerate(zip(got, expected)):
                _same(a, b, f"{step} derivative {i}")
        else:
            # one side stopped early because its gradients no longer required grad: the
            # other side's further derivatives must then be zero
            for i, a in enumerate(got or expected or ()):
                _same(a, None, f"{step} derivative {i} (the other side has none)")


def finite_differences(case: Case, seed: int) -> None:
    """``tw.autograd.gradgradcheck`` of the case on this backend."""
    leaves = tuple(tw.tensor(a, requires_grad=True) for a in case.inputs(seed))
    assert tw.autograd.gradgradcheck(lambda *xs: case.fn(tw, *xs), leaves, atol=1e-6, rtol=1e-4)


def loss_flags(m: Any, case: Case, arrays: list[np.ndarray]) -> list[bool | None]:
    """``requires_grad`` of each gradient of the scalar ``fn(...).sum()`` under
    ``create_graph=True`` (no grad_outputs: what a gradient penalty differentiates)."""
    leaves = [make(m, a, "float64", requires_grad=True) for a in arrays]
    y = case.fn(m, *leaves).sum()
    grads = m.autograd.grad(y, leaves, create_graph=True, allow_unused=True)
    return [None if g is None else bool(g.requires_grad) for g in grads]


def check_loss_flags(case: Case, seed: int) -> None:
    """Each gradient of the scalar loss requires grad where torch's does."""
    arrays = case.inputs(seed)
    ours, theirs = loss_flags(tw, case, arrays), loss_flags(torch, case, arrays)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a is None or b is None or a == b, f"grad {i}: requires_grad {a}, torch {b}"


def params(cases: list[Case], *, fd: bool = False, xfail: dict[str, str] | None = None) -> list:
    """Parameters for a sweep test: ``(case, seed)``, named ``name-seed``; the cases named
    in ``xfail`` are strict xfails with the reason given."""
    xfail = xfail or {}

    def marks(c: Case) -> tuple:
        reason = xfail.get(c.name)
        return () if reason is None else (pytest.mark.xfail(strict=True, reason=reason),)

    return [
        pytest.param(c, s, id=f"{c.name}-{s}", marks=marks(c))
        for c in cases
        if c.fd or not fd
        for s in SEEDS
    ]


# -- the tensor-level cases ----------------------------------------------------------------

M = (3, 4)
UNARY = {
    # name: (inputs, fd)
    "exp": (away(M), True),
    "log": (positive(M), True),
    "log2": (positive(M), False),
    "log10": (positive(M), False),
    "log1p": (positive(M), False),
    "expm1": (away(M), False),
    "sqrt": (positive(M), True),
    "rsqrt": (positive(M), False),
    "sin": (away(M), False),
    "cos": (away(M), False),
    "tan": (away(M, low=0.1, high=1.2), False),
    "tanh": (away(M), True),
    "sigmoid": (away(M), True),
    "relu": (away(M), False),
    "erf": (away(M), False),
    "erfc": (away(M), False),
    "erfinv": (away(M, low=0.1, high=0.9), False),
    "abs": (away(M), False),
    "sign": (away(M), False),
    "neg": (away(M), False),
    "reciprocal": (away(M), True),
    "square": (away(M), False),
    "floor": (away(M), False),
    "ceil": (away(M), False),
    "round": (away(M), False),
    "trunc": (away(M), False),
    "asin": (away(M, low=0.1, high=0.9), False),
    "acos": (away(M, low=0.1, high=0.9), False),
    "atan": (away(M), False),
    "sinh": (away(M), False),
    "cosh": (away(M), False),
    "asinh": (away(M), False),
    "acosh": (positive(M, low=1.2, high=3.0), False),
    "atanh": (away(M, low=0.1, high=0.9), False),
    "lgamma": (positive(M), False),
    "digamma": (positive(M), False),
    "sinc": (away(M), False),
    "logit": (positive(M, low=0.1, high=0.9), False),
    "sgn": (away(M), False),
    "frac": (away(M), False),
    "deg2rad": (away(M), False),
    "exp2": (away(M), False),
}
SPECIAL = {
    "i0": (away(M), False),
    "i0e": (away(M), False),
    "i1": (away(M), False),
    "i1e": (away(M), False),
    "ndtr": (away(M), False),
    "ndtri": (positive(M, low=0.1, high=0.9), False),
    "log_ndtr": (away(M), False),
    "erfcx": (away(M), False),
    "expit": (away(M), False),
    "entr": (positive(M), False),
    "sinc": (away(M), False),
}


def _unary(name: str) -> Callable:
    return lambda m, x: getattr(m, name)(x)


def _special(name: str) -> Callable:
    return lambda m, x: getattr(m.special, name)(x)


TIES = [[1.0, -1.0, 0.5, 0.5], [2.0, 2.0, -3.0, 1.0], [0.0, 1.5, 1.5, -0.5]]
WITH_ZEROS = [[1.5, 0.0, -2.0, 0.5], [0.0, 0.0, 1.2, -0.7], [0.9, 1.1, -1.3, 2.0]]


def _index(m: Any, values: list) -> Any:
    return m.tensor(values, dtype=m.int64)


TENSOR_CASES: list[Case] = [
    *(Case(n, _unary(n), inp, fd=fd) for n, (inp, fd) in UNARY.items()),
    *(Case(f"special.{n}", _special(n), inp) for n, (inp, fd) in SPECIAL.items()),
    Case("polygamma1", lambda m, x: m.polygamma(1, x), positive(M)),
    Case("mvlgamma", lambda m, x: m.mvlgamma(x, 2), positive(M, low=1.5, high=3.0)),
    Case("pow_scalar", lambda m, x: x**3, away(M)),
    Case("pow_half", lambda m, x: m.pow(x, 2.5), positive(M)),
    Case("pow_tensor", lambda m, x, y: m.pow(x, y), positive(M, M), fd=True),
    Case("rpow", lambda m, y: 2.0**y, away(M)),
    Case("pow_zero_base", lambda m, x, y: x**y, fixed([0.0, 1.0, 2.0], [2.0, 3.0, 0.5])),
    Case("float_power", lambda m, x, y: m.float_power(x, y), positive(M, M)),
    Case("mul", lambda m, x, y: x * y, away(M, M), fd=True),
    Case("div", lambda m, x, y: x / y, away(M, M), fd=True),
    Case("atan2", lambda m, x, y: m.atan2(x, y), away(M, M)),
    Case("hypot", lambda m, x, y: m.hypot(x, y), away(M, M)),
    Case("logaddexp", lambda m, x, y: m.logaddexp(x, y), away(M, M)),
    Case("xlogy", lambda m, x, y: m.xlogy(x, y), positive(M, M)),
    Case("special.xlog1py", lambda m, x, y: m.special.xlog1py(x, y), positive(M, M)),
    Case("lerp", lambda m, a, b, w: m.lerp(a, b, w), away(M, M, M)),
    Case("lerp_scalar", lambda m, a, b: m.lerp(a, b, 0.3), away(M, M)),
    Case("fmod", lambda m, x, y: m.fmod(x, y), away(M, M)),
    Case("remainder", lambda m, x, y: m.remainder(x, y), away(M, M)),
    Case("copysign", lambda m, x, y: m.copysign(x, y), away(M, M)),
    Case("addcmul", lambda m, a, b, c: m.addcmul(a, b, c, value=0.5), away(M, M, M)),
    Case("addcdiv", lambda m, a, b, c: m.addcdiv(a, b, c, value=0.5), away(M, M, M)),
    Case("nan_to_num", lambda m, x: m.nan_to_num(x), away(M)),
    Case("clamp", lambda m, x: m.clamp(x, -1.0, 1.0), fixed(TIES)),
    Case("clamp_tensor", lambda m, x, lo, hi: m.clamp(x, lo, hi), away(M, M, M)),
    Case("clamp_min", lambda m, x: m.clamp(x, min=0.5), fixed(TIES)),
    Case("maximum_ties", lambda m, x, y: m.maximum(x, y), fixed(TIES, TIES[::-1])),
    Case("minimum_ties", lambda m, x, y: m.minimum(x, y), fixed(TIES, TIES[::-1])),
    Case("fmax", lambda m, x, y: m.fmax(x, y), away(M, M)),
    Case("where", lambda m, x, y: m.where(x > 0, x * y, y**2), away(M, M)),
    Case("masked_fill", lambda m, x: (x * x).masked_fill(x > 0, 2.0), away(M)),
    Case("relu_ties", lambda m, x: m.relu(x) ** 2, fixed(WITH_ZEROS)),
    Case("abs_zero", lambda m, x: m.abs(x) * x, fixed(WITH_ZEROS)),
    # reductions
    Case("sum", lambda m, x: (x**2).sum(1), away(M)),
    Case("mean", lambda m, x: (x**3).mean(), away(M)),
    Case("prod", lambda m, x: x.prod(1), away(M), fd=True),
    Case("prod_zeros", lambda m, x: x.prod(1), fixed(WITH_ZEROS)),
    Case("prod_all_zeros", lambda m, x: x.prod(), fixed(WITH_ZEROS)),
    Case("prod_one_zero", lambda m, x: x.prod(), fixed([[1.5, 0.0], [2.0, -0.5]])),
    Case("amax_ties", lambda m, x: m.amax(x * x, 1), fixed(TIES)),
    Case("amin_ties", lambda m, x: m.amin(x, 0), fixed(TIES)),
    Case("max_dim", lambda m, x: (x * x).max(1).values, fixed(TIES)),
    Case("min_dim", lambda m, x: x.min(0)[0], fixed(TIES)),
    Case("max_all", lambda m, x: (x * x).max(), fixed(TIES)),
    Case("min_all", lambda m, x: x.min(), away(M)),
    Case("norm", lambda m, x: x.norm(), away(M), fd=True),
    Case("norm_dim", lambda m, x: m.norm(x, dim=1), away(M)),
    Case("norm_p1", lambda m, x: m.norm(x, p=1, dim=0), away(M)),
    Case("norm_p3", lambda m, x: m.norm(x, p=3, dim=1), away(M)),
    Case("norm_inf", lambda m, x: m.norm(x, p=float("inf"), dim=1), away(M)),
    Case("norm_zero_row", lambda m, x: m.norm(x, dim=1), fixed([[0.0, 0.0], [1.0, 2.0]])),
    Case("linalg.vector_norm", lambda m, x: m.linalg.vector_norm(x, 2.5, dim=1), away(M)),
    Case("var", lambda m, x: x.var(1), away(M), fd=True),
    Case("var_correction0", lambda m, x: m.var(x, 0, correction=0), away(M)),
    Case("std", lambda m, x: x.std(1), away(M), fd=True),
    Case("std_all", lambda m, x: x.std(), away(M)),
    Case("var_mean", lambda m, x: m.stack(m.var_mean(x, 1)), away(M)),
    Case("logsumexp", lambda m, x: m.logsumexp(x, 1), away(M), fd=True),
    Case("cumsum", lambda m, x: (x * x).cumsum(1), away(M)),
    Case("cumprod", lambda m, x: x.cumprod(1), away(M), fd=True),
    Case("cumprod_zeros", lambda m, x: x.cumprod(1), fixed(WITH_ZEROS)),
    Case("logcumsumexp", lambda m, x: m.logcumsumexp(x, 1), away(M), third=False),
    Case("cummax", lambda m, x: m.cummax(x * x, 1).values, away(M)),
    Case("softmax", lambda m, x: m.softmax(x, 1), away(M), fd=True),
    Case("log_softmax", lambda m, x: m.log_softmax(x, 0), away(M), fd=True),
    Case("median", lambda m, x: (x * x).median(1).values, away(M)),
    Case("sort", lambda m, x: m.sort(x * x, 1).values, away(M)),
    Case("topk", lambda m, x: m.topk(x * x, 2, 1).values, away(M)),
    Case("kthvalue", lambda m, x: m.kthvalue(x * x, 2, 1).values, away(M)),
    # shape and views
    Case("reshape", lambda m, x: (x * x).reshape(2, 6), away(M)),
    Case("permute", lambda m, x: (x * x).reshape(3, 2, 2).permute(2, 0, 1), away(M)),
    Case("transpose", lambda m, x: (x**3).t(), away(M)),
    Case("expand", lambda m, x: (x * x)[:, :1].expand(3, 5), away(M)),
    Case("repeat", lambda m, x: (x * x).repeat(2, 1), away(M)),
    Case("narrow", lambda m, x: (x * x).narrow(1, 1, 2), away(M)),
    Case("flip_roll", lambda m, x: m.roll(m.flip(x * x, [0]), 1, 1), away(M)),
    Case("tril_triu", lambda m, x: m.tril(x * x) + m.triu(x**3, 1), away(M)),
    Case("cat_stack", lambda m, x, y: m.cat([x * y, m.stack([x, y]).sum(0) ** 2]), away(M, M)),
    Case("split", lambda m, x: m.split(x * x, [1, 3], 1)[1] * 2, away(M)),
    Case("chunk_unbind", lambda m, x: m.stack(m.unbind((x * x).chunk(2, 1)[0], 1)), away(M)),
    Case("diagonal", lambda m, x: m.diagonal(x * x), away(M)),
    Case("movedim", lambda m, x: m.movedim((x * x).reshape(3, 2, 2), 0, 2), away(M)),
    Case("squeeze", lambda m, x: (x * x).unsqueeze(0).squeeze(0), away(M)),
    Case("unfold_tensor", lambda m, x: (x * x).unfold(1, 2, 1), away(M)),
    # indexing
    Case("getitem_basic", lambda m, x: (x * x)[1:, ::2], away(M)),
    Case("getitem_int", lambda m, x: (x * x)[_index(m, [2, 0, 2])], away(M)),
    Case("getitem_mask", lambda m, x: (x * x)[x > 0], away(M)),
    Case("masked_select", lambda m, x: m.masked_select(x * x, x > 0), away(M)),
    Case("gather", lambda m, x: m.gather(x * x, 1, _index(m, [[0, 0], [3, 1], [2, 2]])), away(M)),
    Case(
        "scatter",
        lambda m, x, s: m.scatter(x * x, 1, _index(m, [[0], [3], [1]]), s * s),
        away(M, (3, 1)),
    ),
    Case(
        "scatter_add",
        lambda m, x, s: m.scatter_add(x * x, 1, _index(m, [[0, 0], [3, 1], [1, 1]]), s * s),
        away(M, (3, 2)),
    ),
    Case(
        "scatter_reduce",
        lambda m, x, s: m.scatter_reduce(x, 1, _index(m, [[0, 0], [3, 1], [1, 1]]), s, "prod"),
        away(M, (3, 2)),
    ),
    Case("index_select", lambda m, x: m.index_select(x * x, 1, _index(m, [3, 3, 0])), away(M)),
    Case(
        "index_add",
        lambda m, x, s: m.index_add(x * x, 0, _index(m, [2, 2]), s * s),
        away(M, (2, 4)),
    ),
    Case(
        "index_put",
        lambda m, x, s: m.index_put(x * x, (_index(m, [0, 2]), _index(m, [1, 1])), s * s, True),
        away(M, (2,)),
    ),
    Case(
        "take_along_dim",
        lambda m, x: m.take_along_dim(x * x, _index(m, [[1], [0], [3]]), 1),
        away(M),
    ),
    Case("setitem", lambda m, x, s: _setitem(x * x, s * s), away(M, (4,))),
    # products
    Case("matmul", lambda m, a, b: a @ b, away((3, 4), (4, 2)), fd=True),
    Case("matmul_vec", lambda m, a, b: m.matmul(a, b), away((2, 3, 4), (4,))),
    Case("bmm", lambda m, a, b: m.bmm(a * a, b), away((2, 3, 4), (2, 4, 2))),
    Case("mv_dot", lambda m, a, b: m.mv(a, b) * m.dot(b, b), away((3, 4), (4,))),
    Case("outer", lambda m, a, b: m.outer(a, b * b), away((3,), (4,))),
    Case("einsum", lambda m, a, b: m.einsum("ij,jk->ik", a * a, b), away((3, 4), (4, 2))),
    Case(
        "einsum_trace", lambda m, a, b: m.einsum("bij,bjk->bik", a, b), away((2, 3, 4), (2, 4, 3))
    ),
    Case("einsum_diag", lambda m, a: m.einsum("ii->i", a**3), away((3, 3))),
]


#: Broadcast operands, 0-d and empty tensors, transposed inputs, several reduced axes: the
#: engine un-broadcasts each gradient, and at second order the gradient of that sum too.
LAYOUT_CASES: list[Case] = [
    Case("mul_broadcast", lambda m, x, y: x * y, away((3, 1), (1, 4))),
    Case("div_broadcast", lambda m, x, y: x / y, away((3, 4), (4,))),
    Case("pow_broadcast", lambda m, x, y: x**y, positive((3, 4), (1, 4))),
    Case("atan2_broadcast", lambda m, x, y: m.atan2(x, y), away((2, 1, 3), (4, 1))),
    Case("where_broadcast", lambda m, x, y: m.where(x > 0, x * y, y), away((3, 4), (4,))),
    Case("maximum_broadcast", lambda m, x, y: m.maximum(x, y) ** 2, away((3, 1), (4,))),
    Case("lerp_broadcast", lambda m, a, b, w: m.lerp(a, b, w), away((3, 4), (4,), (3, 1))),
    Case("addcdiv_broadcast", lambda m, a, b, c: m.addcdiv(a, b, c), away((4,), (3, 1), (3, 4))),
    Case("scalar_mul", lambda m, x, y: m.exp(x) * y, away((), (3,))),
    Case("scalar_sum", lambda m, x: (x**3).sum(), away(())),
    Case("scalar_prod", lambda m, x: (x**2).prod(), away(())),
    Case("scalar_norm", lambda m, x: m.norm(x * 3), away(())),
    Case("empty_exp", lambda m, x: m.exp(x), away((0, 3))),
    Case("empty_sum", lambda m, x: (x * x).sum(0), away((0, 3))),
    Case("empty_prod", lambda m, x: x.prod(0), away((0, 3))),
    Case("transposed_exp", lambda m, x: m.exp(x.mT) * x.mT, away((4, 3))),
    Case("strided_softmax", lambda m, x: m.softmax(x[:, ::2], 0), away((3, 8))),
    Case("sum_keepdim", lambda m, x: (x**3).sum((0, 1), keepdim=True), away((2, 3, 2))),
    Case("mean_negative_dims", lambda m, x: (x**3).mean((-1, -3)), away((2, 3, 2))),
    Case("var_two_axes", lambda m, x: x.var((0, 2), keepdim=True), away((2, 3, 2))),
    Case("std_correction0", lambda m, x: x.std(-1, correction=0), away((3, 4))),
    Case("var_single_element", lambda m, x: x.var(1), away((3, 1))),
    Case("norm_two_axes", lambda m, x: m.norm(x, dim=(0, 2)), away((2, 3, 2))),
    Case("logsumexp_two_axes", lambda m, x: m.logsumexp(x, (0, 2)), away((2, 3, 2))),
    Case("amax_two_axes", lambda m, x: m.amax(x**3, (0, 2)), away((2, 3, 2))),
    Case("prod_two_axes", lambda m, x: m.prod(x.reshape(3, 4), 0) ** 2, away((2, 6))),
    Case("cumsum_dim0", lambda m, x: (x**3).cumsum(0), away((3, 4))),
    Case("cumprod_dim0", lambda m, x: x.cumprod(0), away((3, 4))),
    Case("matmul_batched", lambda m, a, b: a @ b, away((2, 1, 3, 4), (3, 4, 2))),
    Case(
        "einsum_ellipsis",
        lambda m, a, b: m.einsum("...ij,jk->...ik", a, b),
        away((2, 3, 4), (4, 2)),
    ),
    Case("einsum_outer_sum", lambda m, a, b: m.einsum("i,j->", a, b * b), away((3,), (4,))),
    Case("gather_dim0", lambda m, x: m.gather(x**3, 0, _index(m, [[2, 0, 1, 1]])), away((3, 4))),
    Case("index_negative", lambda m, x: (x * x)[_index(m, [-1, 0]), -2], away((3, 4))),
    Case("unfold_step", lambda m, x: (x**3).unfold(0, 2, 2), away((5, 2))),
    Case("expand_reshape", lambda m, x: (x * x).expand(2, 3, 4).reshape(6, 4), away((3, 4))),
]


def _setitem(base: Any, values: Any) -> Any:
    base = base.clone()
    base[1] = values
    return base


#: Where tensorweaver's value differs from torch's (a strict xfail each: the record).
DIFFERENT_VALUES: dict[str, str] = {}  # (pow_zero_base, norm_zero_row: as torch's since session 29)
#: Where torch's scalar-loss gradient does NOT require grad but tensorweaver's does.
TRACKED_GRADIENTS: dict[str, str] = {}  # (fmod's, the last, passes g through as torch's)


@pytest.mark.parametrize(
    ("case", "seed"), params(TENSOR_CASES + LAYOUT_CASES, xfail=DIFFERENT_VALUES)
)
def test_double_backward_like_torch(backend: str, case: Case, seed: int) -> None:
    check_case(case, seed)


@pytest.mark.parametrize(
    ("case", "seed"), params(TENSOR_CASES + LAYOUT_CASES, xfail=TRACKED_GRADIENTS)
)
def test_loss_gradient_requires_grad_like_torch(backend: str, case: Case, seed: int) -> None:
    check_loss_flags(case, seed)


@pytest.mark.parametrize(("case", "seed"), params(TENSOR_CASES, fd=True))
def test_gradgradcheck(backend: str, case: Case, seed: int) -> None:
    finite_differences(case, seed)
