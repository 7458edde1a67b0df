"""``tw check --jobs N``: the cases run in worker processes, with the same lines in the same
order as a serial run."""

from __future__ import annotations

from kit_in_ci import IN_CI_ONLY

# Primitives, a random one, the core's views, a fused and a random composite, a layer.
ONLY = (
    "primitive/add", "primitive/random_uniform", "primitive/exp/defined",
    "core/indexing", "core/non-contiguous", "composite/softmax", "composite/dropout",
    "layer/linear",
)  # fmt: skip


def test_jobs_give_the_serial_run_lines(plain):
    only = [a for pattern in ONLY for a in ("--only", pattern)]
    serial = plain.tw("check", "--backend", "numpy", *only)
    parallel = plain.tw("check", "--backend", "numpy", *only, "--jobs", "2")
    assert serial.returncode == 0, serial.stdout[-3000:] + serial.stderr[-3000:]
    assert parallel.returncode == 0, parallel.stdout[-3000:] + parallel.stderr[-3000:]
    assert len(serial.stdout.splitlines()) > 30
    assert parallel.stdout == serial.stdout


def test_jobs_must_be_a_positive_number(plain):
    done = plain.tw("check", "--backend", "numpy", "--jobs", "0")
    assert done.returncode == 2
    assert "--jobs/-j: expected a positive number of processes, got '0'" in done.stderr


@IN_CI_ONLY
def test_the_kit_runs_under_pytest_xdist_with_the_serial_outcomes(plain, tmp_path):
    """``python -m tensorweaver.conformance --tw-backend X -n 2`` (pytest-xdist) spreads the
    checks over worker processes and reports each one as a serial run does: primitives,
    composites, a layer, and the packaging checks that read the session's state (the other
    packaging checks each start interpreters of their own, as in a serial run)."""
    subset = (
        "-k",
        "primitive/add/ or scatter_add/ or softmax/ or layer/linear or gaps or entry_point",
    )
    (tmp_path / "serial").mkdir()
    (tmp_path / "parallel").mkdir()
    serial = plain.kit("numpy", tmp_path / "serial", *subset)
    parallel = plain.kit("numpy", tmp_path / "parallel", *subset, "-n", "2")
    assert serial.returncode == 0, serial.output[-3000:]
    assert parallel.returncode == 0, parallel.output[-3000:]
    assert len(serial.outcomes) > 40
    assert parallel.outcomes == serial.outcomes
