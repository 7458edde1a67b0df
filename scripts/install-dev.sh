#!/usr/bin/env bash
# Create or update .venv: torch and cuPyNumeric/Legate pinned by constraints/ci.txt, the core
# with its test tools and every plugin in plugins/ (editable), and cuPyNumeric's CPU set-up
# where there is no NVIDIA driver. Safe to rerun: when none of the files that decide what gets
# installed changed since the last run, pip is skipped (delete .venv/.install-dev.sha256 to
# force it). Editable installs pick up source edits without a rerun.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -x .venv/bin/python ] || python3 -m venv .venv
py=.venv/bin/python
stamp=.venv/.install-dev.sha256
inputs=$(cat scripts/install-dev.sh constraints/ci.txt pyproject.toml plugins/*/pyproject.toml |
    sha256sum)

if [ "$(cat "$stamp" 2>/dev/null)" != "$inputs" ]; then
    pip=("$py" -m pip install --quiet --disable-pip-version-check -c constraints/ci.txt)
    "${pip[@]}" --upgrade pip "setuptools>=77" wheel
    # Pinned first and on their own: any torch other than the pinned one is a GB download.
    "${pip[@]}" torch==2.13.0 nvidia-cupynumeric legate
    # The array library of examples/tw-array-api-backend, which tests/conformance installs.
    "${pip[@]}" "array-api-strict>=2.3"
    # The array library of examples/tw-jax-backend, the plugin written only from the docs.
    "${pip[@]}" "jax[cpu]"
    editable=(-e ".[test]")
    for plugin in plugins/*/; do
        editable+=(-e "$plugin")
    done
    # --no-build-isolation: build with the setuptools installed above, not a downloaded copy.
    "${pip[@]}" --no-build-isolation "${editable[@]}"
    echo "$inputs" >"$stamp"
fi

# It decides for itself: it does nothing where a real NVIDIA driver is present.
bash scripts/cupynumeric-cpu/install.sh "$py"
"$py" -m tensorweaver.cli --version
