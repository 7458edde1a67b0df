"""A small training run for the resume tests: run as a script (to be killed and resumed)
or imported (for the uninterrupted reference run).

    python resume_child.py DEVICE CHECKPOINT_DIR OUT [--seed S] [--every N] [--epochs E]

prints ``ready STEP`` when training (re)starts at optimizer step STEP, ``step N`` after each
step (taking at least 3 ms each), and writes the final weights (``tw.save``) to OUT.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable

import numpy as np
import tensorweaver as tw
from tensorweaver.training import History, fit
from tensorweaver.training.callbacks import CSVLogger, LambdaCallback

FEATURES, CLASSES = 16, 4


def data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` samples of a noisy linear 4-class problem."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, FEATURES)).astype(np.float32)
    w = np.random.default_rng(99).standard_normal((FEATURES, CLASSES))
    y = (x @ w + 0.5 * rng.standard_normal((n, CLASSES))).argmax(1).astype(np.int64)
    return x, y


def train(
    device: str,
    checkpoint_dir: str,
    *,
    seed: int | None = None,
    every: int = 7,
    epochs: int = 16,
    report: bool = False,
    on_step: Callable[[Any], None] | None = None,
    **options: Any,
) -> tuple[tw.nn.Module, History]:
    """Train an MLP with dropout (so the backends' streams matter), shuffling, a cosine
    schedule, AdamW and a CSV log; resume from ``checkpoint_dir`` if it holds a run.
    ``on_step(state)`` runs after each batch; ``options`` go to ``fit``."""
    tw.manual_seed(0)
    with tw.device(device):
        model = tw.models.MLP(FEATURES, [32], CLASSES, dropout=0.2)

    def ready(state):
        if report:
            print(f"ready {state.step}", flush=True)

    def step(state):
        if report:
            print(f"step {state.step}", flush=True)
            # A floor on a step's time, so that a kill after a random delay lands inside the
            # run however fast the machine is (sleeping changes nothing the run computes).
            time.sleep(0.003)
        if on_step is not None:
            on_step(state)

    callbacks = [
        LambdaCallback(on_train_begin=ready, on_train_batch_end=step),
        CSVLogger(os.path.join(checkpoint_dir, "log.csv")),
    ]
    history = fit(
        model,
        data(600, 1),
        val=data(100, 2),
        epochs=epochs,
        batch_size=32,
        lr=1e-2,
        schedule="cosine",
        seed=seed,
        progress=False,
        callbacks=callbacks,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=every,
        resume=True,
        **options,
    )
    return model, history


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("device")
    parser.add_argument("checkpoint_dir")
    parser.add_argument("out")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--every", type=int, default=7)
    parser.add_argument("--epochs", type=int, default=16)
    args = parser.parse_args()
    os.makedirs(args.checkpoint_dir, exist_ok=True)
    model, _ = train(
        args.device,
        args.checkpoint_dir,
        seed=args.seed,
        every=args.every,
        epochs=args.epochs,
        report=True,
    )
    tw.save(model.state_dict(), args.out)
    print("done", flush=True)


if __name__ == "__main__":
    sys.exit(main())
