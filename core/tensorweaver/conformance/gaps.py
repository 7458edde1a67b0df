"""Known gaps a plugin declares: the checks it knows it fails, reported as expected failures.

A plugin declares them in its plugin module (the entry point's target) as a dict from a
check id, or a glob of ids, to the reason::

    conformance_gaps = {
        "primitive/erf/float16": "erf in float16 is accurate to 1e-2 only",
        "layer/lstm": "no LSTM on this device yet (issue #12)",
    }

Ids are those the kit prints (``pytest --collect-only -q`` lists them). A declared gap is
an expected failure: it must fail (a gap that passes is reported so it can be removed), and
every entry must match a check, so a typo cannot hide one. A plugin without gaps is
conformant.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

ATTRIBUTE = "conformance_gaps"


def declared(module: Any) -> dict[str, str]:
    """The gaps ``module`` declares (none when it has no ``conformance_gaps``)."""
    gaps = getattr(module, ATTRIBUTE, None)
    if gaps is None:
        return {}
    if not isinstance(gaps, dict) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in gaps.items()
    ):
        raise TypeError(
            f"{module.__name__}.{ATTRIBUTE} must be a dict from check id (or glob) to a "
            f"non-empty reason, got {gaps!r}"
        )
    return dict(gaps)


def reason(check_id: str, gaps: dict[str, str]) -> str | None:
    """Why ``check_id`` is a declared gap, or None if it is not one."""
    for pattern, why in gaps.items():
        if fnmatch.fnmatchcase(check_id, pattern):
            return why
    return None


def unmatched(gaps: dict[str, str], check_ids: Iterable[str]) -> list[str]:
    """The declared patterns that match none of ``check_ids``."""
    ids = list(check_ids)
    return [p for p in gaps if not any(fnmatch.fnmatchcase(i, p) for i in ids)]
