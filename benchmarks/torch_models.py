"""Training steps of four models: TensorWeaver on torch:cpu against PyTorch eager (issue 4).

Run: python benchmarks/torch_models.py [--models mlp,cnn,lm,unet] [--repeat 11] [--threads 1]

  mlp  784-512-512-10 with ReLU, batch 256 (as benchmarks/mlp_step.py)
  cnn  conv 3x3 (1->16) ReLU maxpool 2, conv 3x3 (16->32) ReLU maxpool 2, linear to 10;
       28x28 inputs, batch 64
  lm   a 2-layer causal Transformer LM: byte tokens (vocab 256), token and position
       embeddings, d_model 128, 4 heads, feed-forward 512, post-norm, no dropout, final
       LayerNorm and a linear head; context 64, batch 16
  unet a U-Net as tensorweaver.models.UNet(1, 2, base_channels=8, depth=3): per stage two
       conv 3x3 - InstanceNorm (affine) - ReLU, max pooling down, transposed conv 2x2 up,
       skip connections by concatenation, a 1x1 head; 64x64 images with per-pixel
       classes, batch 4

A step is zero_grad, forward, cross-entropy, backward and a plain SGD update (lr 0.01).
Each model is written once against PyTorch's API and built from ``tw.nn`` on torch:cpu and
from ``torch.nn``; tw's parameters are copied from torch's, so after one step both must
have the same loss. Target: tw-torch within 1.10x of torch. A model whose ``tw.nn`` names
are missing is skipped; the script then lists the names and exits with status 1.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import harness
import mlp_step
import numpy as np
import tensorweaver as tw
import torch

TARGET = 1.10
VOCAB, D_MODEL, HEADS, FEED_FORWARD, LAYERS, CONTEXT, LM_BATCH = 256, 128, 4, 512, 2, 64, 16
CNN_BATCH = 64
UNET_BASE, UNET_DEPTH, UNET_SIZE, UNET_BATCH = 8, 3, 64, 4


def mlp(lib: Any) -> Any:
    nn = lib.nn
    sizes = mlp_step.SIZES
    return nn.Sequential(
        nn.Linear(sizes[0], sizes[1]),
        nn.ReLU(),
        nn.Linear(sizes[1], sizes[2]),
        nn.ReLU(),
        nn.Linear(sizes[2], sizes[3]),
    )


def cnn(lib: Any) -> Any:
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, 10),
    )


def lm(lib: Any) -> Any:
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tokens = nn.Embedding(VOCAB, D_MODEL)
            self.positions = nn.Embedding(CONTEXT, D_MODEL)
            layer = nn.TransformerEncoderLayer(
                D_MODEL, HEADS, FEED_FORWARD, dropout=0.0, batch_first=True
            )
            self.encoder = nn.TransformerEncoder(layer, LAYERS)
            self.norm = nn.LayerNorm(D_MODEL)
            self.head = nn.Linear(D_MODEL, VOCAB)

        def forward(self, tokens: Any) -> Any:
            length = tokens.shape[1]
            x = self.tokens(tokens) + self.positions(lib.arange(length, device=tokens.device))
            causal = lib.full((length, length), float("-inf"), device=tokens.device).triu(1)
            x = self.encoder(x, mask=causal, is_causal=True)
            return self.head(self.norm(x)).reshape(-1, VOCAB)

    return LM()


def unet(lib: Any) -> Any:
    nn, F = lib.nn, lib.nn.functional

    def double_conv(cin: int, cout: int) -> Any:
        return nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False),
            nn.InstanceNorm2d(cout, affine=True),
            nn.ReLU(),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.InstanceNorm2d(cout, affine=True),
            nn.ReLU(),
        )

    class Up(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            self.up = nn.ConvTranspose2d(channels, channels // 2, 2, stride=2)
            self.conv = double_conv(channels, channels // 2)

        def forward(self, x: Any, skip: Any) -> Any:
            x = self.up(x)
            dh, dw = skip.shape[-2] - x.shape[-2], skip.shape[-1] - x.shape[-1]
            x = F.pad(x, (dw // 2, dw - dw // 2, dh // 2, dh - dh // 2))
            return self.conv(lib.cat([skip, x], dim=1))

    class UNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            widths = [UNET_BASE * 2**i for i in range(UNET_DEPTH + 1)]
            ins = [1, *widths[:-2]]
            self.down = nn.ModuleList([double_conv(a, b) for a, b in zip(ins, widths)])
            self.pool = nn.MaxPool2d(2)
            self.bottleneck = double_conv(widths[-2], widths[-1])
            self.up = nn.ModuleList([Up(w) for w in reversed(widths[1:])])
            self.head = nn.Conv2d(UNET_BASE, 2, 1)

        def forward(self, x: Any) -> Any:
            skips = []
            for stage in self.down:
                skips.append(stage(x))
                x = self.pool(skips[-1])
            x = self.bottleneck(x)
            for block, skip in zip(self.up, reversed(skips)):
                x = block(x, skip)
            return self.head(x)

    return UNet()


#: model -> (builder, the tw.nn names it needs, batch maker (rng -> host x, host y)).
MODELS: dict[str, tuple[Callable[[Any], Any], tuple[str, ...], Callable[..., tuple]]] = {
    "mlp": (
        mlp,
        ("Sequential", "Linear", "ReLU"),
        lambda rng: (
            rng.standard_normal((256, mlp_step.SIZES[0])).astype(np.float32),
            rng.integers(0, mlp_step.SIZES[-1], 256),
        ),
    ),
    "cnn": (
        cnn,
        ("Sequential", "Conv2d", "ReLU", "MaxPool2d", "Flatten", "Linear"),
        lambda rng: (
            rng.standard_normal((CNN_BATCH, 1, 28, 28)).astype(np.float32),
            rng.integers(0, 10, CNN_BATCH),
        ),
    ),
    "lm": (
        lm,
        (
            "Module",
            "Embedding",
            "TransformerEncoderLayer",
            "TransformerEncoder",
            "LayerNorm",
            "Linear",
        ),
        lambda rng: (
            rng.integers(0, VOCAB, (LM_BATCH, CONTEXT)),
            rng.integers(0, VOCAB, LM_BATCH * CONTEXT),
        ),
    ),
    "unet": (
        unet,
        (
            "Module",
            "ModuleList",
            "Sequential",
            "Conv2d",
            "InstanceNorm2d",
            "ReLU",
            "MaxPool2d",
            "ConvTranspose2d",
        ),
        lambda rng: (
            rng.standard_normal((UNET_BATCH, 1, UNET_SIZE, UNET_SIZE)).astype(np.float32),
            rng.integers(0, 2, (UNET_BATCH, UNET_SIZE, UNET_SIZE)),
        ),
    ),
}


def missing_names(needed: tuple[str, ...]) -> list[str]:
    """The ``tw.nn`` names (and the loss and optimizer) this model needs that tw lacks."""
    from tensorweaver import nn

    missing = [f"tw.nn.{n}" for n in needed if not hasattr(nn, n)]
    if not hasattr(nn.functional, "cross_entropy"):
        missing.append("tw.nn.functional.cross_entropy")
    if not hasattr(tw.optim, "SGD"):
        missing.append("tw.optim.SGD")
    return missing


def pair(name: str, rng: np.random.Generator) -> tuple[Any, Any]:
    """The torch and tw-torch trainers of model ``name``, with the same weights and batch."""
    build, _, batch = MODELS[name]
    x, y = batch(rng)
    torch_model = build(torch)
    with tw.device("torch:cpu"):
        tw_model = build(tw)
    theirs, ours = list(torch_model.parameters()), list(tw_model.parameters())
    shapes = [tuple(p.shape) for p in theirs], [tuple(p.shape) for p in ours]
    if shapes[0] != shapes[1]:
        raise RuntimeError(f"{name}: tw's parameters {shapes[1]} differ from torch's {shapes[0]}")
    with tw.no_grad():
        for p, q in zip(ours, theirs):
            p.copy_(tw.tensor(q.detach().numpy(), device="torch:cpu"))
    return (
        mlp_step.torch_trainer(torch_model, x, y),
        mlp_step.tw_trainer(tw_model, x, y, "torch:cpu"),
    )


def main() -> None:
    p = harness.parser(__doc__, repeat=11, sample_ms=200)
    p.add_argument(
        "--models", default="mlp,cnn,lm,unet", help="comma-separated: mlp, cnn, lm, unet"
    )
    args = p.parse_args()
    harness.setup_torch(torch)
    print(harness.describe(args, torch))
    missing: dict[str, list[str]] = {}
    for name in args.models.split(","):
        if name not in MODELS:
            p.error(f"unknown model {name!r}; choose from {', '.join(MODELS)}")
        missing[name] = missing_names(MODELS[name][1])
        if missing[name]:
            print(f"{name:4s} skipped: tw lacks {', '.join(missing[name])}")
            continue
        theirs, ours = pair(name, np.random.default_rng(0))
        want, got = float(theirs.step().item()), float(ours.step().item())
        if not np.isclose(got, want, rtol=1e-4):
            raise AssertionError(f"{name}: tw-torch's first loss {got} != torch's {want}")
        ms = {
            k: t * 1e3
            for k, t in harness.measure({"torch": theirs.step, "tw": ours.step}, args).items()
        }
        r = ms["tw"] / ms["torch"]
        print(
            f"{name:4s} torch {ms['torch']:8.2f} ms/step  tw-torch {ms['tw']:8.2f} ms/step  "
            f"{r:5.2f}x  ({harness.verdict(r, TARGET)}; first losses {want:.5f} / {got:.5f})"
        )
    if any(missing.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
