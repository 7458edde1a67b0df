"""``tw check`` and ``tw.check()``: one line per case, the verdict last, exit status 1 on a
failure that the line names; a small case set on cuPyNumeric."""

from __future__ import annotations

import os
import sys

import pytest
from kit_in_ci import IN_CI_ONLY
from tensorweaver.check.runner import select

#: The cases the suite's ``tw check`` run on NumPy takes: a group of each kind (the whole kit
#: runs on NumPy in test_kit_built_in.py through the same cases); every case with
#: ``TW_KIT_FULL=1``, as CI's scripts/check-kits.sh runs it.
ONLY = (
    () if os.environ.get("TW_KIT_FULL")
    else ("primitive/add", "core/indexing", "autograd", "composite/softmax", "layer/linear")
)  # fmt: skip


def test_tw_check_passes_on_numpy(plain):
    done = plain.tw("check", "--backend", "numpy", *(a for p in ONLY for a in ("--only", p)))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(select(ONLY)) + 1 > 30  # one per case, then the verdict
    assert all(line.startswith("numpy:cpu:0  ") for line in lines[:-1])
    assert {line.split()[-1] for line in lines[:-1] if "skip" not in line} == {"ok"}
    assert lines[-1].startswith("OK: largest difference ")
    assert " on numpy:cpu:0 (" in lines[-1]


def test_tw_check_fails_and_names_the_primitive(broken):
    done = broken.tw(
        "check", "--backend", "dropdtype", "--only", "primitive/exp", "--only", "layer/vae"
    )
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    failed = [line for line in lines if "  FAIL  " in line]
    assert failed[0].split()[1] == "primitive/exp/float64"
    assert "exp: returned float32 for float64" in failed[0]
    assert (
        lines[-1] == f"{len(failed)} of {len(select(['primitive/exp', 'layer/vae']))} cases failed"
    )
    assert any(
        line.startswith("FAILED: dropdtype:cpu:0 primitive/exp/float64: exp:") for line in lines
    )


def test_tw_check_on_cunumeric_small_set(plain):
    pytest.importorskip("tensorweaver_cunumeric")
    done = plain.tw(
        "check", "--backend", "cunumeric", "--only", "primitive/add/float32", "--only",
        "primitive/matmul/float64", "--only", "composite/softmax/float64", "--only", "layer/linear",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    cases = [line for line in lines if line.startswith("cunumeric:")]
    assert [line.split()[1] for line in cases] == [
        "primitive/add/float32", "primitive/matmul/float64", "composite/softmax/float64",
        "layer/linear",
    ]  # fmt: skip
    assert lines[-1].startswith("OK: largest difference ")


def test_tw_check_reports_a_run_where_every_case_skipped(plain):
    pytest.importorskip("tensorweaver_cunumeric")  # it has no optional scatter_reduce
    done = plain.tw("check", "--backend", "cunumeric", "--only", "optional/scatter_reduce")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert all("  skip  " in line for line in lines[:-1])
    assert lines[-1] == f"OK: nothing failed; all {len(lines) - 1} cases were skipped"


def test_tw_check_rejects_an_unknown_backend(plain):
    done = plain.tw("check", "--backend", "nosuch")
    assert done.returncode == 1
    assert "unknown backend 'nosuch'" in done.stdout


@IN_CI_ONLY
def test_python_api_returns_the_report(plain):
    code = (
        "import tensorweaver as tw\n"
        "report = tw.check('torch:cpu', only=['layer/linear', 'primitive/cast/int8'])\n"
        "print(bool(report), [r.case for r in report.results], report.largest.case)\n"
        "everything = tw.check(only=['primitive/add/float32'])\n"
        "print(sorted(r.device for r in everything.results))\n"
    )
    done = plain.run(sys.executable, "-c", code)
    assert done.returncode == 0, done.stderr[-3000:]
    first, second = done.stdout.splitlines()[-2:]
    assert first.startswith("True ['primitive/cast/int8', 'layer/linear'] ")
    # no backend: the best device of every installed backend
    assert "'numpy:cpu:0'" in second and "'torch:cpu:0'" in second
