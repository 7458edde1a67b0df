#!/usr/bin/env bash
# The whole conformance kit on torch:cpu and on cuPyNumeric (run on the CPU here, see
# shared/notes/cupynumeric-on-cpu.md), each in a folder of its own, and through the suite's
# tests on NumPy and on the worked array-API example plugin (installed by its test): about 2,
# 2.5, 0.5 and 1 minutes on two idle cores; `tw check` over every case on NumPy; and the kit's
# selected checks and `tw check` on the JAX example plugin; the kit machinery's heaviest
# tests (the broken plugins' runs, the kit under pytest-xdist, `tw.check()` on every backend).
# The default suite runs `tw check` on a part and the rest of these not at all
# (tests/conformance/test_kit_built_in.py, test_kit_example.py, test_kit_jax_example.py,
# test_check_command.py, test_kit_broken.py and test_check_jobs.py say which); CI runs all of
# it here.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$PWD/.venv/bin/python
for backend in torch:cpu cunumeric; do
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    (cd "$work" && OMP_WAIT_POLICY=PASSIVE "$python" -m tensorweaver.conformance \
        --tw-backend "$backend" -q -p no:cacheprovider) | tee "$work/kit.log"
    # The kit exits 0 with a declared gap too: its verdict must call the backend conformant,
    # as tests/conformance/test_kit_built_in.py asserts where it runs.
    grep -q "$backend is conformant" "$work/kit.log"
    rm -rf "$work"
done
# Plugins named, not autoloaded (see scripts/test-all.sh).
TW_KIT_FULL=1 OMP_WAIT_POLICY=PASSIVE "$python" -m pytest -q -p no:cacheprovider \
    --disable-plugin-autoload -p xdist.plugin -p _hypothesis_pytestplugin \
    tests/conformance/test_kit_built_in.py tests/conformance/test_kit_example.py \
    tests/conformance/test_kit_jax_example.py tests/conformance/test_check_command.py \
    tests/conformance/test_kit_broken.py tests/conformance/test_check_jobs.py \
    -k "(built_in_backends and numpy) or plugin_is_conformant or tw_check_passes_on_numpy \
    or selected_kit_checks or tw_check_on_the_jax_example or python_api_returns_the_report \
    or test_kit_broken or pytest_xdist_with_the_serial_outcomes"
