"""Python in a child interpreter, for tests of the cuPyNumeric backend.

Legate starts once per process, on a machine (CPUs, memory) fixed at that start, and some
defects abort the whole process: a test that needs a fresh runtime, another machine or none,
or whose case once killed the interpreter, runs it in a child that prints its results as
JSON on its last line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any


def _last_json_line(args: list[str], timeout: float, environ: dict[str, str]) -> Any:
    # Without the parent's settings (the parent's own Legate start writes LEGATE_CONFIG);
    # torch's plugin disabled: the child starts sooner.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LEGATE_", "TENSORWEAVER_"))}
    env.update(TENSORWEAVER_DISABLE_PLUGINS="torch", **environ)
    proc = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_python(code: str, *, timeout: float = 300, **environ: str) -> Any:
    """The JSON value that the Python source ``code`` (dedented) prints last, run in a child
    with ``environ`` added; the child imports what the test can (the test's ``sys.path``
    comes first), and one that fails fails the test with the end of its stderr."""
    importable = f"import sys\nsys.path[:0] = {sys.path!r}\n"
    return _last_json_line(["-c", importable + textwrap.dedent(code)], timeout, environ)


def run_script(script: os.PathLike, *args: str, timeout: float = 300, **environ: str) -> Any:
    """The JSON value that ``python script *args`` prints last, as :func:`run_python`."""
    return _last_json_line([os.fspath(script), *args], timeout, environ)
