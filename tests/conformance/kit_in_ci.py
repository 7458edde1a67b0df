"""The mark of the kit machinery's heaviest tests, which the default suite leaves to CI's
scripts/check-kits.sh (``TW_KIT_FULL=1``): each runs the kit in child processes (the
broken plugins' runs, the kit under pytest-xdist, ``tw.check()`` on every backend), tens of
seconds of a busy core apiece."""

from __future__ import annotations

import os

import pytest

IN_CI_ONLY = pytest.mark.skipif(
    not os.environ.get("TW_KIT_FULL"),
    reason="runs the kit in child processes: CI's scripts/check-kits.sh runs it (TW_KIT_FULL=1)",
)
