"""fit(checkpoint_dir=..., resume=True): runs killed with SIGKILL at random points, and
resumed, end with the weights of an uninterrupted run, bit for bit; Ctrl-C writes a
checkpoint; a checkpoint write killed halfway leaves the previous one whole; resuming into
another model or data is a clear error."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import resume_child
import tensorweaver as tw
from tensorweaver.training import fit
from tensorweaver.training.callbacks import CSVLogger, LambdaCallback
from tensorweaver.training.checkpoint import store

HERE = Path(__file__).parent
CHILD = HERE / "resume_child.py"
WRITER = HERE / "checkpoint_writer_child.py"
#: The SIGKILL chains, and every round of the killed checkpoint write, run only with
#: ``TW_RESUME_FULL=1``, as CI's scripts/test-remainder.sh runs them right after the suite: each
#: killed child starts an interpreter (torch's a few seconds), ~25 s of a worker per chain.
FULL = bool(os.environ.get("TW_RESUME_FULL"))
CHAINS_IN_CI = pytest.mark.skipif(
    not FULL,
    reason="a chain of SIGKILLed children, ~25 s of a worker: CI runs it (TW_RESUME_FULL=1, "
    "scripts/test-remainder.sh)",
)


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    """A scratch directory, in memory where the machine has a tmpfs: a checkpoint is
    fsync'ed, which costs tens of milliseconds on a disk and nothing there."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        path = Path(tempfile.mkdtemp(prefix="tw-resume-", dir=shm))
        yield path
        shutil.rmtree(path, ignore_errors=True)
    else:
        yield tmp_path


def _weights(model: tw.nn.Module) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}


def _assert_bitwise(mine: dict[str, np.ndarray], reference: dict[str, np.ndarray]) -> None:
    assert mine.keys() == reference.keys()
    for name in reference:
        assert mine[name].dtype == reference[name].dtype
        assert mine[name].tobytes() == reference[name].tobytes(), name


def _start(device: str, directory: Path, out: Path, seed: int | None) -> subprocess.Popen:
    args = [sys.executable, str(CHILD), device, str(directory), str(out)]
    if seed is not None:
        args += ["--seed", str(seed)]
    log = open(directory.parent / "child-stderr.txt", "a")  # noqa: SIM115
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=log, text=True)


def _kill_chain(device: str, base: Path, seed: int | None, kills: int, rng_seed: int) -> None:
    """Start the child ``kills`` times, SIGKILL it at a random step or after a random delay,
    then let it finish; its final weights and CSV log must be the uninterrupted run's."""
    rng = np.random.default_rng(rng_seed)
    reference_dir, run, out = base / "reference", base / "run", base / "final.safetensors"
    reference_dir.mkdir()
    run.mkdir()
    reference, _ = resume_child.train(device, str(reference_dir), seed=seed)

    starts = []
    for kill in range(kills):
        child = _start(device, run, out, seed)
        ready = child.stdout.readline().split()  # type: ignore[union-attr]
        assert ready and ready[0] == "ready", f"the child did not start: {ready}"
        starts.append(int(ready[1]))
        if kill % 2 == 0:  # at a random step (checkpoints are every 7 steps and each epoch)
            target = f"step {starts[-1] + int(rng.integers(1, 25))}"
            for line in child.stdout:  # type: ignore[union-attr]
                if line.strip() == target:
                    break
        else:  # at a random moment: in a step, a checkpoint write, a validation
            time.sleep(float(rng.uniform(0.0, 0.15)))  # at most ~50 steps of 3 ms
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()  # type: ignore[union-attr]
        assert child.returncode == -signal.SIGKILL, "the child ended before it was killed"
    child = _start(device, run, out, seed)
    child.communicate(timeout=120)
    assert child.returncode == 0, (base / "child-stderr.txt").read_text()[-3000:]

    assert starts[0] == 0 and max(starts) > 0, f"no kill came after a checkpoint: {starts}"
    with tw.device("numpy"):
        final = {k: v.numpy() for k, v in tw.load(out).items()}
    _assert_bitwise(final, _weights(reference))
    assert (run / "log.csv").read_text() == (reference_dir / "log.csv").read_text()


@CHAINS_IN_CI
def test_sigkilled_numpy_run_resumes_bit_identical(run_dir: Path) -> None:
    # No fit seed: the shuffling draws from tw.default_generator. Ten kills (five at a step,
    # five at a moment).
    _kill_chain("numpy", run_dir, None, kills=10, rng_seed=1)


@CHAINS_IN_CI
def test_sigkilled_torch_run_resumes_bit_identical(run_dir: Path) -> None:
    pytest.importorskip("torch")
    # fit(seed=...): the shuffling draws from the DataLoader's own generator. Four kills (two
    # at a step, two at a moment): each child imports torch (~3 s, far more on a loaded
    # machine).
    _kill_chain("torch:cpu", run_dir, 5, kills=4, rng_seed=2)


def _killed_writer(directory: Path, stall: str | None, delay: float) -> list[list[str]]:
    """Start the writer, SIGKILL it once it stalls (or ``delay`` seconds after its first
    save), and return what it printed."""
    args = [sys.executable, str(WRITER), str(directory), *([stall] if stall else [])]
    child = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    printed = [child.stdout.readline().split()]  # type: ignore[union-attr]
    assert printed[0][:1] == ["saved"]
    if stall:
        printed += [child.stdout.readline().split()]  # type: ignore[union-attr]
        assert printed[-1] == ["stalled"]
    else:
        time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    printed += [line.split() for line in child.stdout]  # type: ignore[union-attr]
    child.wait()
    child.stdout.close()  # type: ignore[union-attr]
    return [p for p in printed if p[:1] == ["saved"]]


@pytest.mark.parametrize("stall", ["--stall-in-write", "--stall-in-rename", None])
def test_a_checkpoint_write_killed_halfway_leaves_the_previous_one(
    tmp_path: Path, stall: str | None
) -> None:
    rng = np.random.default_rng(3)
    directory = tmp_path / "run"
    for _ in range(3 if FULL and not stall else 1):
        saved = _killed_writer(directory, stall, float(rng.uniform(0.0, 0.2)))
        last = int(saved[-1][1])
        if stall:  # killed inside the write of version 1: its temporary file is left
            assert last == 0
            leftovers = [p.name for p in directory.iterdir() if p.name != store.FILENAME]
            assert len(leftovers) == 1 and leftovers[0].startswith(".checkpoint.safetensors.")
        contents = store.read(str(directory), tw.device("numpy"))  # checksums verified
        assert contents is not None
        version = contents["version"]
        # The last version reported, or one whose rename the kill beat the report of.
        assert version in (last, last + 1)
        np.testing.assert_array_equal(contents["weights"].numpy(), np.full(1_000_000, version))
    # The next write removes what a killed one left.
    with tw.device("numpy"):
        store.write(str(directory), {"version": -1})
    assert [p.name for p in directory.iterdir()] == [store.FILENAME]


# -- in-process: Ctrl-C, errors, a finished run -------------------------------------------


def _small_run(directory: Path, **options):
    """resume_child's run, shorter, on NumPy."""
    return resume_child.train("numpy", str(directory), **{"epochs": 3, **options})


@pytest.fixture
def default_ctrl_c():
    """Python's own Ctrl-C handler, as a program starts with: a library another test loaded
    in this worker process may have installed its own (a run then leaves SIGINT alone)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("default_ctrl_c")
def test_ctrl_c_writes_a_checkpoint_and_the_run_resumes_bit_identical(run_dir: Path) -> None:
    (run_dir / "ref").mkdir()
    (run_dir / "run").mkdir()
    reference, reference_history = _small_run(run_dir / "ref")
    interrupted_at = []

    def ctrl_c(state):
        if state.step == 23 and not interrupted_at:  # not a checkpoint step (every 7)
            interrupted_at.append(state.step)
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt, match="checkpoint"):
        _small_run(run_dir / "run", on_step=ctrl_c)
    saved = store.read(str(run_dir / "run"), tw.device("numpy"))
    assert saved["position"]["step"] == 23 and not saved["finished"]
    # Python's own Ctrl-C handling is back.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    model, history = _small_run(run_dir / "run")
    _assert_bitwise(_weights(model), _weights(reference))
    assert history.train_loss == reference_history.train_loss
    assert history.metrics == reference_history.metrics


def test_a_run_with_gradient_accumulation_resumes_bit_identical(run_dir: Path) -> None:
    (run_dir / "ref").mkdir()
    (run_dir / "run").mkdir()
    reference, _ = _small_run(run_dir / "ref", accumulate=3, every=2)

    def fail(state):
        # 19 batches an epoch make 7 steps (the last of one batch); in epoch 1, batch 10 is
        # inside an accumulation, after step 10 (batch 9), which was checkpointed.
        if state.epoch == 1 and state.batch == 10:
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        _small_run(run_dir / "run", accumulate=3, every=2, on_step=fail)
    saved = store.read(str(run_dir / "run"), tw.device("numpy"))
    assert saved["position"] == {"epoch": 1, "batch": 9, "step": 10, "stop_training": False}
    model, _ = _small_run(run_dir / "run", accumulate=3, every=2)
    _assert_bitwise(_weights(model), _weights(reference))


def test_resuming_a_finished_run_trains_no_more(run_dir: Path) -> None:
    model, history = _small_run(run_dir)
    calls = []
    again = tw.models.MLP(resume_child.FEATURES, [32], resume_child.CLASSES, dropout=0.2)
    history_again = fit(
        again,
        resume_child.data(600, 1),
        val=resume_child.data(100, 2),
        epochs=3,
        batch_size=32,
        lr=1e-2,
        schedule="cosine",
        progress=False,
        callbacks=[
            LambdaCallback(on_train_begin=calls.append, on_train_batch_end=calls.append),
            CSVLogger(run_dir / "log.csv"),
        ],
        checkpoint_dir=run_dir,
        resume=True,
    )
    assert calls == []
    _assert_bitwise(_weights(again), _weights(model))
    assert history_again.train_loss == history.train_loss


def _fit_again(directory: Path, model: tw.nn.Module, x: np.ndarray, y: np.ndarray, **options):
    kwargs = {
        "epochs": 3,
        "batch_size": 32,
        "lr": 1e-2,
        "schedule": "cosine",
        "progress": False,
        "val": resume_child.data(100, 2),
        "checkpoint_dir": directory,
        "callbacks": [LambdaCallback(), CSVLogger(directory / "log.csv")],
        "resume": True,
    }
    return fit(model, (x, y), **{**kwargs, **options})


def test_resuming_with_another_model_or_data_is_a_clear_error(run_dir: Path) -> None:
    features, classes = resume_child.FEATURES, resume_child.CLASSES
    x, y = resume_child.data(600, 1)
    # Stop the run in its second epoch, as a kill would, after its first checkpoint.
    with pytest.raises(RuntimeError, match="stop here"):
        _fit_again(
            run_dir,
            tw.models.MLP(features, [32], classes),
            x,
            y,
            callbacks=[
                LambdaCallback(on_epoch_begin=_raise_in_epoch(1, "stop here")),
                CSVLogger(run_dir / "log.csv"),
            ],
        )
    wider = tw.models.MLP(features, [48], classes)
    with pytest.raises(ValueError, match=r"model differs.*0.weight is \(48, 16\)"):
        _fit_again(run_dir, wider, x, y)
    deeper = tw.models.MLP(features, [32, 32], classes)
    with pytest.raises(ValueError, match="model differs.*not in the checkpoint"):
        _fit_again(run_dir, deeper, x, y)
    same = tw.models.MLP(features, [32], classes)
    with pytest.raises(ValueError, match="training data differs.*samples 500 here, 600 there"):
        _fit_again(run_dir, same, x[:500], y[:500])
    padded = np.concatenate([x, x[:, :1]], axis=1)
    with pytest.raises(ValueError, match="training batch differs.*inputs"):
        _fit_again(run_dir, same, padded, y)
    with pytest.raises(ValueError, match="callbacks"):
        _fit_again(run_dir, same, x, y, callbacks=[LambdaCallback()])
    with pytest.raises(ValueError, match="pass resume=True to continue it"):
        _fit_again(run_dir, same, x, y, resume=False)
    with pytest.raises(ValueError, match="resume=True needs the checkpoint_dir"):
        fit(same, (x, y), resume=True, progress=False)


def _raise_in_epoch(epoch: int, message: str):
    def hook(state):
        if state.epoch == epoch:
            raise RuntimeError(message)

    return hook


def test_a_damaged_checkpoint_is_refused(run_dir: Path) -> None:
    _small_run(run_dir, epochs=1)
    path = run_dir / store.FILENAME
    blob = bytearray(path.read_bytes())
    blob[-5] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match="cannot be resumed from.*remove it to start over"):
        _small_run(run_dir, epochs=1)
