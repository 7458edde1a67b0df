"""A result's grad_fn label (``type(y.grad_fn).__name__``), its values and its operands'
gradients on a TensorWeaver backend, compared with PyTorch 2.13's.

A case is ``fn(library, *operands)``; both libraries get float64 leaves that require grad,
made from the same NumPy arrays, and back-propagate the result's sum weighted by the same
fixed numbers (so that each element's gradient is checked, not only their sum).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import tensorweaver as tw
import torch
from tw_backends import entered

#: The backward's weights: a result may have up to this many elements.
WEIGHTS = np.random.default_rng(8).standard_normal(256)


def labelled_run(
    m: Any, fn: Callable[..., Any], arrays: Sequence[np.ndarray], weights: np.ndarray
) -> tuple[str, Any, list]:
    """``fn``'s grad_fn label, its detached result and the operands' gradients (None where
    an operand got none) in library ``m`` (torch or tensorweaver)."""
    operands = [m.tensor(a, dtype=m.float64, requires_grad=True) for a in arrays]
    out = fn(m, *operands)
    assert all(out is not t for t in operands)  # a result of its own (.T: a view)
    label = type(out.grad_fn).__name__
    (out * m.tensor(weights[: out.numel()].reshape(tuple(out.shape)))).sum().backward()
    return label, out.detach(), [t.grad for t in operands]


def assert_label_values_and_gradients_match_torch(
    spec: str,
    fn: Callable[..., Any],
    arrays: Sequence[np.ndarray],
    *,
    weights: np.ndarray = WEIGHTS,
    rtol: float = 1e-12,
    atol: float = 1e-12,
    grad_rtol: float = 1e-10,
) -> None:
    """On device ``spec``, ``fn`` prints torch's label, gives torch's values (within ``rtol``
    and ``atol``) and torch's gradients (within ``grad_rtol`` and an ``atol`` of 1e-12), and
    leaves an operand without a gradient exactly where torch does."""
    theirs, expected, expected_grads = labelled_run(torch, fn, arrays, weights)
    with entered(spec):
        ours, out, grads = labelled_run(tw, fn, arrays, weights)
        assert ours == theirs
        np.testing.assert_allclose(np.asarray(out), expected.numpy(), rtol=rtol, atol=atol)
        for got, want in zip(grads, expected_grads):
            assert (got is None) == (want is None)
            if want is not None:
                np.testing.assert_allclose(
                    np.asarray(got), want.numpy(), rtol=grad_rtol, atol=1e-12
                )
