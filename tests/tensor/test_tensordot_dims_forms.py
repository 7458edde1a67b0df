"""The forms of ``tensordot``'s ``dims`` against torch 2.13: the same ones accepted (an int,
a tensor of one element, two int lists as a tuple or list, a 2 x k tensor; NumPy ints and
one-element integer tensors inside the lists), and the same error classes for the rest. Ours
took a pair of ints (``dims=(0, 1)``, ``[0, 1]``) and pairs of tensors, which torch refuses
with a TypeError, and raised TypeError/IndexError where torch raises RuntimeError (a float or
NumPy int as dims, an int above either operand's dimensions)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import tensorweaver as tw
import torch

#: dims, written once for both libraries (``m`` is tensorweaver or torch).
FORMS: dict[str, Callable[[Any], Any]] = {
    "int": lambda m: 1,
    "int 0": lambda m: 0,
    "bool": lambda m: True,
    "int above ndim": lambda m: 3,
    "negative int": lambda m: -1,
    "float": lambda m: 1.0,
    "numpy int": lambda m: np.int64(1),
    "None": lambda m: None,
    "str": lambda m: "ab",
    "list of lists": lambda m: [[0], [1]],
    "tuple of lists": lambda m: ([0], [1]),
    "tuple of tuples": lambda m: ((0,), (1,)),
    "negative dims": lambda m: [[-2], [-1]],
    "empty lists": lambda m: [[], []],
    "list of ints": lambda m: [0, 1],
    "tuple of ints": lambda m: (0, 1),
    "tuple of tensors": lambda m: (m.tensor([0]), m.tensor([1])),
    "one list": lambda m: [0],
    "three lists": lambda m: [[0], [1], [0]],
    "range": lambda m: [range(1), range(1, 2)],
    "numpy int elements": lambda m: [[np.int64(0)], [1]],
    "0-d tensor elements": lambda m: [[m.tensor(0)], [1]],
    "bool elements": lambda m: [[True], [1]],
    "float elements": lambda m: [[0.0], [1]],
    "lengths differ": lambda m: [[0], [0, 1]],
    "repeated dim": lambda m: [[0, 0], [1, 1]],
    "dim out of range": lambda m: [[5], [0]],
    "sizes differ": lambda m: [[1], [1]],
    "tensor 0-d": lambda m: m.tensor(1),
    "tensor 0-d float": lambda m: m.tensor(1.5),
    "tensor 0-d negative": lambda m: m.tensor(-1),
    "tensor 0-d above ndim": lambda m: m.tensor(5),
    "tensor 2 x 1": lambda m: m.tensor([[0], [1]]),
    "tensor of 2": lambda m: m.tensor([0, 1]),
    "tensor 3 x 1": lambda m: m.tensor([[0], [1], [0]]),
    "tensor 2 x 1 float": lambda m: m.tensor([[0.0], [1.0]]),
    "tensor empty": lambda m: m.tensor([]),
}


def outcome(m: Any, form: str) -> Any:
    a = m.tensor(np.arange(6.0).reshape(2, 3))
    b = m.tensor(np.arange(6.0).reshape(3, 2))
    try:
        out = m.tensordot(a, b, dims=FORMS[form](m))
    except Exception as e:  # the class is the contract; messages are ours
        return type(e).__name__
    return list(out.shape), np.asarray(out.tolist())


@pytest.mark.parametrize("form", list(FORMS))
def test_dims_forms_like_torch(backend: str, form: str) -> None:
    ours, theirs = outcome(tw, form), outcome(torch, form)
    if isinstance(theirs, str):
        assert ours == theirs
    else:
        assert not isinstance(ours, str), ours
        assert ours[0] == theirs[0]
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
