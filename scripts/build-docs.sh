#!/usr/bin/env bash
# Build the documentation site into docs/_build/html (warnings are errors) and run every
# example on its pages. Needs the dev environment: bash scripts/install-dev.sh
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m sphinx -W --keep-going -q -b html docs docs/_build/html
.venv/bin/python -m sphinx -W --keep-going -q -b doctest docs docs/_build/doctest
echo "docs: open docs/_build/html/index.html"
