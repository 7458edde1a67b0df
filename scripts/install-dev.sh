#!/usr/bin/env bash
# Create or update .venv with the core, every plugin in plugins/ (editable) and the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
py=.venv/bin/python
pip=(.venv/bin/pip install --quiet --disable-pip-version-check -c constraints/ci.txt)
"${pip[@]}" --upgrade pip "setuptools>=64" wheel
editable=(-e ".[test]")
for plugin in plugins/*/; do
    editable+=(-e "$plugin")
done
# --no-build-isolation: build with the setuptools installed above, not a downloaded copy.
"${pip[@]}" --no-build-isolation "${editable[@]}"
if [ -x scripts/cupynumeric-cpu/install.sh ] && [ -d plugins/cunumeric-backend ]; then
    bash scripts/cupynumeric-cpu/install.sh "$py"
fi
"$py" -m tensorweaver.cli --version
