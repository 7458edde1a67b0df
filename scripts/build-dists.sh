#!/usr/bin/env bash
# Build the sdist and the wheel of each of the four distributions into dist/:
#
#   scripts/build-dists.sh            # with .venv/bin/python (scripts/install-dev.sh makes it)
#   PYTHON=python3 scripts/build-dists.sh
#
# tensorweaver (the core), tensorweaver-numpy, tensorweaver-torch and tensorweaver-cunumeric.
# Each wheel is built from its sdist, so a file the sdist lacks is missing from the wheel too
# (scripts/check-wheels.sh then fails). dist/ is emptied first: it holds this tree's builds, for
# `pip install --find-links dist "tensorweaver[torch]"`.
set -euo pipefail
cd "$(dirname "$0")/.."

py=${PYTHON:-.venv/bin/python}
if ! "$py" -c 'import build' 2>/dev/null; then
    echo "build-dists: $py has no 'build' package; run scripts/install-dev.sh first" \
        "(the test extra installs it), or set PYTHON to an interpreter that has it" >&2
    exit 1
fi

rm -rf dist
for project in . plugins/numpy-backend plugins/torch-backend plugins/cunumeric-backend; do
    # --no-isolation: build with the interpreter's setuptools, as install-dev.sh does, instead
    # of downloading one per build.
    "$py" -m build --quiet --no-isolation --outdir dist "$project"
done
ls dist
