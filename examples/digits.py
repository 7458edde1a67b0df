"""Handwritten digits with an MLP trained by ``tw.fit``, on NumPy by default.

scikit-learn's bundled 8x8 digits (1797 images, no download): a 64-256-10 MLP reaches about
97 % test accuracy in a few seconds on two CPU cores.

    python examples/digits.py [--device torch:cpu] [--epochs 20] [--plot history.png]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import tensorweaver as tw
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="numpy", help="e.g. numpy, torch:cpu, torch:cuda")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--plot", help="write the training curves to this PNG (matplotlib)")
    args = parser.parse_args()

    images, labels = load_digits(return_X_y=True)
    images = (images / 16.0).astype(np.float32)  # pixel values 0..16 -> 0..1
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=0.2, stratify=labels, random_state=0
    )
    x_train, x_val, y_train, y_val = train_test_split(
        x_train, y_train, test_size=0.1, stratify=y_train, random_state=0
    )

    tw.manual_seed(0)
    model = tw.models.MLP(64, [256], 10, dropout=0.1)
    start = time.perf_counter()
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
    )
    seconds = time.perf_counter() - start
    test = tw.evaluate(model, (x_test, y_test))
    print(
        f"test accuracy {test['accuracy']:.2%} (loss {test['loss']:.3f}) after "
        f"{history.epochs} epochs on {history.device} in {seconds:.1f} s"
    )
    if args.plot:
        history.plot(args.plot)
        print(f"training curves written to {args.plot}")


if __name__ == "__main__":
    main()
