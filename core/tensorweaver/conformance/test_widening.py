"""Every primitive in every dtype it admits, in every layout a user can hand a backend
(:mod:`tensorweaver.conformance.widening`), against NumPy float64."""

from __future__ import annotations

import pytest

from tensorweaver.check.case import Case
from tensorweaver.check.context import Context
from tensorweaver.conformance.test_cases import test_case as _check
from tensorweaver.conformance.widening import cases


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_widening(case: Case, tw_context: Context) -> None:
    _check(case, tw_context)
