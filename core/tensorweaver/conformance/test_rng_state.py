"""The optional random stream states (API 2.5) on the device under check: see
:mod:`tensorweaver.conformance.rng_state` (skipped where the backend defines neither)."""

from __future__ import annotations

import pytest

from tensorweaver.check.case import Case
from tensorweaver.check.context import Context
from tensorweaver.conformance import rng_state
from tensorweaver.conformance import test_cases as kit


@pytest.mark.parametrize("case", rng_state.cases(), ids=lambda c: c.id)
def test_rng_state(case: Case, tw_context: Context) -> None:
    kit.test_case(case, tw_context)  # run, skipped and failed as every tw check case
