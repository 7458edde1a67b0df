"""The kit is green against the project's own backends: every check passes or is skipped
for a dtype the device lacks, with no declared gap, and the run says so.

The default suite runs the whole kit on NumPy, the reference backend; on torch:cpu and on
cuPyNumeric (about 0.4 ms an op) only with ``TW_KIT_FULL=1``; CI's scripts/check-kits.sh runs
the whole kit on both right after the suite (tests/conformance/conftest.py leaves those two
cases out of the default run, reported as deselected): even a part of the kit there cost
the suite more than a minute of a worker, and tests/primitives checks every primitive on every
backend in the suite itself.
"""

from __future__ import annotations


def test_kit_passes_on_built_in_backends(plain, built_in, tmp_path):
    run = plain.kit(built_in, tmp_path)
    assert run.returncode == 0, run.output[-5000:]
    assert not run.failures
    assert set(run.outcomes.values()) <= {"passed", "skipped"}
    assert f"{built_in} is conformant" in run.verdict(), run.verdict()
    # every group of checks ran
    groups = {check.split("/")[0] for check, outcome in run.outcomes.items() if outcome == "passed"}
    assert groups >= {"packaging", "primitive", "core", "host", "autograd", "composite", "layer"}
