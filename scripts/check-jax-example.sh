#!/usr/bin/env bash
# The whole conformance kit on examples/tw-jax-backend, the plugin written only from the
# documentation (JAX compiles each op per shape: about 8 minutes on two idle cores, so the
# default suite runs none of it, scripts/check-kits.sh a selected part, and CI all of it
# here). The plugin is installed into a throwaway folder, as a third party would install it,
# not into the dev environment.
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(mktemp -d)
trap 'rm -rf "$target"' EXIT
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
    --no-build-isolation --target "$target" examples/tw-jax-backend
cd "$target"
PYTHONPATH="$target" OMP_WAIT_POLICY=PASSIVE "$OLDPWD/.venv/bin/python" -m tensorweaver.conformance \
    --tw-backend jax -q -p no:cacheprovider -n 2
