"""A long training run that survives being killed: checkpoints, early stopping, resume.

Trains the digits MLP of ``examples/digits.py`` for up to ``--epochs`` epochs. Everything
the run needs is checkpointed into ``--checkpoint-dir`` every ``--every`` steps and at each
epoch's end (atomically: kill it at any moment); Ctrl-C stops it after the current step with
a checkpoint. Run the same command with ``--resume`` to continue where it stopped: the
result is bit-identical to a run that was never interrupted. Early stopping ends the run
when the validation loss stops improving and restores the best epoch's weights; the best
model is also saved on its own, and each epoch is logged to a CSV file.

    python examples/long_run.py [--device torch:cpu] [--checkpoint-dir runs/digits]
    python examples/long_run.py --resume        # after a kill or Ctrl-C
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import tensorweaver as tw
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tensorweaver.training.callbacks import (
    CSVLogger,
    EarlyStopping,
    LearningRateMonitor,
    ModelCheckpoint,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="numpy", help="e.g. numpy, torch:cpu, torch:cuda")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--checkpoint-dir", default=os.path.join("runs", "long_run"))
    parser.add_argument("--every", type=int, default=50, help="checkpoint every N steps")
    parser.add_argument("--patience", type=int, default=8, help="epochs without improvement")
    parser.add_argument("--resume", action="store_true", help="continue the run in the dir")
    args = parser.parse_args()

    images, labels = load_digits(return_X_y=True)
    images = (images / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=0.2, stratify=labels, random_state=0
    )
    x_train, x_val, y_train, y_val = train_test_split(
        x_train, y_train, test_size=0.1, stratify=y_train, random_state=0
    )

    tw.manual_seed(0)
    model = tw.models.MLP(64, [256], 10, dropout=0.1)
    run = args.checkpoint_dir
    # The same callbacks, in the same order, on every (re)start: their state is checkpointed.
    stopper = EarlyStopping(monitor="val_loss", patience=args.patience, restore_best_weights=True)
    callbacks = [
        LearningRateMonitor(),
        CSVLogger(os.path.join(run, "log.csv")),
        ModelCheckpoint(os.path.join(run, "best"), monitor="val_accuracy", save_top_k=1),
        stopper,
    ]
    os.makedirs(run, exist_ok=True)
    start = time.perf_counter()
    try:
        history = tw.fit(
            model,
            (x_train, y_train),
            epochs=args.epochs,
            batch_size=64,
            lr=1e-2,
            schedule="cosine",
            val=(x_val, y_val),
            device=args.device,
            seed=0,
            callbacks=callbacks,
            checkpoint_dir=run,
            checkpoint_every=args.every,
            resume=args.resume,
        )
    except KeyboardInterrupt:
        print(
            f"\nstopped; continue with: python examples/long_run.py --resume --checkpoint-dir {run}"
        )
        raise SystemExit(130) from None
    seconds = time.perf_counter() - start
    test = tw.evaluate(model, (x_test, y_test))
    stopped = (
        f"stopped early at epoch {stopper.stopped_epoch + 1}, " if stopper.stopped_epoch else ""
    )
    print(
        f"{history.epochs} epochs ({stopped}best epoch {stopper.best_epoch + 1}) on "
        f"{history.device} in {seconds:.1f} s this session; test accuracy "
        f"{test['accuracy']:.2%}; log {os.path.join(run, 'log.csv')}"
    )


if __name__ == "__main__":
    main()
