"""A variational autoencoder on scikit-learn's 8x8 digits, trained by ``tw.fit``.

The VAE compresses each 64-pixel image to an 8-dimensional Gaussian code. The script prints
the negative ELBO (nats per image) on held-out digits and how well a linear classifier reads
the digit from the code, which the VAE learnt without ever seeing a label.

    python examples/vae.py [--device torch:cpu] [--epochs 40]
"""

from __future__ import annotations

import argparse

import numpy as np
import tensorweaver as tw
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from tensorweaver.models import elbo_loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="numpy", help="e.g. numpy, torch:cpu, torch:cuda")
    parser.add_argument("--epochs", type=int, default=40)
    args = parser.parse_args()

    images, labels = load_digits(return_X_y=True)
    images = (images / 16.0).astype(np.float32)
    x_train, x_test, y_train, y_test = train_test_split(
        images, labels, test_size=0.2, stratify=labels, random_state=0
    )

    tw.manual_seed(0)
    model = tw.models.VAE(64, hidden_features=128, latent_features=8)
    history = tw.fit(
        model,
        (x_train, x_train),  # an autoencoder's target is its input
        loss=elbo_loss,
        metrics=(),
        val=(x_test, x_test),
        epochs=args.epochs,
        batch_size=64,
        lr=2e-3,
        device=args.device,
        seed=0,
    )
    print(
        f"negative ELBO: train {history.train_loss[-1]:.1f}, test {history.val_loss[-1]:.1f} "
        f"nats per image on {history.device} in {history.wall_time:.1f} s"
    )

    # The code of an image is its posterior mean.
    codes_train = tw.predict(model, x_train)[1].numpy()
    codes_test = tw.predict(model, x_test)[1].numpy()
    probe = LogisticRegression(max_iter=2000).fit(codes_train, y_train)
    print(f"linear probe on the 8-d codes: {probe.score(codes_test, y_test):.2%} test accuracy")


if __name__ == "__main__":
    main()
