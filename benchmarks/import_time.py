"""Import cost of `import tensorweaver` against `import numpy` alone, in fresh interpreters.

Run: python benchmarks/import_time.py [--repeat 9]
Prints the medians, the difference, and which heavy libraries the import pulled in.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

HEAVY = ("torch", "cupynumeric", "legate")
PROBE = (
    "import time; t = time.perf_counter(); import {module}; "
    "ms = (time.perf_counter() - t) * 1e3; import sys; "
    "print(ms, ','.join(m for m in {heavy!r} if m in sys.modules))"
)


def import_ms(module: str) -> tuple[float, str]:
    code = PROBE.format(module=module, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    ms, _, heavy = out.stdout.strip().partition(" ")
    return float(ms), heavy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    numpy_runs, tw_runs, heavy = [], [], set()
    for _ in range(args.repeat):  # interleaved, so machine noise hits both alike
        numpy_runs.append(import_ms("numpy")[0])
        ms, loaded = import_ms("numpy, tensorweaver")
        tw_runs.append(ms)
        heavy.update(filter(None, loaded.split(",")))
    numpy_ms, tw_ms = statistics.median(numpy_runs), statistics.median(tw_runs)
    print(f"import numpy         {numpy_ms:7.1f} ms (median of {args.repeat})")
    print(f"import numpy + tensorweaver {tw_ms:5.1f} ms")
    print(f"difference           {tw_ms - numpy_ms:7.1f} ms")
    print(f"heavy libraries imported: {', '.join(sorted(heavy)) or 'none'}")


if __name__ == "__main__":
    main()
