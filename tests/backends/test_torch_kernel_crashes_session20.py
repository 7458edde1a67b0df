"""Inputs on which torch 2.13's own CPU kernels kill the process, through the torch:cpu
backend: each call ends, with torch's answer where torch's public function gives one and a
clear error where its kernel would crash.

* ``torch.linalg.eigvals`` of a matrix holding a NaN or an inf: a SIGSEGV (or heap
  corruption, or a wrong answer for the other matrices of a batch) in torch's
  eigenvalues-only CPU kernel; ``torch.linalg.eig`` refuses the same input with a
  RuntimeError.
* ``torch._scaled_dot_product_flash_attention_for_cpu`` with zero heads: a SIGFPE, and
  ``torch._fused_sdp_choice`` picks that kernel there;
  ``F.scaled_dot_product_attention`` returns an empty result.

The candidates run in one child process, so that a regression fails these tests instead of
killing pytest.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as torch_F  # noqa: N812
from kernel_crash_child import outcome, run_cases

tw = pytest.importorskip("tensorweaver")

#: name -> code run in the child under ``tw.device(backend)``; ``result`` is reported back.
CASES = {
    "eigvals_all_nan": "result = tw.linalg.eigvals(tw.full((4, 4), nan, dtype=tw.float64))",
    "eigvals_all_inf": "result = tw.linalg.eigvals(tw.full((4, 4), inf, dtype=tw.float64))",
    "eigvals_one_nan_float32": (
        "a = tw.eye(5) + 0.5\na[1, 2] = nan\nresult = tw.linalg.eigvals(a)"
    ),
    "eigvals_complex_nan": (
        "result = tw.linalg.eigvals(tw.full((3, 3), nan, dtype=tw.complex128))"
    ),
    "eigvals_batch_with_one_nan": (
        "a = tw.eye(4, dtype=tw.float64).repeat(3, 1, 1)\na[1, 0, 0] = nan\n"
        "result = tw.linalg.eigvals(a)"
    ),
    "eigvals_nan_with_grad": (
        "a = tw.full((4, 4), nan, dtype=tw.float64, requires_grad=True)\n"
        "result = tw.linalg.eigvals(a)"
    ),
    "sdpa_zero_heads": (
        "q = tw.ones(1, 0, 3, 8)\nresult = tuple(F.scaled_dot_product_attention(q, q, q).shape)"
    ),
    "sdpa_zero_heads_no_grad_masked": (
        "q = tw.ones(2, 0, 3, 8)\nwith tw.no_grad():\n"
        "    out = F.scaled_dot_product_attention(q, q, q, attn_mask=tw.zeros(3, 3))\n"
        "    result = tuple(out.shape)"
    ),
    "sdpa_zero_heads_backward": (
        "q = tw.ones(1, 0, 3, 8, requires_grad=True)\n"
        "F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()\n"
        "result = tuple(q.grad.shape)"
    ),
}


@pytest.fixture(scope="module")
def outcomes() -> dict:
    """Each case's outcome on torch:cpu, then on numpy, from one child process."""
    return run_cases(CASES)


@pytest.fixture(scope="module")
def torch_cpu(outcomes) -> dict:
    return {k.removeprefix("torch:cpu/"): v for k, v in outcomes.items()}


@pytest.fixture(scope="module")
def numpy_backend(outcomes) -> dict:
    return {k.removeprefix("numpy/"): v for k, v in outcomes.items()}


def test_the_child_ends_cleanly(outcomes) -> None:
    assert outcomes["_returncode"] == 0, outcomes["_stderr"]


EIGVALS = [name for name in CASES if name.startswith("eigvals")]


@pytest.mark.parametrize("name", EIGVALS)
def test_eigvals_of_a_non_finite_matrix_is_refused_as_eig_refuses_it(torch_cpu, name) -> None:
    with pytest.raises(RuntimeError) as theirs:  # torch's nearest call that does not crash
        torch.linalg.eig(torch.full((4, 4), float("nan"), dtype=torch.float64))
    got = outcome(torch_cpu, name)
    assert not got["ok"], got
    assert type(theirs.value).__name__ in got["mro"] and "RuntimeError" in got["mro"], got
    # (with requires_grad, torch 2.13 computes eigvals through eig and names it)
    called = "linalg.eig" if name == "eigvals_nan_with_grad" else "eigvals"
    assert called in got["message"] and "infs or NaNs" in got["message"], got


def test_eigvals_of_finite_matrices_keeps_torchs_values() -> None:
    rng = np.random.default_rng(20)
    a = rng.standard_normal((3, 5, 5))
    with tw.device("torch:cpu"):
        ours = tw.linalg.eigvals(tw.tensor(a)).numpy()
    np.testing.assert_allclose(ours, torch.linalg.eigvals(torch.from_numpy(a)).numpy())


@pytest.mark.parametrize("name", [name for name in CASES if name.startswith("sdpa")])
def test_attention_with_zero_heads_is_empty_as_torchs(torch_cpu, name) -> None:
    q = torch.ones(1 if "masked" not in name else 2, 0, 3, 8)
    expected = tuple(torch_F.scaled_dot_product_attention(q, q, q).shape)
    got = outcome(torch_cpu, name)
    assert got == {"ok": True, "result": repr(expected)}, got


def test_numpy_backend_refuses_non_finite_eigvals_as_torch(numpy_backend) -> None:
    got = outcome(numpy_backend, "eigvals_all_nan")
    assert not got["ok"] and "RuntimeError" in got["mro"], got


def test_numpy_backend_survives_every_candidate(numpy_backend) -> None:
    for name in CASES:
        if name.startswith("sdpa"):
            assert outcome(numpy_backend, name)["ok"], name
