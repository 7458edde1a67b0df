"""Every op of PyTorch's own op database against tensorweaver (see ``opinfo_harness``).

The suite's share: every fourth op of the database (sorted by name), its function variant
on NumPy in float64, its first samples, with gradients where torch differentiates it;
``TW_OPINFO_OPS=rest`` runs the other three quarters so (CI's scripts/test-remainder.sh),
``all`` every op. ``TW_OPINFO_FULL=1`` runs every variant (function,
method, in place) in float64, float32, int64, bool and complex128 on NumPy and torch:cpu,
with every sample and the database's error inputs. A difference the project knows of is a
strict xfail named in ``known_differences.KNOWN`` (its reason is the difference found):
fixing it makes the test fail until the entry goes.
"""

from __future__ import annotations

import os

import pytest
import torch
from opinfo import opinfo_harness as harness
from opinfo.known_differences import KNOWN, WHY
from tw_backends import entered

FULL = bool(os.environ.get("TW_OPINFO_FULL"))
BACKENDS = ("numpy", "torch:cpu") if FULL else ("numpy",)
DTYPES = (
    (torch.float64, torch.float32, torch.int64, torch.bool, torch.complex128)
    if FULL
    else (torch.float64,)
)
VARIANTS = ("function", "method", "inplace") if FULL else ("function",)
SAMPLES = None if FULL else 3
#: The ops this run takes (see the module's docstring).
OPS = os.environ.get("TW_OPINFO_OPS", "all" if FULL else "share")
if OPS not in ("share", "rest", "all"):
    raise ValueError(f"TW_OPINFO_OPS={OPS!r}: use share (the default), rest or all")
NAMES = [
    name
    for i, name in enumerate(sorted(harness.ops_by_id()))
    if OPS == "all" or (i % 4 == 0) == (OPS == "share")
]


def differences(op, backend: str) -> list[str]:
    """Every (variant, dtype) of ``op`` on ``backend`` that differs from torch: its first."""
    found = []
    supported = op.supported_dtypes("cpu")
    with entered(backend):
        for dtype in DTYPES:
            if dtype not in supported:
                continue
            for variant in VARIANTS:
                if (
                    variant != "function"
                    and (op.method_variant if variant == "method" else op.inplace_variant) is None
                ):
                    continue
                grads = variant == "function" and dtype == torch.float64 and op.supports_autograd
                for index, sample in enumerate(harness.samples(op, dtype, requires_grad=grads)):
                    if SAMPLES is not None and index >= SAMPLES:
                        break
                    outcome = harness.run_sample(op, variant, sample, grads=grads)
                    if outcome is not None and outcome.kind not in ("skip", "harness"):
                        found.append(f"{variant} {str(dtype)[6:]} #{index} {outcome}")
                        break
        if FULL and op.error_inputs_func is not None:
            for error_input in op.error_inputs("cpu"):
                outcome = harness.run_error(op, error_input)
                if outcome is not None and outcome.kind not in ("skip", "harness"):
                    found.append(f"error {outcome}")
                    break
    return found


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", NAMES)
def test_op_like_torch(name: str, backend: str, request: pytest.FixtureRequest) -> None:
    if name in KNOWN:
        reason = WHY.get(name, "") + KNOWN[name]
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
    found = differences(harness.ops_by_id()[name], backend)
    assert not found, "\n".join(found)
