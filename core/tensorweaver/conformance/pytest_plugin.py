"""The conformance kit's pytest option, ``--tw-backend SPEC``.

Loaded with ``-p tensorweaver.conformance.pytest_plugin`` (``python -m
tensorweaver.conformance`` does it for you), or automatically where the core distribution
registers it as a ``pytest11`` entry point. It imports nothing, so it costs other test
suites nothing.
"""

from __future__ import annotations

from typing import Any


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("tensorweaver", "TensorWeaver backend conformance kit")
    group.addoption(
        "--tw-backend",
        metavar="SPEC",
        default=None,
        help="the backend (or device, e.g. torch:cuda) the conformance kit checks: "
        "pytest --pyargs tensorweaver.conformance --tw-backend NAME",
    )
