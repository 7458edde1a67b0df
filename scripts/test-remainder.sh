#!/usr/bin/env bash
# What the default suite (scripts/test-all.sh) runs only a share of, run whole: every nn
# module and optimizer test case on cuPyNumeric (the suite runs a third of each parametrized
# test's cases there), the compile sweep's program under torch's inductor, and the SIGKILL
# resume chains at full length. CI runs it after the suite (a few minutes on two idle cores).
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
TENSORWEAVER_TEST_ALL_ON_CUNUMERIC=1 TW_SWEEP_INDUCTOR=1 TW_RESUME_FULL=1 \
    .venv/bin/python -m pytest -q -p no:cacheprovider -n "${TW_TEST_WORKERS:-2}" --dist worksteal \
    tests/nn_modules tests/optim tests/compile/test_sweep_inductor.py tests/training/test_resume.py \
    -k "cunumeric or inductor or sigkilled or killed_halfway"
