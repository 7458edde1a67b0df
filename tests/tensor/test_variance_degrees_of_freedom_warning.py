"""``var``/``std`` (and ``var_mean``) warn as PyTorch does when the correction leaves no
degrees of freedom (the REINFORCE normalisation ``returns.std()`` of a one-step episode),
naming the function, and still give PyTorch's nan/inf; no warning otherwise."""

from __future__ import annotations

import warnings

import pytest
import tensorweaver as tw
import torch
from tensor_reference import assert_like_torch

CASES = {
    "std of one value": lambda m: m.ones(1).std(),
    "var correction = n": lambda m: m.tensor([1.0, 2.0]).var(correction=2),
    "std along a size-1 dim": lambda m: m.ones(3, 1).std(dim=1),
    "torch.std of one value": lambda m: m.std(m.ones(1, dtype=m.float64)),
    "empty var": lambda m: m.ones(0).var(),
    "var_mean of one value": lambda m: m.var_mean(m.ones(1))[0],
    "half std of one value": lambda m: m.ones(1, dtype=m.float16).std(),
    "fractional correction below n": lambda m: m.ones(3).var(correction=2.5),
    "population std of one value": lambda m: m.ones(1).std(unbiased=False),
    "std of two values": lambda m: m.tensor([1.0, 3.0]).std(),
}


def warned(m, fn) -> tuple:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out = fn(m)
    return out, [str(w.message) for w in record if "degrees of freedom" in str(w.message)]


@pytest.mark.parametrize("case", CASES)
def test_degrees_of_freedom_warning_like_torch(backend: str, case: str) -> None:
    ours, our_warnings = warned(tw, CASES[case])
    theirs, their_warnings = warned(torch, CASES[case])
    assert_like_torch(ours, theirs)
    assert len(our_warnings) == len(their_warnings), (our_warnings, their_warnings)
    for ours_said, theirs_said in zip(our_warnings, their_warnings):
        name = theirs_said.split("(")[0]  # "std", "var", "var_mean"
        assert ours_said.startswith(name.replace("var_mean", "var")), ours_said
