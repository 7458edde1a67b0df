"""``out=`` of every tw function whose torch twin takes one, against torch, on PyTorch's op
database samples (see ``out_sweep``). The suite runs the first sample (float64, or the op's
first dtype) of a seeded share of the ops, one in ``SHARE`` by a hash of the op's id;
``TW_OUT_SWEEP_FULL=1`` runs every op, ``TW_OUT_SWEEP_SAMPLES=n`` n samples of each."""

from __future__ import annotations

import inspect
import os
import zlib

import out_sweep as sweep
import pytest
import tensorweaver as tw
from opinfo.opinfo_harness import op_id, run_error

SAMPLES = int(os.environ.get("TW_OUT_SWEEP_SAMPLES", "1"))
FULL = bool(os.environ.get("TW_OUT_SWEEP_FULL"))
SHARE = 12

#: Differences outside this module's files, each the honest record of a defect to fix there.
KNOWN = {
    "clamp": "ops/elementwise.py: clamp's out= must take any dtype the result casts to",
    "clamp_max": "ops/numeric.py: clamp_max's out= must take any dtype the result casts to",
    "clamp_min": "ops/numeric.py: clamp_min's out= must take any dtype the result casts to",
    "arange": "ops/creation.py: arange resizes its out= without the warning",
    "linalg.cross": "linalg/: linalg.cross must refuse an out= that is an input",
    "linalg.lstsq": "linalg/: linalg.lstsq has no out=",
    "linalg.matrix_power": "linalg/: linalg.matrix_power's out= must take a cast dtype",
    "split_with_sizes_copy": "ops/apply.py written_out: torch lets its out list require grad",
    "special.bessel_y1": "torch's float64 kernel is off by ~7e-6 relative near zeros (see "
    "tests/opinfo/known_differences.py WHY): out= holds our values, not torch's",
    "normal.number_mean": "normal(float mean, Tensor std) resizes out quietly and takes only "
    "its exact dtype, other overloads cast and warn: out_arguments checks all alike",
}


def _known(op) -> str | None:
    if op_id(op) in KNOWN:
        return KNOWN[op_id(op)]
    name = op.name.removeprefix("nn.functional.")
    if (
        name != op.name
        and "out" not in inspect.signature(getattr(tw.nn.functional, name)).parameters
    ):
        return "nn/: tw.nn.functional has no out= where torch's has"
    return None


def _params():
    for op in sweep.out_ops():
        if not FULL and zlib.crc32(op_id(op).encode()) % SHARE:
            continue
        why = _known(op)
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        yield pytest.param(op, id=op_id(op), marks=marks)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("op", list(_params()))
def test_out_like_torch(op) -> None:
    problems = sweep.check_op(op, SAMPLES)
    problems += [
        f"{op_id(op)} error input: {outcome}"
        for error in sweep.error_inputs_with_out(op)
        if (outcome := run_error(op, error)) is not None and outcome.kind != "skip"
    ]
    assert not problems, "\n".join(problems)
