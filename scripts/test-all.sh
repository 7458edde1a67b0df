#!/usr/bin/env bash
# The whole test suite from a fresh clone: install everything, lint, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-dev.sh
# torch's OpenMP threads spin while waiting; on a shared or small machine that makes every op
# wait for the other core (see DESIGN.md). Passive waiting costs nothing measurable here.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
status=0
# Two worker processes (pytest-xdist; worksteal evens out the few long tests, such as the
# conformance kit on NumPy): the suite is mostly single-threaded Python and subprocesses.
# The plugins are named rather than found through their entry points: pytest rewrites the
# asserts of every module of a distribution it autoloads a plugin from, here the whole core
# (its conformance kit is such a plugin) and Hypothesis, ~590 modules that each worker would
# parse, rewrite and compile instead of loading (or just compiling) them.
plugins=(--disable-plugin-autoload -p xdist.plugin -p _hypothesis_pytestplugin)
.venv/bin/python -m pytest -q "${plugins[@]}" -n "${TW_TEST_WORKERS:-2}" --dist worksteal "$@" \
    || status=$?
# pytest exits 5 when it collected no test: a failure here too, like any other non-zero exit.
if [ "$status" -eq 5 ]; then
    echo "test-all: pytest ran no test" >&2
fi
exit "$status"
