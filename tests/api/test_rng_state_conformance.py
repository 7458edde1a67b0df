"""The conformance kit's rng_state cases (tensorweaver.check.cases.rng_state) pass on the
built-in backends that have stream states, skip where a backend has none, and fail a
backend whose states do not put its stream back."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tensorweaver import registry
from tensorweaver.check.cases import rng_state
from tensorweaver.check.context import Context
from tensorweaver.check.report import FAIL, OK, SKIP
from tensorweaver.check.runner import evaluate
from tensorweaver.contract import dtypes
from tw_backends import unusable_reason

CASES = {case.id.split("/")[1]: case for case in rng_state.cases()}


class _Altered:
    """A backend object with some methods replaced (None: not defined)."""

    def __init__(self, inner: Any, **methods: Any) -> None:
        self._inner, self._methods = inner, methods

    def __getattr__(self, name: str) -> Any:
        if name in self._methods:
            if self._methods[name] is None:
                raise AttributeError(name)
            return self._methods[name]
        return getattr(self._inner, name)


def _verdicts(backend: Any) -> dict[str, str]:
    ctx = Context(backend)
    return {name: evaluate(case, ctx).verdict for name, case in CASES.items()}


@pytest.mark.parametrize("spec", ["numpy", "torch:cpu", "cunumeric"])
def test_the_cases_pass_on_backends_with_stream_states(spec: str) -> None:
    reason = unusable_reason(spec)
    if reason is not None:
        pytest.skip(reason)
    assert _verdicts(registry.backend_object(spec)) == dict.fromkeys(CASES, OK)


def test_the_cases_skip_a_backend_without_them() -> None:
    numpy = registry.backend_object("numpy")
    stateless = _Altered(numpy, get_rng_state=None, set_rng_state=None)
    assert _verdicts(stateless) == dict.fromkeys(CASES, SKIP)


def test_the_cases_fail_states_that_do_not_put_the_stream_back() -> None:
    numpy = registry.backend_object("numpy")
    ignored = _Altered(numpy, set_rng_state=lambda state: None)
    found = _verdicts(ignored)
    assert found["round-trip"] == found["replaces-reseeded"] == FAIL

    def advancing() -> bytes:
        numpy.random_integers((), 0, 2, dtypes.int64)  # moves the stream on
        return numpy.get_rng_state()

    assert _verdicts(_Altered(numpy, get_rng_state=advancing))["read-keeps-stream"] == FAIL

    def half_lost(state: bytes) -> None:  # drops PCG64's buffered 32-bit half
        numpy.set_rng_state(state[:32] + bytes(8))

    assert _verdicts(_Altered(numpy, set_rng_state=half_lost))["round-trip"] == FAIL
    half = _verdicts(_Altered(numpy, set_rng_state=None))
    assert half == dict.fromkeys(CASES, FAIL)


class _SpareNormal:
    """NumPy's backend drawing normals in Box-Muller pairs and keeping the spare one, which
    its state leaves out: the kit took states only after one uniform, so it passed this."""

    def __init__(self, inner: Any) -> None:
        self._inner, self._spare = inner, None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def seed(self, value: int) -> None:
        self._spare = None
        self._inner.seed(value)

    def random_normal(self, shape: tuple, mean: float, std: float, dtype: Any) -> Any:
        n, out = int(np.prod(shape)), []
        if self._spare is not None:
            out.append(self._spare)
            self._spare = None
        while len(out) < n:
            u = np.asarray(
                self._inner.to_host(self._inner.random_uniform((2,), 0, 1, dtypes.float64))
            )
            r = np.sqrt(-2 * np.log1p(-u[0]))
            out += [r * np.cos(2 * np.pi * u[1]), r * np.sin(2 * np.pi * u[1])]
        if len(out) > n:
            self._spare = out.pop()
        return self._inner.from_host(np.asarray(out).reshape(shape) * std + mean, dtype)

    def get_rng_state(self) -> bytes:
        return self._inner.get_rng_state()  # without the spare

    def set_rng_state(self, state: bytes) -> None:
        self._spare = None
        self._inner.set_rng_state(state)


def test_the_cases_fail_a_state_that_leaves_out_a_buffered_normal() -> None:
    found = _verdicts(_SpareNormal(registry.backend_object("numpy")))
    assert found["round-trip"] == FAIL
