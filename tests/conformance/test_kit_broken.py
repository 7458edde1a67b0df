"""The kit fails each deliberately broken backend (tests/conformance/plugins/), and its message
names the culprit: the fused kernel, the primitive and its dtype; a plugin that declares its
gaps passes with them, but is not called conformant. (The eager import: test_kit_eager.py.)

Each run selects the groups its assertions read (every primitive and packaging check, and the
composites concerned): the rest of the kit has nothing to say about these plugins and took
half of each run. Each run still takes tens of seconds of a busy core: CI's
scripts/check-kits.sh runs them (``TW_KIT_FULL=1``), the default suite does not."""

from __future__ import annotations

from kit_in_ci import IN_CI_ONLY


def _failed(run, group):
    return sorted(check for check in run.failures if check.startswith(group + "/"))


@IN_CI_ONLY
def test_wrong_fused_gradient_is_named(broken, tmp_path):
    run = broken.kit("badgrad", tmp_path, "-k", "packaging or primitive or softmax")
    assert run.returncode != 0
    assert "badgrad is NOT conformant" in run.verdict()
    for dtype in ("float32", "float64"):
        message = run.failures[f"composite/softmax/{dtype}"]
        assert "fused_softmax_backward: grad of x" in message
    # the forward is right, and nothing below the composite is wrong
    assert "fused_softmax: output" not in run.failures["composite/softmax/float64"]
    assert not _failed(run, "primitive") and not _failed(run, "packaging")
    assert run.outcomes["composite/log_softmax/float64"] == "passed"


@IN_CI_ONLY
def test_dropped_dtype_is_named(broken, tmp_path):
    run = broken.kit("dropdtype", tmp_path, "-k", "packaging or primitive")
    assert run.returncode != 0
    # The layout cases run in float64 too: each fails, by name.
    layouts = ("0-d", "broadcast", "empty", "float64", "stepped", "transposed")
    assert _failed(run, "primitive") == ["primitive/exp/" + v for v in layouts]
    assert "exp: returned float32 for float64" in run.failures["primitive/exp/float64"]
    assert run.outcomes["primitive/exp/float32"] == "passed"
    assert not _failed(run, "packaging")


@IN_CI_ONLY
def test_declared_gaps_are_expected_failures(broken, tmp_path):
    run = broken.kit("withgaps", tmp_path, "-k", "packaging or primitive")
    assert run.returncode == 0, run.output[-5000:]
    gaps = sorted(c for c, outcome in run.outcomes.items() if outcome == "xfailed")
    assert gaps == ["primitive/nonzero/0-d", "primitive/nonzero/0-d-zero"]
    assert "withgaps conforms except for 2 declared gap(s)" in run.verdict()
    assert run.outcomes["primitive/nonzero/float32"] == "passed"
    assert "is conformant" not in run.verdict()
