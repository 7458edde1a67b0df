"""The first scaled_dot_product_attention of a process made inside a tw.compile trace: the
backend kernel's signature is read from its class, not from the recorder's shadow of it
(which cached "no mask" for the process and broke every later maskless call, eager too)."""

from __future__ import annotations

from typing import Any

import tensorweaver as tw
from snippet_outcomes import same
from tensorweaver.nn.functional import attention


def _attention_first_called_in_a_trace(m: Any) -> list:
    attention._TAKES_MASK.clear()  # as in a fresh process: the first call is inside the trace
    sdpa = m.nn.functional.scaled_dot_product_attention

    def step(q: Any) -> Any:
        return sdpa(q, q, q, is_causal=True)

    f = tw.compile(step) if m is tw else step
    q = m.linspace(-1, 1, 24, dtype=m.float64).reshape(1, 2, 3, 4)
    try:
        return [f(q * (i + 1)) for i in range(4)] + [sdpa(q, q, q)]  # and eagerly afterwards
    finally:
        attention._TAKES_MASK.clear()  # (an answer cached here must not reach later tests)


def test_attention_first_called_inside_a_trace(spec: str) -> None:
    same(_attention_first_called_in_a_trace, spec)
