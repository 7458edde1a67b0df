"""A character-level GPT-style language model trained by ``tw.fit`` on a short story.

The story (``data/weaver.txt``) is written for this example and is public domain. The model
sees windows of ``--context`` characters and learns to predict each next character; it then
continues a prompt with ``TransformerLM.generate``.

    python examples/char_lm.py [--device torch:cpu] [--epochs 6]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import tensorweaver as tw
from tensorweaver.models import TransformerLM, lm_loss

TEXT = Path(__file__).with_name("data") / "weaver.txt"


def windows(ids: np.ndarray, context: int, stride: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs ``ids[i : i + context]`` and their next characters ``ids[i + 1 : i + context +
    1]``, one pair per ``stride`` characters."""
    starts = np.arange(0, len(ids) - context - 1, stride)
    offsets = np.arange(context)
    return ids[starts[:, None] + offsets], ids[starts[:, None] + offsets + 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="numpy", help="e.g. numpy, torch:cpu, torch:cuda")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--context", type=int, default=32)
    parser.add_argument("--prompt", default="The weaver ")
    args = parser.parse_args()

    text = TEXT.read_text(encoding="utf-8")
    vocab = sorted(set(text))
    index = {ch: i for i, ch in enumerate(vocab)}
    ids = np.array([index[ch] for ch in text], dtype=np.int64)
    inputs, targets = windows(ids, args.context, stride=2)

    tw.manual_seed(0)
    model = TransformerLM(len(vocab), args.context, d_model=64, n_heads=4, n_layers=2)
    start = time.perf_counter()
    history = tw.fit(
        model,
        (inputs, targets),
        loss=lm_loss,
        metrics=(),
        epochs=args.epochs,
        batch_size=32,
        lr=3e-3,
        schedule="cosine",
        clip=1.0,
        device=args.device,
        seed=0,
    )
    seconds = time.perf_counter() - start
    print(
        f"loss {history.train_loss[0]:.2f} -> {history.train_loss[-1]:.2f} nats per character "
        f"(uniform guessing: {np.log(len(vocab)):.2f}) on {history.device} in {seconds:.1f} s"
    )

    prompt = tw.tensor([[index[ch] for ch in args.prompt if ch in index]], device=history.device)
    out = model.generate(prompt, max_new_tokens=200, temperature=0.8, top_k=10)
    print(args.prompt + "".join(vocab[i] for i in out[0, prompt.shape[1] :].tolist()))


if __name__ == "__main__":
    main()
