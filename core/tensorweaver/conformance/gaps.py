"""Known gaps a plugin declares: the checks it knows it fails, reported as expected failures.

A plugin declares them in its plugin module (the entry point's target) as a dict from a
check id, or a glob of ids, to the reason::

    conformance_gaps = {
        "primitive/erf/float16": "erf in float16 is accurate to 1e-2 only",
        "layer/lstm": "no LSTM on this device yet (issue #12)",
    }

Ids are those the kit prints (``pytest --collect-only -q`` lists them). Every entry must
match a check, so a typo cannot hide one. A plugin without gaps is conformant.

* An exact id is a strict expected failure: the check must fail, and once it passes the
  run fails, saying to remove the entry.
* A glob covers only the checks it matches that fail: ``"primitive/remainder/*"`` covers
  remainder's failing variants, whichever they are, and its passing variants count as
  passed (pytest shows them as XPASS, not as failures). A glob none of whose checks fails
  is stale: the run fails, saying to remove it.
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


def pattern(check_id: str, gaps: dict[str, str]) -> str | None:
    """The first declared pattern that matches ``check_id``, or None."""
    return next((p for p in gaps if fnmatch.fnmatchcase(check_id, p)), None)


def reason(check_id: str, gaps: dict[str, str]) -> str | None:
    """Why ``check_id`` is a declared gap, or None if it is not one."""
    found = pattern(check_id, gaps)
    return None if found is None else gaps[found]


def is_glob(pattern: str) -> bool:
    """Whether ``pattern`` is a glob (it covers only the checks it matches that fail)."""
    return any(ch in pattern for ch in "*?[")


def stale(
    gaps: dict[str, str], collected: Iterable[str], ran: Iterable[str], failed: Iterable[str]
) -> list[str]:
    """The globs among ``gaps`` whose checks all ran and none failed.

    ``collected`` is every check id, ``ran`` those that ran, ``failed`` those that failed
    as gaps. A glob with a check that did not run (deselected with ``-k``) is not judged.
    """
    ran, failed = set(ran), set(failed)
    found = []
    for p in filter(is_glob, gaps):
        covered = [i for i in collected if pattern(i, gaps) == p]
        if covered and set(covered) <= ran and not failed.intersection(covered):
            found.append(p)
    return found


def unmatched(gaps: dict[str, str], check_ids: Iterable[str]) -> list[str]:
    """The declared patterns that match none of ``check_ids``."""
    ids = list(check_ids)
    return [p for p in gaps if not any(fnmatch.fnmatchcase(i, p) for i in ids)]
