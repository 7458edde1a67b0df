"""Every case of ``tw check`` on the device under check: that each required primitive is
defined, primitives across dtypes and edge cases, the core's rewrites (broadcasting,
negative axes, views), host transfer, autograd, composites (each saying whether the fused
kernel or the core's decomposition ran) and layers, each against NumPy float64."""

from __future__ import annotations

import pytest

from tensorweaver.check.case import Case
from tensorweaver.check.context import Context
from tensorweaver.check.report import FAIL, SKIP
from tensorweaver.check.runner import evaluate, every_case


@pytest.mark.parametrize("case", every_case(), ids=lambda c: c.id)
def test_case(case: Case, tw_context: Context) -> None:
    result = evaluate(case, tw_context)
    if result.verdict == SKIP:
        pytest.skip(result.detail)
    if result.verdict == FAIL:
        via = f" ({result.path})" if result.path else ""
        pytest.fail(f"{case.id} on {result.device}{via}: {result.detail}", pytrace=False)
