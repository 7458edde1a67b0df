"""The kit is green against the project's own backends: every check passes or is skipped
for a dtype the device lacks, with no declared gap, and the run says so."""

from __future__ import annotations


def test_kit_passes_on_built_in_backends(plain, built_in, tmp_path):
    run = plain.kit(built_in, tmp_path)
    assert run.returncode == 0, run.output[-5000:]
    assert not run.failures
    assert set(run.outcomes.values()) <= {"passed", "skipped"}
    assert f"{built_in} is conformant" in run.verdict()
    # every group of checks ran
    groups = {check.split("/")[0] for check, outcome in run.outcomes.items() if outcome == "passed"}
    assert groups >= {"packaging", "primitive", "core", "host", "autograd", "composite", "layer"}
