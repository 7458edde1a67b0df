"""Around the fixes of the defects tests/ports/test_ports_session28.py recorded: a Python
number searched for in a sequence of each dtype, float32 running sums and products in
double, what a relaxed distribution keeps of a number temperature, and ``Tensor(t)`` as an
alias of ``t``; compared with torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from snippet_outcomes import grad_fn_name, same_each

#: Python numbers (and NumPy scalars, read as Python numbers) against sequences of several
#: dtypes: the number is wrapped at double precision (int64 for an int), then promoted
#: weakly with the sequence, as torch's searchsorted does.
NUMBER_SEARCHES = {
    "float-in-float64": lambda m: (
        m.searchsorted(m.tensor([0.0, 0.2, 0.2, 0.7], dtype=m.float64), 0.2, out_int32=True),
        m.searchsorted(m.tensor([0.0, 0.2, 0.2, 0.7], dtype=m.float64), 0.2, right=True),
    ),
    "float-in-float32": lambda m: (
        m.searchsorted(m.tensor([0.0, 0.2, 0.2, 0.7]), 0.2),
        m.searchsorted(m.tensor([0.0, 0.2, 0.2, 0.7]), 0.2, right=True),
    ),
    "float-in-float16": lambda m: m.searchsorted(
        m.tensor([0.0, 0.2, 0.5], dtype=m.float16), 0.2, right=True
    ),
    # int64 with a float: both compared in the default float dtype (2**24 + 1 rounds down)
    "float-in-int64": lambda m: (
        m.searchsorted(m.tensor([16777216, 16777217, 16777218]), 16777217.0),
        m.searchsorted(m.tensor([0, 1, 2]), 0.99999999),
        m.searchsorted(m.tensor([0, 1, 2]), 2.5),
    ),
    "int-in-int64": lambda m: m.searchsorted(m.tensor([2**53, 2**53 + 1]), 2**53 + 1),
    "int-in-int8-wraps": lambda m: m.searchsorted(m.tensor([1, 2, 44, 50], dtype=m.int8), 300),
    "numpy-scalars": lambda m: (
        m.searchsorted(m.tensor([0.0, 0.2, 0.7], dtype=m.float64), np.float64(0.2)),
        m.searchsorted(m.tensor([0.0, 0.2, 0.7], dtype=m.float64), np.float32(0.2)),
    ),
    "bucketize-right": lambda m: m.bucketize(
        0.2, m.tensor([0.0, 0.2, 0.4], dtype=m.float64), right=True
    ),
}


def test_python_numbers_searched_as_torch(backend: str) -> None:
    same_each(NUMBER_SEARCHES, backend, decimals=None)


def _float32_grid(m: Any) -> Any:
    """A float32 (5, 40) grid of seeded values near 1 (no product underflows)."""
    values = 1 + np.random.default_rng(28).normal(size=(5, 40)) / 8
    return m.tensor(values.astype(np.float32))


#: Running sums and products of float32 (accumulated in double by torch's CPU kernels, each
#: result rounded once), along each axis and of a transposed tensor; a product that leaves
#: float32's range and comes back (finite again in double).
FLOAT32_SCANS = {
    "cumsum-axes": lambda m: (m.cumsum(_float32_grid(m), 0), m.cumsum(_float32_grid(m), 1)),
    "cumsum-transposed": lambda m: m.cumsum(_float32_grid(m).t(), 1),
    "cumprod-axes": lambda m: (m.cumprod(_float32_grid(m), 0), m.cumprod(_float32_grid(m), 1)),
    "cumprod-transposed": lambda m: m.cumprod(_float32_grid(m).t(), 0),
    "cumprod-past-float32": lambda m: m.cumprod(m.tensor([1e30, 1e30, 1e-30, 0.5, 0.0]), 0),
    "cumprod-grad": lambda m: _cumprod_grad(m),
}


def _cumprod_grad(m: Any) -> Any:
    """The gradient of a float32 running product: float32, as torch's (its values are
    rounded per backend: compared in single precision)."""
    x = _float32_grid(m).requires_grad_()
    (grad,) = m.autograd.grad(m.cumprod(x, 1).sum(), x)
    return grad.dtype, tuple(grad.shape), np.round(grad.double().numpy(), 3).tolist()


def test_float32_running_sums_and_products_as_torch(backend: str) -> None:
    same_each(FLOAT32_SCANS, backend, decimals=None)


def _relaxed(m: Any) -> Any:
    """What relaxed distributions keep of a number temperature and of a tensor one, through
    ``expand``; and log_prob's refusal of a number temperature (torch's, too)."""
    D = m.distributions
    probs = m.tensor([0.3, 0.7], dtype=m.float64)
    number = D.RelaxedBernoulli(0.2, probs=probs)
    given = m.tensor(0.5, dtype=m.float64)
    tensor = D.RelaxedOneHotCategorical(given, probs=probs)
    return (
        number.temperature,
        number.expand((3, 2)).temperature,
        tensor.temperature is given,
        tensor.expand((3,)).temperature is given,
        tensor.log_prob(m.tensor([0.4, 0.6], dtype=m.float64)),
    )


def _log_prob_at_a_number(name: str) -> Any:
    """``log_prob`` of the relaxed distribution ``name`` at a number temperature: torch's
    calls the temperature's tensor methods, so refuses it (AttributeError, TypeError)."""

    def program(m: Any) -> Any:
        d = getattr(m.distributions, name)(0.2, probs=m.tensor([0.3, 0.7], dtype=m.float64))
        return d.log_prob(m.tensor([0.4, 0.6], dtype=m.float64))

    return program


RELAXED = {
    "kept": _relaxed,
    **{
        name: _log_prob_at_a_number(name)
        for name in ("RelaxedBernoulli", "RelaxedOneHotCategorical")
    },
}


def test_relaxed_temperatures_as_torch(backend: str) -> None:
    same_each(RELAXED, backend, decimals=None)


def _legacy_alias_in_the_graph(m: Any) -> Any:
    """``Tensor(t)`` of a tensor that requires grad, and of a transposed one: an alias in
    t's graph (its node's name, the gradient through it) with t's layout."""
    g = m.tensor([1.5, 2.0], dtype=m.float64, requires_grad=True)
    alias = m.Tensor(g)
    (grad,) = m.autograd.grad((alias * alias).sum(), g)
    transposed = m.Tensor(m.ones(2, 3).t())
    return grad_fn_name(alias), alias.is_leaf, grad, transposed.stride(), transposed.shape


def test_legacy_constructor_alias_as_torch(backend: str) -> None:
    same_each({"alias": _legacy_alias_in_the_graph}, backend, decimals=None)
