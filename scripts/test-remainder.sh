#!/usr/bin/env bash
# What the default suite (scripts/test-all.sh) runs only a share of, run whole: every nn
# module and optimizer test case on cuPyNumeric (the suite runs a sixth of each parametrized
# test's cases there), every case of the Tensor tests marked for cuPyNumeric (the suite runs a
# third of each marked test function's cases there), the compile sweep's program under
# torch's inductor, and the SIGKILL resume chains at full length. CI runs it after the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider -n "${TW_TEST_WORKERS:-2}" --dist worksteal)
TENSORWEAVER_TEST_ALL_ON_CUNUMERIC=1 TW_SWEEP_INDUCTOR=1 TW_RESUME_FULL=1 "${pytest[@]}" \
    tests/nn_modules tests/optim tests/compile/test_sweep_inductor.py tests/training/test_resume.py \
    -k "cunumeric or inductor or sigkilled or killed_halfway"
TW_CUNUMERIC_MARKED_FULL=1 "${pytest[@]}" tests/tensor -k cunumeric
