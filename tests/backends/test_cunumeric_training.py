"""Training on real cuPyNumeric: the same losses as NumPy, with one Legate CPU or two.

Each run is its own process, because Legate's machine (how many CPUs) is fixed when its
runtime starts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cunumeric_child import run_script
from tensorweaver_cunumeric import legate_config

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "mlp_scaleout.py"

pytestmark = pytest.mark.skipif(
    legate_config.library_name() is None or legate_config.nvidia_driver(),
    reason="needs cuPyNumeric installed and run on the CPU (the project's CPU set-up)",
)


def _run(device: str, *flags: str, **environ: str) -> dict:
    return run_script(SCRIPT, "--device", device, "--steps", "15", *flags, timeout=600, **environ)


@pytest.fixture(scope="module")
def numpy_losses() -> list[float]:
    return _run("numpy")["losses"]


def test_mlp_trains_on_cunumeric_to_the_same_losses_as_numpy(numpy_losses) -> None:
    losses = _run("cunumeric")["losses"]
    assert numpy_losses[-1] < 0.5 * numpy_losses[0]  # it does learn
    np.testing.assert_allclose(losses, numpy_losses, rtol=1e-10)


def test_two_legate_cpus_give_the_same_result_as_one(numpy_losses) -> None:
    config = "--cpus 2 --gpus 0 --utility 1 --sysmem 2000 --logging gpu=6"
    run = _run("cunumeric", LEGATE_AUTO_CONFIG="0", LEGATE_CONFIG=config)
    assert run["detail"]["cpus"] == 2  # Legate really started with two CPU processors
    np.testing.assert_allclose(run["losses"], numpy_losses, rtol=1e-10)


def test_compiled_step_on_cunumeric_replays_to_the_same_losses(numpy_losses) -> None:
    # tw.compile on cuPyNumeric: the core's replay of the recorded Legate calls (no backend
    # hook) must give the eager losses, and replay (3 traces: gradients and the momentum
    # buffers appear on the first steps, then two traces agree).
    run = _run("cunumeric", "--compile")
    assert run["traces"] <= 3 < len(run["losses"])
    np.testing.assert_allclose(run["losses"], numpy_losses, rtol=1e-10)
