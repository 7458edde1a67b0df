"""Session 18's review of session 17's in-place methods: scatter's reduce= forms have no
derivative in PyTorch (tw differentiated them, and the in-place one raised a spurious
version error)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import tensorweaver as tw
import torch


@pytest.mark.parametrize("reduce", ["add", "multiply"])
@pytest.mark.parametrize("in_place", [True, False])
@pytest.mark.parametrize("needs_grad", ["src", "self"])
def test_scatter_reduce_form_has_no_derivative(backend, reduce, in_place, needs_grad) -> None:
    outcomes = []
    for lib in (torch, tw):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=needs_grad == "self")
        src = lib.tensor([4.0, 5.0], requires_grad=needs_grad == "src")
        index = lib.tensor([0, 2])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's deprecation of reduce= with a src
            if in_place:
                out = x.clone().scatter_(0, index, src, reduce=reduce)
            else:
                out = x.scatter(0, index, src, reduce=reduce)
        values = out.tolist()
        try:
            out.sum().backward()
            outcomes.append((values, "no error"))
        except RuntimeError as error:
            outcomes.append((values, "not implemented" in str(error)))
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize(
    "reduction",
    ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "max", "logsumexp", "all", "any"],
)
@pytest.mark.parametrize("keepdim", [1, None, np.bool_(True)], ids=repr)
def test_keepdim_must_be_a_bool(backend, reduction, keepdim) -> None:
    # before: keepdim=1 (or 0, None, a NumPy bool) was taken as a truth value; torch raises
    outcomes = []
    for lib in (torch, tw):
        try:
            getattr(lib.ones(2, 3), reduction)(1, keepdim=keepdim)
            outcomes.append("ran")
        except TypeError:
            outcomes.append("TypeError")
    assert outcomes[0] == outcomes[1]


def test_argsort_out_refuses_an_input_requiring_grad(backend) -> None:
    # before: argsort(stable=True, out=) of an input requiring grad was written (torch: its
    # sort's out= refusal)
    for lib in (torch, tw):
        x = lib.tensor([3.0, 1.0, 2.0], requires_grad=True)
        out = lib.empty(3, dtype=lib.long)
        with pytest.raises(RuntimeError, match="out=... arguments don't support"):
            lib.argsort(x, stable=True, out=out)
        with lib.no_grad():
            assert lib.argsort(x, stable=True, out=out).tolist() == [1, 2, 0]
