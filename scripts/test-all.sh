#!/usr/bin/env bash
# The whole test suite from a fresh clone: install everything, lint, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-dev.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# pytest exits 5 when it collected no test: that is a failure here too.
.venv/bin/python -m pytest -q
