"""Declared gaps that are globs cover only the checks they match that fail; an exact id or a
glob that matches no failing check fails the run, saying which entry to remove."""

from __future__ import annotations

from tensorweaver.conformance import gaps

SIGNED = [f"primitive/remainder/int{bits}" for bits in (8, 16, 32, 64)]


def test_a_glob_covers_the_failing_variants_and_lets_the_rest_pass(broken, tmp_path):
    run = broken.kit("modgap", tmp_path, "-k", "primitive/remainder")
    assert run.returncode == 0, run.output[-5000:]
    xfailed = sorted(c for c, outcome in run.outcomes.items() if outcome == "xfailed")
    assert xfailed == sorted(SIGNED)
    # the variants the glob matches that pass are passes, not XPASS(strict) failures
    for variant in ("uint8", "float32", "float64", "transposed", "defined"):
        assert run.outcomes[f"primitive/remainder/{variant}"] == "passed"
    assert "XPASS(strict)" not in run.output
    assert "modgap conforms except for 4 declared gap(s)" in run.verdict()


def test_a_passing_exact_gap_and_a_stale_glob_fail_the_run(broken, tmp_path):
    run = broken.kit("stalegap", tmp_path, "-k", "primitive/remainder")
    assert run.returncode != 0
    assert sorted(run.failures) == ["primitive/remainder/uint8"]
    assert "remove it from conformance_gaps" in run.failures["primitive/remainder/uint8"]
    verdict = run.verdict()
    assert "stalegap is NOT conformant: 1 check(s) failed: primitive/remainder/uint8" in verdict
    assert "none of whose checks fails: 'primitive/remainder/float*'" in verdict


def test_a_glob_is_judged_only_on_checks_that_ran():
    declared = {"primitive/remainder/*": "C's", "layer/lstm": "exact"}
    collected = ["primitive/remainder/int8", "primitive/remainder/float32", "layer/lstm"]
    assert gaps.is_glob("primitive/remainder/*") and not gaps.is_glob("layer/lstm")
    assert gaps.pattern("primitive/remainder/int8", declared) == "primitive/remainder/*"
    every = collected
    assert gaps.stale(declared, collected, every, ["primitive/remainder/int8"]) == []
    assert gaps.stale(declared, collected, every, ["layer/lstm"]) == ["primitive/remainder/*"]
    # deselected (-k): a glob whose failing check did not run is not called stale
    ran = ["primitive/remainder/float32", "layer/lstm"]
    assert gaps.stale(declared, collected, ran, []) == []
