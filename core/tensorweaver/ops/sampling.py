"""Sampling ops with PyTorch's API: ``multinomial``, ``bernoulli`` and the in-place fills
``uniform_``, ``normal_``, ``bernoulli_``, ``random_``, ``exponential_``, ``geometric_``,
``cauchy_`` and ``log_normal_``.

Each draws from the device's own generator, or on the host from ``generator=`` (see
:mod:`tensorweaver.random`). The in-place fills lay their draws out in the order of the
tensor's memory, as PyTorch does: ``w.T.uniform_()`` gets the values ``w.uniform_()`` would.

``multinomial`` draws category indices from rows of non-negative weights.
With replacement, each draw is the first category whose running sum of weights exceeds a
uniform draw scaled to the row's total. Without replacement, each category gets the key
``E / w`` with ``E`` exponentially distributed, and the ``num_samples`` smallest keys win:
the same law as drawing one at a time and removing what was drawn (Efraimidis and
Spirakis), in one sort; once the categories of positive weight run out, those of weight
zero follow in index order (PyTorch, too, returns them rather than raising).

``random_`` without an upper bound stays below ``2**digits + 1`` for floats (every integer
there is exact) and below the dtype's maximum plus one for integers, as in PyTorch; for
int64 the bound is ``2**63 - 1``, so the maximum itself is never drawn.

``geometric_`` and ``cauchy_`` invert their CDFs at uniform draws ``u``:
``floor(log(1 - u) / log(1 - p)) + 1`` and ``median + sigma * tan(pi * (u - 1/2))``;
``log_normal_`` exponentiates a normal draw. ``geometric_`` also fills integer tensors,
drawing in the default float dtype (a count past the dtype's range is not defined, as in
PyTorch, whose CPU kernel wraps it).

Autograd sees a draw as PyTorch does: its parameters and the tensor a fill overwrites get a
zero gradient, through a node of PyTorch's name (``NormalBackward0``, ``BernoulliBackward0``,
...), so a filled non-leaf stays in the graph; a leaf that requires grad is refused.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from tensorweaver.autograd.mode import is_grad_enabled, no_grad
from tensorweaver.autograd.node import Node
from tensorweaver.contract import dtypes
from tensorweaver.dtype_info import finfo
from tensorweaver.ops import creation as cr
from tensorweaver.ops import elementwise as ew
from tensorweaver.ops import movement as mv
from tensorweaver.ops import out_arguments as oa
from tensorweaver.ops import reduce as rd
from tensorweaver.ops.apply import labelled
from tensorweaver.ops.methods import _overwritten
from tensorweaver.ops.overflow import int_range
from tensorweaver.ops.sort import argsort
from tensorweaver.promotion import get_default_dtype
from tensorweaver.random import Generator
from tensorweaver.tensor import Tensor

_UNSET: Any = object()
#: Floats hold every integer up to 2**digits.
_DIGITS = {dtypes.float16: 11, dtypes.bfloat16: 8, dtypes.float32: 24, dtypes.float64: 53}
#: The largest finite value of each float and complex (its parts') dtype.
_LARGEST = {d: finfo(d).max for d in (*_DIGITS, dtypes.complex64, dtypes.complex128)}


def _check_weights(p: Tensor, num_samples: int, replacement: bool) -> None:
    if not p.dtype.is_floating_point or p.ndim not in (1, 2) or p.shape[-1] == 0:
        raise RuntimeError(
            f"multinomial: expected a 1-d or 2-d floating-point tensor of weights with at "
            f"least one category, got {p.dtype.name} of shape {list(p.shape)}"
        )
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples ({num_samples})")
    if not replacement and num_samples > p.shape[-1]:
        raise RuntimeError(
            f"multinomial: cannot sample n_sample ({num_samples}) > prob_dist.size(-1) "
            f"({p.shape[-1]}) samples without replacement; pass replacement=True"
        )
    if rd.any(ew.logical_not(ew.logical_and(ew.isfinite(p), ew.ge(p, 0)))).item():
        raise RuntimeError(
            "multinomial: probability tensor contains either inf, nan or element < 0"
        )
    positive = rd.sum(ew.gt(p, 0), -1)
    if rd.any(ew.eq(positive, 0)).item():
        raise RuntimeError(
            "multinomial: invalid multinomial distribution (sum of probabilities <= 0)"
        )


def multinomial(
    input: Tensor,
    num_samples: int,
    replacement: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """``num_samples`` category indices (int64) for each row of weights in ``input``
    (``(C,)`` or ``(N, C)``; weights need not sum to one)."""
    _check_weights(input, num_samples, replacement)
    with no_grad():
        p = input if input.ndim == 2 else mv.unsqueeze(input, 0)
        rows, categories = p.shape
        if replacement:
            cdf = rd.cumsum(p, -1)
            totals = mv.narrow(cdf, 1, categories - 1, 1)
            u = cr.rand(rows, num_samples, generator=generator, dtype=p.dtype, device=p)
            draws = ew.mul(u, totals)
            # The count of running sums at or below a draw is the category it falls in
            # (a category of weight zero has the running sum of the one before: never hit).
            below = ew.le(mv.unsqueeze(mv.narrow(cdf, 1, 0, categories - 1), 1), draws[..., None])
            drawn = rd.sum(below, -1)
        else:
            u = cr.rand(rows, categories, generator=generator, dtype=p.dtype, device=p)
            keys = ew.div(ew.neg(ew.log(u)), p)
            drawn = mv.narrow(argsort(keys, -1), 1, 0, num_samples)
    return drawn if input.ndim == 2 else mv.squeeze(drawn, 0)


def _check_probabilities(p: Tensor, fn: str) -> None:
    if not rd.all(ew.logical_and(ew.ge(p, 0), ew.le(p, 1))).item():
        raise RuntimeError(
            f"{fn}: probabilities must lie in [0, 1] (no NaN), got values from "
            f"{rd.amin(p).item()} to {rd.amax(p).item()}"
        )


def _unit_draws(like: Tensor, generator: Generator | None) -> Callable[[tuple], Tensor]:
    """A draw of U(0, 1) samples of a shape on ``like``'s device, in its dtype if that is a
    float dtype, else in the default one."""
    drawn = like.dtype if like.dtype.is_floating_point else get_default_dtype()
    return lambda shape: cr.rand(shape, generator=generator, dtype=drawn, device=like)


def _coin(u: Tensor, p: Any, dtype: Any) -> Tensor:
    """1 where the uniform draw ``u`` falls below ``p`` (a number or a tensor), else 0."""
    return ew.cast(ew.lt(u, p), dtype)


def bernoulli(
    input: Tensor,
    p: float | None = None,
    *,
    generator: Generator | None = None,
    out: Tensor | None = None,
) -> Tensor:
    """1 with probability ``input`` (elementwise; or ``p`` for every element), else 0, in
    ``input``'s float dtype."""
    if out is not None:
        if p is not None:
            raise TypeError(
                "bernoulli(): out= is taken by the form without p alone: bernoulli(input, "
                "out=out) draws with probabilities input; for one p use out.bernoulli_(p)"
            )
        return oa.call_with_out("bernoulli", bernoulli, (input,), {"generator": generator}, out)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(
            f"bernoulli: the probabilities must be a floating-point tensor, got "
            f"{input.dtype.name}; convert with .float()"
        )
    if p is None:
        _check_probabilities(input, "bernoulli")
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli expects p to be in [0, 1], but got p={p}")
    with no_grad():
        u = _unit_draws(input, generator)(input.shape)
        coin = _coin(u, input if p is None else p, input.dtype)
    if p is None:
        return drawn(coin, "BernoulliBackward0", input)
    if input.requires_grad and is_grad_enabled():
        from tensorweaver.ops.order_stats import NO_DERIVATIVE, no_derivative  # (rare: lazily)

        error = RuntimeError(NO_DERIVATIVE.format("bernoulli"))
        return labelled(no_derivative(coin, (input,), error), "NotImplemented", input)
    return coin


def drawn(sample: Tensor, grad_fn: str, *inputs: Tensor) -> Tensor:
    """``sample``, drawn with parameters ``inputs``, as PyTorch's random op returns it: where
    grad mode is on and one of them requires grad, through a node named ``grad_fn`` that gives
    each a zero gradient (PyTorch defines a draw's derivative so)."""
    if not is_grad_enabled() or not any(t.requires_grad for t in inputs):
        return sample
    # One node over the sample's own values, recording no computation: the "draw" rule
    # gives every input zeros that need no grad; the engine sums them to each input's shape
    # and casts them to its dtype.
    out = Tensor(sample.native, sample.backend, sample.dtype)
    out._node = Node("draw", inputs, None)
    out._requires_grad = True
    return labelled(out, grad_fn, *inputs)


def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Generator | None = None) -> Tensor:
    """Fill with 1 with probability ``p`` (a number, or a tensor that broadcasts to self),
    else 0."""
    self._check_inplace()
    if isinstance(p, Tensor):
        if not p.dtype.is_floating_point:
            raise NotImplementedError(
                f"bernoulli_: the probabilities must be a floating-point tensor, got "
                f"{p.dtype.name}; convert with .float()"
            )
        _check_probabilities(p, "bernoulli_")
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    u = _in_storage_order(self, _unit_draws(self, generator))
    sample = _coin(u, p, self.dtype)
    if isinstance(p, Tensor):  # (p's graph too: a result that requires grad through p alone)
        sample = drawn(sample, "BernoulliBackward1", p)
        sample = _overwritten(self, sample, "BernoulliBackward1", p)
    elif self._requires_grad:  # (in a graph: see the module)
        sample = _overwritten(self, sample, "BernoulliBackward2")
    return self._assign(sample, "bernoulli_")


def _refuse_uniform_bounds(dtype: Any, a: float, b: float, top: float) -> None:
    """Raise PyTorch's error for ``uniform_``'s bounds ``a``, ``b`` that fail its checks."""
    for value, name in ((a, "from"), (b, "to")):
        if not -top <= value <= top:  # NaN too
            raise RuntimeError(
                f"uniform_: {name} is out of bounds for {dtype.name} ({name}={value}); "
                f"the bounds must be finite values in [{-top}, {top}]"
            )
    if a > b:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={a} > to={b}"
        )
    raise RuntimeError(
        f"uniform_ expects to-from <= the largest {dtype.name}, but found to={b} and "
        f"from={a}; narrow the range"
    )


def memory_order(t: Tensor) -> list[int] | None:
    """The dimensions of ``t`` from the slowest to the fastest in its memory where that is
    not their logical order (a transposed or permuted view), else None."""
    if t._view_of is None or t.is_contiguous():
        return None
    strides = t.stride()
    order = sorted(range(t.ndim), key=lambda d: -abs(strides[d]))
    return None if order == list(range(t.ndim)) else order


def in_memory_order(t: Tensor, sample: Tensor, order: list[int] | None) -> Tensor:
    """``sample``, drawn for ``t``'s dimensions in ``memory_order(t)``, in ``t``'s order."""
    if order is None:
        return sample
    return mv.permute(sample, sorted(range(t.ndim), key=order.__getitem__))


def _in_storage_order(self: Tensor, draw: Callable[..., Tensor], *args: Any) -> Tensor:
    """``draw(shape, *args)`` laid out as PyTorch fills ``self``: in the order of its
    memory, so that a transposed or permuted view gets the draws its base would get."""
    order = None if self._view_of is None else memory_order(self)
    if order is None:
        return draw(self.shape, *args)
    return in_memory_order(self, draw(tuple(self.shape[d] for d in order), *args), order)


def uniform_(
    self: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Generator | None = None
) -> Tensor:
    """Fill with samples from U(a, b), in the order of ``self``'s memory."""
    top = _LARGEST.get(self.dtype)  # None: an integer dtype, which raises later as in PyTorch
    if top is not None and not (-top <= a <= b <= top and b - a <= top):
        _refuse_uniform_bounds(self.dtype, a, b, top)
    self._check_inplace()
    sample = _in_storage_order(self, cr.uniform, a, b, self, generator)
    if self._requires_grad:  # (in a graph: see the module)
        sample = _overwritten(self, sample, "UniformBackward0")
    return self._assign(sample, "uniform_")


def normal_(
    self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None
) -> Tensor:
    """Fill with samples from N(mean, std²), in the order of ``self``'s memory."""
    if not std >= 0:  # NaN too
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    self._check_inplace()
    sample = _in_storage_order(self, cr.normal, mean, std, self, generator)
    if self._requires_grad:  # (in a graph: see the module)
        sample = _overwritten(self, sample, "NormalBackward0")
    return self._assign(sample, "normal_")


def _continuous(self: Tensor, fn: str, law: str) -> None:
    if not self.dtype.is_floating_point:
        raise RuntimeError(
            f"{fn}: the {law} distribution is continuous; the tensor must have a "
            f"floating-point dtype, not {self.dtype.name}"
        )


def exponential_(self: Tensor, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    """Fill with samples from the exponential distribution of rate ``lambd``."""
    _continuous(self, "exponential_", "exponential")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    self._check_inplace()
    u = _in_storage_order(self, cr.uniform, 0.0, 1.0, self, generator)
    sample = ew.div(ew.neg(ew.log1p(ew.neg(u))), lambd)
    if self._requires_grad:  # (in a graph: see the module)
        sample = _overwritten(self, sample, "ExponentialBackward0")
    return self._assign(sample, "exponential_")


def random_(
    self: Tensor, from_: Any = _UNSET, to: Any = _UNSET, *, generator: Generator | None = None
) -> Tensor:
    """Fill with integers drawn uniformly from [from, to): ``random_(to)``, ``random_(from,
    to)``, or ``random_()`` and ``random_(from, None)`` up to the dtype's bound (see the
    module)."""
    if to is _UNSET:  # random_() or random_(to): PyTorch's overloads 2 and 1
        (low, high), form = ((0, None), 2) if from_ is _UNSET else ((0, from_), 1)
    else:
        (low, high), form = ((0 if from_ is _UNSET else from_), to), 0
    dtype = self.dtype
    bounds = (0, 1) if dtype is dtypes.bool_ else int_range(dtype) if dtype.kind in "iu" else None
    if high is None:
        high = 2 ** _DIGITS[dtype] + 1 if bounds is None else min(bounds[1] + 1, 2**63 - 1)
    if not low < high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    if bounds is not None and not (bounds[0] <= low and high - 1 <= bounds[1]):
        name = "from" if low < bounds[0] else "to - 1"
        raise RuntimeError(
            f"random_: {name} is out of bounds for {dtype.name}: the range [{low}, {high - 1}] "
            f"does not fit in [{bounds[0]}, {bounds[1]}]"
        )
    self._check_inplace()
    sample = _in_storage_order(
        self,
        lambda shape: cr.randint(low, high, shape, generator=generator, dtype=dtype, device=self),
    )
    if self._requires_grad:  # (in a graph: see the module)
        sample = _overwritten(self, sample, f"RandomBackward{form}")
    return self._assign(sample, "random_")


def geometric_(self: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fill with the number of Bernoulli(``p``) trials up to the first success (1, 2, ...)."""
    if self.dtype is dtypes.bool_:
        raise NotImplementedError("geometric_: not implemented for bool tensors")
    p = float(p)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    self._check_inplace()
    u = _in_storage_order(self, _unit_draws(self, generator))
    # 1 - u lies in (0, 1]: the trial count is at least 1.
    trials = ew.add(ew.floor(ew.div(ew.log1p(ew.neg(u)), math.log1p(-p))), 1)
    sample = ew.cast(trials, self.dtype)
    if self._requires_grad:  # (in a graph: see the module)
        sample = _overwritten(self, sample, "GeometricBackward0")
    return self._assign(sample, "geometric_")


def cauchy_(
    self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Generator | None = None
) -> Tensor:
    """Fill with samples from the Cauchy distribution of this ``median`` and scale ``sigma``."""
    _continuous(self, "cauchy_", "Cauchy")
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    self._check_inplace()
    u = _in_storage_order(self, cr.uniform, 0.0, 1.0, self, generator)
    sample = ew.add(ew.mul(ew.tan(ew.mul(ew.sub(u, 0.5), math.pi)), sigma), median)
    if self._requires_grad:  # (in a graph: see the module)
        sample = _overwritten(self, sample, "CauchyBackward0")
    return self._assign(sample, "cauchy_")


def log_normal_(
    self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Generator | None = None
) -> Tensor:
    """Fill with ``exp`` of samples from N(mean, std²)."""
    if not self.dtype.is_floating_point:
        raise NotImplementedError(
            f"log_normal_: not implemented for {self.dtype.name}; use a floating-point tensor"
        )
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    self._check_inplace()
    normal = _in_storage_order(self, cr.normal, mean, std, self, generator)
    sample = ew.exp(normal)
    if self._requires_grad:  # (in a graph: see the module)
        sample = _overwritten(self, sample, "LogNormalBackward0")
    return self._assign(sample, "log_normal_")
