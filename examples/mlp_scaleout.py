"""Train a small MLP in float64 and print its losses as JSON: the scale-out check.

The same script runs unchanged on one CPU, on Legate's CPUs or GPUs, or on many nodes:

    python examples/mlp_scaleout.py --device numpy
    LEGATE_CONFIG="--cpus 2 --gpus 0 --utility 1 --sysmem 2000" \\
        python examples/mlp_scaleout.py --device cunumeric
    legate --gpus 4 examples/mlp_scaleout.py --device cunumeric:gpu
    legate --nodes 2 --gpus 8 examples/mlp_scaleout.py --device cunumeric:gpu

``--compile`` runs the step through ``tw.compile``: traced on its first calls, then replayed
(the losses must not change).

The weights are drawn on the host from a fixed seed, so every device starts the same.
"""

from __future__ import annotations

import argparse
import json

import numpy as np
import tensorweaver as tw
from tensorweaver import nn


def train(device: str, steps: int, batch: int, compile: bool = False) -> tuple[list[float], int]:
    """The losses, and how many calls were traced (``steps`` without ``compile``)."""
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal((batch, 16))
    y_host = np.sin(x_host @ rng.standard_normal((16, 1)))
    with tw.device(device):
        model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)).double()
        with tw.no_grad():
            for p in model.parameters():  # host-drawn weights: identical on every device
                p.copy_(tw.tensor(rng.uniform(-0.3, 0.3, p.shape)))
        x, y = tw.tensor(x_host), tw.tensor(y_host)
        optimizer = tw.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step() -> tw.Tensor:
            optimizer.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            optimizer.step()
            return loss

        run = tw.compile(step) if compile else step
        losses = [run().item() for _ in range(steps)]
    return losses, run.traces if compile else steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="numpy")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--compile", action="store_true", help="run the step via tw.compile")
    args = parser.parse_args()
    losses, traces = train(args.device, args.steps, args.batch, args.compile)
    # What the device really had (for cuPyNumeric: the CPUs and GPUs Legate started with).
    device = tw.get_backend().name if args.device == "numpy" else args.device
    record = next(d for d in tw.devices(probe=True) if d.name.startswith(device.split(":")[0]))
    print(
        json.dumps(
            {"device": record.name, "detail": record.detail, "losses": losses, "traces": traces}
        )
    )


if __name__ == "__main__":
    main()
