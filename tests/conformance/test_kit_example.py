"""The worked third-party plugin in examples/ installs from its folder, works through the
core, and the kit calls it conformant.

The default suite leaves out the kit's run on it (~20 s of a worker); CI runs the whole kit on
it right after the suite (scripts/check-kits.sh, ``TW_KIT_FULL=1``)."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.mark.skipif(
    not os.environ.get("TW_KIT_FULL"),
    reason="the kit on the example plugin, ~20 s of a worker: CI runs it whole "
    "(TW_KIT_FULL=1, scripts/check-kits.sh)",
)
def test_example_plugin_is_conformant(example, tmp_path):
    run = example.kit("arrayapi", tmp_path)
    assert run.returncode == 0, run.output[-5000:]
    assert "arrayapi is conformant" in run.verdict(), run.verdict()
    # it lacks float16 and bfloat16, so those checks are skipped, not failed
    assert run.outcomes["primitive/add/float16"] == "skipped"
    assert run.outcomes["layer/lstm"] == "passed"
    # the optional argsort it defines is checked like a primitive
    assert run.outcomes["optional/argsort/float32"] == "passed"
    assert run.outcomes["optional/argsort/bool"] == "passed"


def test_example_plugin_runs_tensorweaver(example):
    done = example.run(
        sys.executable,
        "-c",
        "import tensorweaver as tw\n"
        "x = tw.arange(6.0, device='arrayapi').reshape(2, 3).requires_grad_()\n"
        "(x.softmax(-1) * x).sum().backward()\n"
        "print(x.device, x.grad.device, type(x.native).__module__)",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "arrayapi:cpu:0",
        "arrayapi:cpu:0",
        "array_api_strict._array_object",
    ]


def test_tw_check_on_the_example(example):
    done = example.tw(
        "check", "--backend", "arrayapi", "--only", "layer/gru", "--only", "primitive/erf"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("OK: largest difference")
