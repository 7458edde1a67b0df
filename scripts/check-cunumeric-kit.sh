#!/usr/bin/env bash
# The whole conformance kit on cuPyNumeric (run on the CPU here, see
# shared/notes/cupynumeric-on-cpu.md): about 2.5 minutes on two idle cores, so the default
# suite leaves out its composite cases in the view layouts (tests/conformance/
# test_kit_built_in.py) and CI runs all of it here, in a folder of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
OMP_WAIT_POLICY=PASSIVE "$OLDPWD/.venv/bin/python" -m tensorweaver.conformance \
    --tw-backend cunumeric -q -p no:cacheprovider
