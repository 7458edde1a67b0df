"""``python -m tensorweaver.conformance --tw-backend NAME [pytest options]``: run the kit.

The same as ``pytest -p tensorweaver.conformance.pytest_plugin --pyargs
tensorweaver.conformance --tw-backend NAME``; extra arguments go to pytest (``-x``, ``-k``,
``-q``). Exits with pytest's status: 0 when the backend conforms.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    import pytest

    args = list(sys.argv[1:] if argv is None else argv)
    plugin = ["-p", "tensorweaver.conformance.pytest_plugin"]
    return int(pytest.main([*plugin, "--pyargs", "tensorweaver.conformance", *args]))


if __name__ == "__main__":
    sys.exit(main())
