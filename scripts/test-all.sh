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
# conformance kit on cuPyNumeric): the suite is mostly single-threaded Python and subprocesses.
.venv/bin/python -m pytest -q -n "${TW_TEST_WORKERS:-2}" --dist worksteal "$@" || status=$?
# pytest exits 5 when it collected no test: a failure here too, like any other non-zero exit.
if [ "$status" -eq 5 ]; then
    echo "test-all: pytest ran no test" >&2
fi
exit "$status"
