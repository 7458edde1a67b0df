#!/usr/bin/env bash
# Install TensorWeaver as a user does, from the built wheels into a fresh virtual environment,
# and run the main job there: a file missing from a wheel, or an entry point that does not
# load, fails this script where the editable installs of the test suite would hide it.
#
#   scripts/check-wheels.sh          # after scripts/install-dev.sh (it builds with .venv)
#
# Steps: build dist/ (scripts/build-dists.sh); in a temporary venv, the README's
# `pip install --find-links dist "tensorweaver[torch]"` (torch pinned by constraints/ci.txt),
# and the cuPyNumeric plugin without its library (a 2 GB download; the plugin then reports it
# as not installed); then check each distribution (scripts/check_installed.py), the `tw` CLI,
# the conformance kit through its pytest plugin, and train the digits classifier on NumPy and
# briefly on torch:cpu. Everything runs outside the clone, so nothing is imported from it.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
unset PYTHONPATH

bash scripts/build-dists.sh

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
bin=$work/venv/bin
pip=("$bin/python" -m pip install --quiet --disable-pip-version-check -c "$repo/constraints/ci.txt"
    --find-links "$repo/dist")
# The README's line, and what the main job and the conformance kit need beside it.
"${pip[@]}" "tensorweaver[torch]" scikit-learn pytest
"$bin/python" -m pip check
"${pip[@]}" --no-deps tensorweaver-cunumeric

cd "$work"
"$bin/python" "$repo/scripts/check_installed.py" "$repo/dist"
"$bin/tw" --version
"$bin/tw" devices
"$bin/python" -m pytest -q -p no:cacheprovider --pyargs tensorweaver.conformance --tw-backend numpy
"$bin/python" "$repo/examples/digits.py"
"$bin/python" "$repo/examples/digits.py" --device torch:cpu --epochs 2
echo "check-wheels: the wheels in dist/ install and run (${SECONDS} s)"
