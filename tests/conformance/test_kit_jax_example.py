"""The JAX plugin in examples/tw-jax-backend, written only from the plugin documentation,
installs from its folder, works through the core, and passes a selected part of the kit
(``SELECTED``) and ``tw check``. The default suite installs it and runs it through the core
only: the kit and ``tw check`` on JAX, which compiles each op per shape, cost a worker about
a minute, so they run with ``TW_KIT_FULL=1``, as CI's scripts/check-kits.sh runs them right
after the suite (and scripts/check-jax-example.sh the whole kit)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from pip_targets import pip_target

JAX_EXAMPLE = Path(__file__).parents[2] / "examples" / "tw-jax-backend"


@pytest.fixture(scope="module")
def jax_example(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The JAX example plugin, installed from its folder as conftest.py installs the
    array-API one (it needs jax[cpu])."""
    if importlib.util.find_spec("jax") is None:
        pytest.skip('jax is not installed (scripts/install-dev.sh installs "jax[cpu]")')
    # This folder's conftest as pytest registered it: `import conftest` may find another
    # folder's when several are collected together.
    conftest = request.config.pluginmanager.get_plugin(str(Path(__file__).with_name("conftest.py")))
    return conftest.Env((pip_target(tmp_path_factory, JAX_EXAMPLE),))


#: The kit's packaging checks, every primitive defined, add and scatter_add on a float and an
#: integer dtype, bfloat16 (a dtype NumPy lacks, which the plugin maps itself) through cast,
#: add and scatter_add, every optional method (argsort, the plugin's costliest, on two dtypes
#: and one layout), and a layer. JAX compiles each op for each new shape, so the whole kit
#: takes 8 to 20 minutes on two cores: CI runs it whole right after the suite
#: (scripts/check-jax-example.sh), as does ``python -m tensorweaver.conformance --tw-backend
#: jax -n 2`` by hand (see the example's README).
SELECTED = (
    "packaging or (primitive and defined) "
    "or (primitive and (add/ or scatter_add/) and (float32 or int64 or bfloat16)) "
    "or (primitive and bfloat16 and cast) or (optional and not argsort) "
    "or (argsort and (float64 or int64 or transposed)) or layer/linear"
)


#: The tests that JAX's compilation makes slow: CI runs them (scripts/check-kits.sh).
KIT_FULL_ONLY = pytest.mark.skipif(
    not os.environ.get("TW_KIT_FULL"),
    reason="the kit or tw check on the JAX plugin, ~30 s of a worker each: CI runs it "
    "(TW_KIT_FULL=1, scripts/check-kits.sh)",
)


@KIT_FULL_ONLY
def test_jax_plugin_passes_the_selected_kit_checks(jax_example, tmp_path):
    run = jax_example.kit("jax", tmp_path, "-k", SELECTED)
    assert run.returncode == 0, run.output[-5000:]
    assert "jax passed every selected check" in run.verdict()
    # only the optional scatter_reduce, tril, triu, aminmax, host_aminmax, select, split and
    # memory_users, which the plugin leaves to the core, and the cases of complex numbers (the
    # plugin lists no complex dtype) are not run
    not_run = {c: o for c, o in run.outcomes.items() if o != "passed"}
    assert not_run and set(not_run.values()) == {"skipped"}, not_run
    left_out = (
        "optional/scatter_reduce/",
        "optional/triangles/",
        "optional/aminmax/",
        "optional/host_aminmax/",
        "optional/select/",
        "optional/split/",
        "optional/memory_users/",
        "fft/",
        "complex/",
    )
    assert all(c.startswith(left_out) for c in not_run), not_run
    assert any(c.startswith("optional/scatter_reduce/") for c in not_run), not_run
    assert len([c for c in run.outcomes if c.endswith("/defined")]) > 50
    # JAX has every dtype, so nothing is skipped for want of one
    assert run.outcomes["primitive/add/bfloat16"] == "passed"
    assert run.outcomes["primitive/scatter_add/int64"] == "passed"
    assert run.outcomes["optional/argsort/float64"] == "passed"


def test_jax_plugin_runs_tensorweaver(jax_example):
    done = jax_example.run(
        sys.executable,
        "-c",
        "import sys\n"
        "import tensorweaver as tw\n"
        "print('jax' in sys.modules)\n"  # importing tensorweaver does not import JAX
        "tw.set_backend('jax')\n"
        "import jax\n"
        "print(jax.config.jax_enable_x64)\n"  # creating the backend switched it on
        "x = tw.arange(6, dtype=tw.float64).reshape(2, 3).requires_grad_()\n"
        "(x.softmax(-1) * x).sum().backward()\n"
        "print(x.device, x.grad.device, x.grad.dtype, tw.arange(3).dtype)\n"
        "print(*x.grad.flatten().tolist())",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        "False",
        "True",
        "jax:cpu:0 jax:cpu:0 tensorweaver.float64 tensorweaver.int64",
    ]
    grad = [float(v) for v in lines[3].split()]
    rows = np.arange(6.0).reshape(2, 3)
    p = np.exp(rows - rows.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    # d/dx sum(softmax(x) * x) = p * (1 + x - sum(p * x)), row by row
    expected = p * (1 + rows - (p * rows).sum(1, keepdims=True))
    np.testing.assert_allclose(grad, expected.ravel(), rtol=1e-12)


@KIT_FULL_ONLY
def test_tw_check_on_the_jax_example(jax_example):
    # (layer/gru, slow to compile in JAX, runs in CI's whole kit)
    done = jax_example.tw(
        "check", "--backend", "jax", "--only", "primitive/scatter/*", "--only", "layer/linear"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("OK: largest difference")
