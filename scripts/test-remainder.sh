#!/usr/bin/env bash
# What the default suite (scripts/test-all.sh) runs only a share of, run whole: every nn
# module and optimizer test case on cuPyNumeric (the suite runs a sixth of each parametrized
# test's cases there), every case of the Tensor tests marked for cuPyNumeric (the suite runs a
# sixth of each marked test function's cases there), the compile sweep's program and
# to_torch_module(compile=True) under torch's inductor, the SIGKILL resume chains (the suite
# runs none), and the three quarters of PyTorch's op database the suite's opinfo sweep leaves
# to it. CI runs it after the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
# Plugins named, not autoloaded (see scripts/test-all.sh).
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider --disable-plugin-autoload -p xdist.plugin
    -p _hypothesis_pytestplugin -n "${TW_TEST_WORKERS:-2}" --dist worksteal)
TENSORWEAVER_TEST_ALL_ON_CUNUMERIC=1 TW_SWEEP_INDUCTOR=1 TW_RESUME_FULL=1 "${pytest[@]}" \
    tests/nn_modules tests/optim tests/compile/test_sweep_inductor.py tests/training/test_resume.py \
    tests/interop/test_torch_module.py \
    -k "cunumeric or inductor or sigkilled or killed_halfway or compile_option"
TW_OPINFO_OPS=rest "${pytest[@]}" tests/opinfo/test_opinfo_sweep.py
TW_CUNUMERIC_MARKED_FULL=1 "${pytest[@]}" tests/tensor -k cunumeric
