"""The kit is green against the project's own backends: every check passes or is skipped
for a dtype the device lacks, with no declared gap, and the run says so.

On cuPyNumeric (about 0.4 ms an op) the default suite leaves out the composite cases in the
three view layouts (broadcast, stepped, transposed): the plugin has no fused kernels, so
those cases hand the same primitives the views their own cases already check, and they are
a third of the kit's time there; the composite cases in float64 (their float32 and empty
twins run the same primitive sequences, and they were another 30% of the time there); and
the widening cases (every layout and dtype of each primitive), which take minutes there.
CI runs the whole kit on it (scripts/check-cunumeric-kit.sh), as does ``TW_KIT_FULL=1`` here.
"""

from __future__ import annotations

import os

#: The checks the default suite leaves out on cuPyNumeric (a pytest -k expression).
CUNUMERIC_LEFT_OUT = "(composite and (broadcast or stepped or transposed or float64)) or widening"


def test_kit_passes_on_built_in_backends(plain, built_in, tmp_path):
    whole = built_in != "cunumeric" or os.environ.get("TW_KIT_FULL")
    run = plain.kit(built_in, tmp_path, *(() if whole else ("-k", f"not ({CUNUMERIC_LEFT_OUT})")))
    assert run.returncode == 0, run.output[-5000:]
    assert not run.failures
    assert set(run.outcomes.values()) <= {"passed", "skipped"}
    verdict = "is conformant" if whole else "passed every selected check"
    assert f"{built_in} {verdict}" in run.verdict(), run.verdict()
    # every group of checks ran
    groups = {check.split("/")[0] for check, outcome in run.outcomes.items() if outcome == "passed"}
    assert groups >= {"packaging", "primitive", "core", "host", "autograd", "composite", "layer"}
    if not whole:  # composites did run in the other layouts
        layouts = {c.rsplit("/", 1)[-1] for c in run.outcomes if c.startswith("composite/")}
        assert layouts >= {"float32", "empty"}, layouts
