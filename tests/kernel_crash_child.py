"""Snippets of tw code run in one child process, on torch:cpu and then on numpy, each one's
outcome reported back: a snippet that kills the process fails the tests that read its
outcome (and those after it) instead of killing pytest."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_CHILD = """
import json, math, sys
import tensorweaver as tw
import tensorweaver.nn.functional as F
nan, inf = math.nan, math.inf
cases = json.loads(sys.argv[1])
for backend in ("torch:cpu", "numpy"):
    for name, code in cases.items():
        scope = {"tw": tw, "F": F, "nan": nan, "inf": inf}
        try:
            with tw.device(backend):
                exec(code, scope)
            out = {"ok": True, "result": repr(scope["result"])}
        except Exception as e:
            out = {"ok": False, "type": type(e).__name__, "mro": [c.__name__ for c in
                   type(e).__mro__], "message": str(e)}
        print(json.dumps({backend + "/" + name: out}), flush=True)
"""


def run_cases(cases: dict[str, str]) -> dict:
    """``{"<backend>/<name>": outcome}`` for each snippet (code that sets ``result``, run
    under ``tw.device(backend)``; ``nan``, ``inf`` and ``F`` are defined), plus the child's
    ``_returncode`` and the end of its ``_stderr``."""
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD), json.dumps(cases)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = {}
    for line in proc.stdout.splitlines():
        found.update(json.loads(line))
    found["_returncode"] = proc.returncode
    found["_stderr"] = proc.stderr[-2000:]
    return found


def outcome(outcomes: dict, key: str) -> dict:
    """The outcome under ``key``, or a failure saying where the child died."""
    assert key in outcomes, (
        f"the child died before {key} (exit {outcomes['_returncode']}): {outcomes['_stderr']}"
    )
    return outcomes[key]
