"""The kit is green against the project's own backends: every check passes or is skipped
for a dtype the device lacks, with no declared gap, and the run says so.

The default suite leaves every case out (tests/conformance/conftest.py reports them as
deselected); they run with ``TW_KIT_FULL=1``, as CI's scripts/check-kits.sh runs them right
after the suite: the whole kit costs a worker 20 s on NumPy and more than a minute on torch:cpu
and on cuPyNumeric (about 0.4 ms an op), CI's scripts/check-wheels.sh runs it on NumPy from
the installed wheels too, and tests/primitives checks every primitive on every backend in the
suite itself.
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
