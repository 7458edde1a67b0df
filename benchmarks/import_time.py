"""Import cost of `import tensorweaver` against `import numpy`, in fresh interpreters.

Run: python benchmarks/import_time.py [--repeat 9]
Prints the medians of ``import numpy`` alone and of ``import tensorweaver`` timed after
``import numpy`` (what the core adds; timing it on its own rather than as a difference of
two ~100 ms figures keeps NumPy's noise out of it), the core modules that cost most (from
``-X importtime``) and which heavy libraries the import pulled in.

Bytecode is cached in a temporary folder and warmed first, as after ``pip install``: with
PYTHONDONTWRITEBYTECODE set (as on this project's machines) an editable core would otherwise
be compiled from source on every run, and that doubles its figure.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HEAVY = ("torch", "cupynumeric", "legate")
PROBE = (
    "{setup}; import time; t = time.perf_counter(); import {module}; "
    "ms = (time.perf_counter() - t) * 1e3; import sys; "
    "print(ms, ','.join(m for m in {heavy!r} if m in sys.modules))"
)


def python(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=True, env=env
    )


def import_ms(env: dict[str, str], module: str, setup: str = "pass") -> tuple[float, str]:
    """Milliseconds to import ``module`` after ``setup``, and the heavy libraries then loaded."""
    out = python(env, "-c", PROBE.format(setup=setup, module=module, heavy=HEAVY))
    ms, _, heavy = out.stdout.strip().partition(" ")
    return float(ms), heavy


def costliest_modules(env: dict[str, str], count: int = 5) -> list[tuple[float, str]]:
    """The core's modules with the largest self time, numpy already imported."""
    err = python(env, "-X", "importtime", "-c", "import numpy; import tensorweaver").stderr
    rows = []
    for line in err.splitlines():
        if not line.startswith("import time:"):
            continue
        self_us, _, name = (part.strip() for part in line[len("import time:") :].split("|"))
        if name.startswith("tensorweaver"):
            rows.append((int(self_us) / 1e3, name))
    return sorted(rows, reverse=True)[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        import_ms(env, "tensorweaver", setup="import numpy")  # warm the bytecode cache
        numpy_runs, tw_runs, heavy = [], [], set()
        for _ in range(args.repeat):  # interleaved, so machine noise hits both alike
            numpy_runs.append(import_ms(env, "numpy")[0])
            ms, loaded = import_ms(env, "tensorweaver", setup="import numpy")
            tw_runs.append(ms)
            heavy.update(filter(None, loaded.split(",")))
        costly = costliest_modules(env)
    numpy_ms, tw_ms = statistics.median(numpy_runs), statistics.median(tw_runs)
    print(f"import numpy                        {numpy_ms:6.1f} ms (median of {args.repeat})")
    print(f"import tensorweaver, after numpy    {tw_ms:6.1f} ms (what the core adds)")
    print(f"import numpy + tensorweaver, total  {numpy_ms + tw_ms:6.1f} ms")
    print("costliest core modules (self time, one run):")
    for ms, name in costly:
        print(f"  {ms:5.1f} ms  {name}")
    print(f"heavy libraries imported: {', '.join(sorted(heavy)) or 'none'}")


if __name__ == "__main__":
    main()
