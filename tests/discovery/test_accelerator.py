"""``tw.accelerator`` as ``torch.accelerator``: here against torch's own answers, and in
child processes over real device records: cuPyNumeric planning a GPU it has not started
(the accelerator, not yet available) and the simulated accelerator plugin ``fakeaccel``
with two usable devices (indices, scopes and errors).
"""

from __future__ import annotations

import pytest
import tensorweaver as tw
import torch
from discovery.conftest import Env

NO_ACCELERATOR = pytest.mark.skipif(
    tw.accelerator.is_available() or torch.accelerator.is_available(),
    reason="checks the answers without an accelerator",
)
QUERIES = """
    import json, tensorweaver as tw
    a = tw.accelerator
    print(json.dumps({
        "type": repr(a.current_accelerator()),
        "checked": repr(a.current_accelerator(check_available=True)),
        "available": a.is_available(),
        "count": a.device_count(),
    }))
"""


def test_queries_over_torch_alone_match_torch() -> None:
    answers = Env(()).json(QUERIES, TENSORWEAVER_DISABLE_PLUGINS="cunumeric")
    assert answers == {
        "type": repr(torch.accelerator.current_accelerator()),
        "checked": repr(torch.accelerator.current_accelerator(check_available=True)),
        "available": torch.accelerator.is_available(),
        "count": torch.accelerator.device_count(),
    }


@NO_ACCELERATOR
@pytest.mark.parametrize(
    "call",
    [
        lambda a: a.current_device_index(),
        lambda a: a.set_device_index(0),
        lambda a: a.synchronize(),
        lambda a: a.device_index(0).__enter__(),
    ],
)
def test_without_an_accelerator_device_calls_raise_like_torch(call) -> None:
    with pytest.raises(RuntimeError):
        call(torch.accelerator)
    with pytest.raises(RuntimeError, match="no accelerator"):
        call(tw.accelerator)
    with tw.accelerator.device_index(None), torch.accelerator.device_index(None):
        pass  # None changes nothing, and needs no device


def test_a_planned_cunumeric_gpu_is_the_accelerator_but_not_available() -> None:
    # Without a probe cuPyNumeric reports the GPU its Legate configuration plans, unprobed.
    answers = Env(()).json(
        QUERIES, LEGATE_CONFIG="--gpus 1 --cpus 1", TENSORWEAVER_DISABLE_PLUGINS="torch"
    )
    assert answers == {
        "type": "device(type='gpu')",
        "checked": "None",
        "available": False,
        "count": 0,
    }


DEVICES = """
    import json, tensorweaver as tw
    a = tw.accelerator
    out = {"index": a.current_device_index()}
    a.set_device_index(1)
    out["after set"] = [a.current_device_index(), tw.zeros(1).device.name]
    with a.device_index(0):
        out["inside"] = [a.current_device_index(), tw.zeros(1).device.name]
    out["after block"] = a.current_device_index()
    a.set_device_index("gpu:0")
    out["by spec"] = a.current_device_index()
    a.synchronize(), a.synchronize(1), a.synchronize(tw.device("gpu", 0))
    calls = {
        "set 2": lambda: a.set_device_index(2),
        "synchronize 5": lambda: a.synchronize(5),
        "block 3": lambda: a.device_index(3).__enter__(),
        "cpu": lambda: a.synchronize("cpu"),
    }
    for name, call in calls.items():
        try:
            call()
            out[name] = None
        except Exception as exc:
            out[name] = type(exc).__name__
    print(json.dumps(out))
"""


def test_usable_accelerator_devices(accel: Env) -> None:
    env = {"TENSORWEAVER_DISABLE_PLUGINS": "torch,cunumeric", "TW_FAKEACCEL_GPUS": "2"}
    assert accel.json(QUERIES, **env) == {
        "type": "device(type='gpu')",
        "checked": "device(type='gpu')",
        "available": True,
        "count": 2,
    }
    assert accel.json(DEVICES, **env) == {
        "index": 0,
        "after set": [1, "fakeaccel:gpu:1"],
        "inside": [0, "fakeaccel:gpu:0"],
        "after block": 1,
        "by spec": 0,
        "set 2": "RuntimeError",
        "synchronize 5": "RuntimeError",
        "block 3": "RuntimeError",
        "cpu": "ValueError",
    }
