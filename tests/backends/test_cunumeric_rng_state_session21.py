"""cuPyNumeric's random stream has a state (get_rng_state/set_rng_state, backend API 2.5).

Before, the backend had no such pair: ``tw.get_rng_state`` covered the host's generator only
and warned (RngStateWarning), ``fork_rng`` reseeded the device's stream so later draws
differed from a run without it, and vmap's ``randomness="error"`` could not see a draw.
Each property is checked as torch 2.13 has it on its CPU generator. The core reads every
backend's state (vmap, fork_rng), so the pair answers in any thread.

Also here, two gaps the optional primitives had beside the required ones: on a machine with
GPUs where the CPU device is chosen, the backend runs each primitive that launches tasks
inside a CPU machine scope, and elementwise results follow their operands' layout.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

import numpy as np
import pytest
import tensorweaver as tw
import torch
from tensorweaver import registry
from tensorweaver_cunumeric import legate_config
from tw_backends import entered

pytestmark = [
    pytest.mark.cunumeric,
    pytest.mark.skipif(
        legate_config.library_name() is None,
        reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
    ),
]


def _draws(m: Any) -> list[np.ndarray]:
    return [
        np.asarray(m.rand(5, dtype=m.float64)),
        np.asarray(m.randn(2, 3, dtype=m.float32)),
        np.asarray(m.randint(0, 9, (4,))),
        np.asarray(m.nn.functional.dropout(m.ones(40), 0.5, True)),
    ]


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def _properties(m: Any) -> dict[str, bool]:
    """What a program sees of the stream's state: the round trip, reading it moving nothing,
    fork_rng putting it back, a reseed undone by set_rng_state."""
    m.manual_seed(11)
    m.rand(3)
    state = m.get_rng_state()
    first = _draws(m)
    m.set_rng_state(state)
    round_trip = _same(_draws(m), first)
    m.set_rng_state(state)
    m.get_rng_state()
    read_keeps = _same(_draws(m), first)
    m.set_rng_state(state)
    with m.random.fork_rng():
        _draws(m)
    forked = _same(_draws(m), first)
    m.manual_seed(12)
    m.rand(7)
    m.set_rng_state(state)
    undone = _same(_draws(m), first)
    return {"round trip": round_trip, "read": read_keeps, "fork": forked, "reseed": undone}


def test_the_state_puts_the_stream_back_as_torchs_does() -> None:
    want = _properties(torch)
    with entered("cunumeric"), warnings.catch_warnings():
        # the core's "no state to save" warning is for backends without the pair
        warnings.simplefilter("error", tw.random.RngStateWarning)
        got = _properties(tw)
        size = tw.get_rng_state().numel()
    assert got == want == dict.fromkeys(want, True)
    assert size == 48 + len(registry.backend_object("cunumeric").get_rng_state())


def _vmap_same(m: Any) -> dict[str, bool]:
    """vmap's randomness="same": every element sees one draw, and the stream goes on after
    it as after that one draw (the core puts the stream back between elements)."""
    x = m.zeros(3, 4, dtype=m.float64)
    m.manual_seed(2)
    rows = np.asarray(m.func.vmap(lambda a: m.rand(4, dtype=m.float64) + a, randomness="same")(x))
    after = np.asarray(m.rand(3))
    m.manual_seed(2)
    first = np.asarray(m.rand(4, dtype=m.float64))
    return {
        "rows": bool((rows == first).all()),
        "after": np.array_equal(after, np.asarray(m.rand(3))),
    }


def test_vmap_same_randomness_continues_the_stream_as_torchs() -> None:
    # before: the core reseeded cuPyNumeric's stream (with an RngStateWarning), so the draws
    # after vmap differed from those after the one draw
    want = _vmap_same(torch)
    with entered("cunumeric"), warnings.catch_warnings():
        warnings.simplefilter("error", tw.random.RngStateWarning)
        got = _vmap_same(tw)
    assert got == want == dict.fromkeys(want, True)


def test_states_of_other_streams_are_refused() -> None:
    backend = registry.backend_object("cunumeric")
    state = backend.get_rng_state()
    for bad in (state[:-1], state + b"\0", bytes(len(state)), b"\xff" * len(state)):
        with pytest.raises(ValueError, match="set_rng_state on .*: a state is 16 bytes"):
            backend.set_rng_state(bad)
    assert backend.get_rng_state() == state


def test_draws_past_the_generators_freed_repeat() -> None:
    # Every FLUSH_EVERY-th draw frees cuPyNumeric's generators made before it (their handles
    # queue in the library until then): the queue stays short, and the draws repeat.
    from cupynumeric.runtime import runtime as library
    from tensorweaver.contract import dtypes
    from tensorweaver_cunumeric.stream import FLUSH_EVERY

    backend = registry.backend_object("cunumeric")
    runs, queued = [], []
    for _ in range(2):
        backend.seed(3)
        run = [backend.random_integers((2,), 0, 2**31, dtypes.int64) for _ in range(FLUSH_EVERY)]
        queued.append(len(library.current_random_bitgen_zombies))
        runs.append(np.concatenate([backend.to_host(a) for a in run]))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert len(np.unique(runs[0])) > FLUSH_EVERY  # distinct generators, not one seed
    assert max(queued) < FLUSH_EVERY


def test_other_threads_read_and_put_back_the_state() -> None:
    # before: fork_rng in a thread other than Legate's raised (the core reseeded this
    # stream there with a draw, which only Legate's thread may make)
    registry.backend_object("cunumeric")
    found: list[Any] = []

    def run() -> None:
        try:
            with tw.device("numpy"):
                found.append(tuple(tw.func.vmap(lambda a: a * 2)(tw.ones(3, 2)).shape))
                with tw.random.fork_rng():
                    tw.rand(2)
        except RuntimeError as e:
            found.append(str(e))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert found == [(3, 2)]


class _Scope:
    """A stand-in for a Legate machine scope that says whether a call is inside it."""

    def __init__(self) -> None:
        self.depth = 0

    def __enter__(self) -> None:
        self.depth += 1

    def __exit__(self, *exc: Any) -> None:
        self.depth -= 1


#: Optional primitives that launch no task, so run outside the scope (it costs 0.25 ms a
#: call): Python-side records, and contiguous, which launches one only to copy.
_NO_TASKS = {"layout", "storage", "get_rng_state", "set_rng_state", "contiguous"}


def test_optional_primitives_run_in_the_machine_scope() -> None:
    # before: only the required primitives ran in the scope, so argsort, linalg, fft and
    # contiguous's copy ran on the GPUs Legate prefers while the CPU device was chosen
    from tensorweaver.contract import dtypes, ir
    from tensorweaver_cunumeric.backend import CunumericBackend

    backend, scope = CunumericBackend(registry.backend_object("cunumeric").device), _Scope()
    names = [n for n in (*ir.OPTIONAL, *ir.COMPOSITES) if callable(getattr(backend, n, None))]
    inside: dict[str, bool] = {}

    def probe(name: str) -> Any:
        def called(*args: Any) -> None:
            inside[name] = scope.depth > 0

        return called

    for name in [n for n in names if n != "contiguous"] + ["_copy"]:
        setattr(backend, name, probe(name))
    backend._bind_to(scope)
    for name in names:
        if name != "contiguous":
            getattr(backend, name)()
    x = backend.from_host(np.arange(6.0).reshape(2, 3), dtypes.float64)
    backend.contiguous(x)  # row-major already: no copy
    assert "_copy" not in inside
    backend.contiguous(backend.permute(x, (1, 0)))
    assert {"argsort", "linalg_qr", "fft_c2c", "acos"} <= set(names)
    want = {n: n not in _NO_TASKS for n in names if n != "contiguous"}
    assert inside == {**want, "_copy": True}


# -- layouts of the optional elementwise primitives -----------------------------------------

_A = np.random.default_rng(21).uniform(0.1, 0.9, (3, 4))
_B = np.random.default_rng(22).uniform(0.1, 0.9, (4, 3))
_ELEMENTWISE = {
    **{n: (lambda m, n=n: getattr(m, n)(m.tensor(_A).t())) for n in ("acos", "asin", "atan")},
    **{n: (lambda m, n=n: getattr(m, n)(m.tensor(_A).t())) for n in ("sinh", "cosh", "asinh")},
    "acosh": lambda m: m.acosh(m.tensor(_A).t() + 1),
    "atanh": lambda m: m.atanh(m.tensor(_A).t()),
    "atan2": lambda m: m.atan2(m.tensor(_A).t(), m.tensor(_B)),
    "atan2_second": lambda m: m.atan2(m.tensor(_B), m.tensor(_A).t()),
    "complex": lambda m: m.complex(m.tensor(_A).t(), m.tensor(_A).t()),
}


@pytest.mark.parametrize("case", sorted(_ELEMENTWISE))
def test_optional_elementwise_results_are_laid_out_as_torchs(case: str) -> None:
    # before: a new row-major array whatever the operands' layout (the required
    # elementwise primitives followed a transposed operand's axis order, these did not)
    want = _ELEMENTWISE[case](torch)
    with entered("cunumeric"):
        got = _ELEMENTWISE[case](tw)
        values = np.asarray(got)
    assert got.stride() == want.stride()
    np.testing.assert_allclose(values, want.numpy(), rtol=1e-12, atol=0)


@pytest.mark.xfail(
    strict=True,
    reason="core/tensorweaver/ops/host_fallback.py run_optional: the host's result comes "
    "back through from_host, a new row-major array on cuPyNumeric (numpy keeps NumPy's own "
    "order), so erfc of a transpose is laid out row-major where torch follows the operand. "
    "Fix: for an elementwise name, compute on the operands permuted to the first one's axis "
    "order (backend.layout) and permute the result back (backend.permute, a view)",
)
def test_host_computed_elementwise_results_are_laid_out_as_torchs() -> None:
    want = torch.special.erfc(torch.tensor(_A).t())
    with entered("cunumeric"), warnings.catch_warnings():
        warnings.simplefilter("ignore", tw.ops.host_fallback.HostFallbackWarning)
        got = tw.special.erfc(tw.tensor(_A).t())
    assert got.stride() == want.stride()
