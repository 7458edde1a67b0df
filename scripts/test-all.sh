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
# Bytecode written once and shared: a machine that sets PYTHONDONTWRITEBYTECODE makes every
# process compile every module it imports from source (each pytest worker and each of the
# suite's subprocesses, the core's modules), and each worker parse, rewrite and compile the
# ~760 test modules (about 20 CPU-s a worker). Here the core's, the plugins' and the tests'
# helper modules are compiled once into their __pycache__ folders (ignored by git; not the
# test distributions under tests/**/plugins/, which run from pip's copies), and the
# test modules' and conftests' assertions rewritten once, by pytest's own (private) functions,
# into the pycs that pytest writes and reads itself (named with pytest's version, checked
# against each source's hash); pytest-xdist's workers collect in step and would otherwise each
# rewrite every one. If a pytest release renames those functions, this says so and the
# workers rewrite as before.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m compileall -q -j 0 -x '/(test_[^/]*|conftest)\.py$|(^|/)tests/(.*/)?plugins/' \
    core plugins tests
.venv/bin/python - <<'PY' || echo "test-all: could not rewrite the tests ahead, pytest will" >&2
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from _pytest.assertion.rewrite import PYC_TAIL, _rewrite_test, _write_pyc, get_cache_dir


class Quiet:
    trace = staticmethod(lambda message: None)


def rewrite(path: Path) -> None:
    cache = get_cache_dir(path)
    cache.mkdir(parents=True, exist_ok=True)
    source_hash, code = _rewrite_test(path, None)  # None: pytest's default options
    _write_pyc(Quiet, code, source_hash, cache / (path.name[:-3] + PYC_TAIL))


tests = Path("tests").absolute()
paths = [p for p in tests.rglob("*.py") if p.name.startswith("test_") or p.name == "conftest.py"]
with ProcessPoolExecutor(mp_context=multiprocessing.get_context("fork")) as pool:
    list(pool.map(rewrite, paths, chunksize=16))
PY
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
