"""A half-done plugin: the kit reports each primitive its backend object lacks as one failing
check, which a declared gap covers, and runs every case that needs only the others; so does
``tw check``."""

from __future__ import annotations

LACKING = ("erf", "remainder")


def test_each_missing_primitive_is_one_failing_check(broken, tmp_path):
    selected = "packaging or defined or primitive/remainder or primitive/erf or primitive/add"
    run = broken.kit("partial", tmp_path, "-k", f"{selected} or layer/linear or autograd")
    assert run.returncode != 0
    for name in LACKING:
        assert run.outcomes[f"primitive/{name}/defined"] == "failed"
        assert (
            f"the backend object has no callable {name}"
            in run.failures[f"primitive/{name}/defined"]
        )
        # its own cases fail naming it, nothing else
        assert (
            f"{name}: the backend object has no {name}" in run.failures[f"primitive/{name}/float32"]
        )
    defined = [c for c in run.outcomes if c.endswith("/defined")]
    assert len(defined) > 50
    assert {c for c in defined if run.outcomes[c] == "failed"} == {
        f"primitive/{n}/defined" for n in LACKING
    }
    failed = set(run.failures)
    lacking = {c for c in failed if c.split("/")[1] in LACKING}
    # the core's cases that reach a missing primitive name it too
    through_core = failed - lacking
    assert through_core, "no case went through the core to erf"
    for check in through_core:
        assert check.startswith("autograd/"), check
        assert "erf: the backend object has no erf" in run.failures[check]
    packaging = [c for c in run.outcomes if c.startswith("packaging/")]
    assert len(packaging) >= 9 and all(run.outcomes[c] == "passed" for c in packaging)
    assert run.outcomes["primitive/add/float32"] == "passed"
    assert run.outcomes["layer/linear"] == "passed"


def test_gaps_cover_the_missing_primitives(broken, tmp_path):
    # partial's backend, declaring "primitive/remainder/*" and "primitive/erf/*"
    selected = "primitive/remainder or primitive/erf or primitive/add/float32"
    run = broken.kit("partialgaps", tmp_path, "-k", selected)
    assert run.returncode == 0, run.output[-5000:]
    gaps = {c for c, outcome in run.outcomes.items() if outcome == "xfailed"}
    # every check of the two ran into a missing primitive (bfloat16: NumPy has none, skipped)
    assert gaps == {
        c for c, outcome in run.outcomes.items() if outcome != "skipped" and "/add/" not in c
    }
    assert {f"primitive/{n}/defined" for n in LACKING} <= gaps
    assert f"partialgaps conforms except for {len(gaps)} declared gap(s)" in run.verdict()


def test_tw_check_runs_a_partial_backend(broken):
    done = broken.tw(
        "check", "--backend", "partial", "--only", "primitive/erf", "--only", "primitive/add/int8"
    )
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    results = {line.split()[1]: line for line in lines if line.startswith("partial:cpu:0 ")}
    assert "  FAIL  erf: the backend object has no callable erf" in results["primitive/erf/defined"]
    assert results["primitive/add/int8"].split()[-1] == "ok"
    erf = [line for case, line in results.items() if case.startswith("primitive/erf/")]
    failed = [line for line in erf if "  FAIL  " in line]
    assert len(failed) == len(erf) - 1  # bfloat16, which NumPy lacks, is skipped
    assert lines[-1] == f"{len(failed)} of {len(results)} cases failed"
