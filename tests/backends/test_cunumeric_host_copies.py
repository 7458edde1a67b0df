"""The cuPyNumeric backend copies device arrays to the host only in ``to_host`` (the IR's
rule): no ``.flags``, ``bool()``, ``int()`` or ``__array__`` of a device array elsewhere,
its own or inside a library call, since each copies the array to the host and waits for
every pending task.

Every such copy goes through ``DeferredArray.__numpy_array__`` (cuPyNumeric's ``__array__``,
``.flags``, ``.strides``, ``item()``, ``bool()``, ``int()`` all do), so the tests count the
calls made outside ``to_host`` while the kit's primitive cases run, each primitive once in
float32 and once in every layout, and while the core computes a training step.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterator

import numpy as np
import pytest
import tensorweaver as tw
from tensorweaver import registry
from tensorweaver.check.context import Context
from tensorweaver.check.layouts import EDGE
from tensorweaver.check.report import FAIL
from tensorweaver.check.runner import evaluate, select
from tensorweaver_cunumeric import legate_config
from tw_backends import entered

pytestmark = pytest.mark.skipif(
    legate_config.library_name() is None,
    reason="cuPyNumeric is not installed (pip install tensorweaver[cunumeric])",
)


@pytest.fixture
def host_copies(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Where each host copy outside ``to_host`` was made (the innermost frames)."""
    backend = registry.backend_object("cunumeric")
    from cupynumeric._thunk.deferred import DeferredArray

    copies: list[str] = []
    inside_to_host = [False]
    to_host, numpy_array = backend.to_host, DeferredArray.__numpy_array__

    def allowed(a):
        inside_to_host[0] = True
        try:
            return to_host(a)
        finally:
            inside_to_host[0] = False

    def counted(self):
        if not inside_to_host[0]:
            copies.append("".join(traceback.format_stack(limit=6)[:-1]))
        return numpy_array(self)

    monkeypatch.setattr(backend, "to_host", allowed)
    monkeypatch.setattr(DeferredArray, "__numpy_array__", counted)
    yield copies


def test_no_primitive_copies_to_the_host(host_copies):
    ctx = Context(registry.backend_object("cunumeric"))
    variants = ("float32", "bool", *EDGE)
    cases = [c for c in select(["primitive", "optional"]) if c.id.rsplit("/", 1)[1] in variants]
    names = {c.id.split("/")[1] for c in cases}
    assert len(names) >= 45  # every primitive that takes an array, and argsort
    failed = [r for r in (evaluate(c, ctx) for c in cases) if r.verdict == FAIL]
    assert not host_copies, f"{len(host_copies)} host copies, the first:\n{host_copies[0]}"
    assert not failed, failed[0].detail


def test_a_training_step_copies_nothing_but_what_it_reads(host_copies):
    with entered("cunumeric", float64=True):
        x = tw.tensor(np.random.default_rng(0).uniform(-1, 1, (4, 6)))
        layer = tw.nn.Linear(6, 3)
        hidden = x.t().reshape(3, 8)[:, ::2].reshape(2, 6)  # reshapes of views
        loss = (layer(hidden).relu() @ layer.weight).mean() + layer(x[1:]).sum()
        loss.backward()
        for p in layer.parameters():
            p.grad.sum()
    assert not host_copies, f"{len(host_copies)} host copies, the first:\n{host_copies[0]}"
