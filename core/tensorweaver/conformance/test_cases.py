"""Every case of ``tw check`` on the device under check: primitives across dtypes and edge
cases, the core's rewrites (broadcasting, negative axes, views), host transfer, autograd,
composites and layers, each against NumPy float64."""

from __future__ import annotations

import pytest

from tensorweaver.check.case import Case
from tensorweaver.check.cases import all_cases
from tensorweaver.check.context import Context
from tensorweaver.check.report import FAIL, SKIP
from tensorweaver.check.runner import evaluate


@pytest.mark.parametrize("case", all_cases(), ids=lambda c: c.id)
def test_case(case: Case, tw_context: Context) -> None:
    result = evaluate(case, tw_context)
    if result.verdict == SKIP:
        pytest.skip(result.detail)
    if result.verdict == FAIL:
        pytest.fail(f"{case.id} on {result.device}: {result.detail}", pytrace=False)
