#!/usr/bin/env bash
# The main job from a fresh clone: install TensorWeaver with its NumPy backend (no torch, no
# cuPyNumeric) into .venv-main and train the digits classifier on the NumPy backend.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv-main/bin/python ] || python3 -m venv .venv-main
pip=(.venv-main/bin/python -m pip install --quiet --disable-pip-version-check)
# An old pip cannot resolve the core and its NumPy plugin requiring each other.
"${pip[@]}" --upgrade pip
"${pip[@]}" -e plugins/numpy-backend -e ".[progress]" scikit-learn
.venv-main/bin/python examples/digits.py "$@"
