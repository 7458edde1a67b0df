"""One AdamW step of a small Transformer LM: TensorWeaver on numpy, eager and tw.compile'd,
against the same LM with its gradients written by hand in NumPy (issue 16).

Run: python benchmarks/numpy_lm.py [--repeat 11] [--threads 1] [--clock cpu|wall]

The LM is benchmarks/torch_models.py's ``lm``: byte tokens (vocab 256), token and position
embeddings, 2 post-norm ``TransformerEncoderLayer``s (d_model 128, 4 heads, feed-forward
512, ReLU, no dropout) under a causal mask, a final LayerNorm and a linear head; context 64,
batch 16, float32, cross-entropy on next-byte targets, AdamW (lr 1e-3, weight decay 0.01).
A step is zero_grad, forward, loss, backward and the update. Candidates:

  numpy        forward and backward by hand: one matmul per projection (queries, keys and
               values together), attention as batched matmuls over (batch, head), the
               softmax and LayerNorm gradients in closed form, embedding gradients with
               np.add.at, AdamW in place
  tw-numpy     TensorWeaver on numpy: tw.nn modules, F.cross_entropy, tw.optim.AdamW
  tw-compiled  the same step through tw.compile (replayed, buffers reused)

All start from the same weights; after one step their losses and weights are checked
against each other. Targets (issue 16): tw-numpy within 1.15x of NumPy by hand,
tw-compiled within 1.0x.
"""

from __future__ import annotations

from typing import Any

import harness  # noqa: I001  (first: sets thread counts before numpy loads)
import mlp_step
import numpy as np
import tensorweaver as tw
import tensorweaver.nn.functional as TF
import torch_models
from numpy_cnn import BETAS, EPS, LR, adam_update
from torch_models import CONTEXT, D_MODEL, HEADS, LM_BATCH, VOCAB

DECAY = 0.01  # AdamW's default weight decay; lr, betas and eps as numpy_cnn's Adam
LN_EPS = 1e-5
TARGETS = {"tw-numpy": 1.15, "tw-compiled": 1.0}
KEYS = slice(D_MODEL, 2 * D_MODEL)  # the keys' part of in_proj_bias


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray) -> tuple:
    """LayerNorm over the last axis: the output, and what its backward needs."""
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    inv = 1 / np.sqrt((centred * centred).mean(-1, keepdims=True) + LN_EPS)
    normed = centred * inv
    return normed * gamma + beta, (normed, inv, gamma)


def layer_norm_backward(g: np.ndarray, saved: tuple) -> tuple:
    normed, inv, gamma = saved
    ggamma = (g * normed).reshape(-1, g.shape[-1]).sum(0)
    gbeta = g.reshape(-1, g.shape[-1]).sum(0)
    gn = g * gamma
    gx = gn - gn.mean(-1, keepdims=True) - normed * (gn * normed).mean(-1, keepdims=True)
    gx *= inv
    return gx, ggamma, gbeta


class NumpyLM:
    """The LM with its gradients and AdamW written by hand; ``params`` in tw's order."""

    def __init__(self, named: dict[str, np.ndarray]) -> None:
        self.names = list(named)
        self.p = {k: v.copy() for k, v in named.items()}
        self.m = {k: np.zeros_like(v) for k, v in named.items()}
        self.v = {k: np.zeros_like(v) for k, v in named.items()}
        self.t = 0
        self.causal = np.triu(np.full((CONTEXT, CONTEXT), -np.inf, np.float32), 1)

    @property
    def params(self) -> list[np.ndarray]:
        return [self.p[k] for k in self.names]

    def attention(self, x: np.ndarray, pre: str) -> tuple:
        b, n, d = x.shape
        h, dh = HEADS, d // HEADS
        p = self.p
        qkv = x @ p[pre + "in_proj_weight"].T + p[pre + "in_proj_bias"]
        q, k, v = qkv.reshape(b, n, 3, h, dh).transpose(2, 0, 3, 1, 4)  # each (b, h, n, dh)
        scores = q @ k.transpose(0, 1, 3, 2)
        scores *= 1 / np.sqrt(dh)
        scores += self.causal[:n, :n]
        scores -= scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(-1, keepdims=True)
        heads = (probs @ v).transpose(0, 2, 1, 3).reshape(b, n, d)
        out = heads @ p[pre + "out_proj.weight"].T + p[pre + "out_proj.bias"]
        return out, (x, q, k, v, probs, heads)

    def attention_backward(self, g: np.ndarray, saved: tuple, pre: str, grads: dict) -> Any:
        x, q, k, v, probs, heads = saved
        b, n, d = x.shape
        h, dh = HEADS, d // HEADS
        p = self.p
        g2 = g.reshape(-1, d)
        grads[pre + "out_proj.weight"] = g2.T @ heads.reshape(-1, d)
        grads[pre + "out_proj.bias"] = g2.sum(0)
        gheads = (g @ p[pre + "out_proj.weight"]).reshape(b, n, h, dh).transpose(0, 2, 1, 3)
        gv = probs.transpose(0, 1, 3, 2) @ gheads
        gprobs = gheads @ v.transpose(0, 1, 3, 2)
        gscores = gprobs - (gprobs * probs).sum(-1, keepdims=True)
        gscores *= probs
        gscores *= 1 / np.sqrt(dh)
        gq = gscores @ k
        gk = gscores.transpose(0, 1, 3, 2) @ q
        gqkv = np.stack([gq, gk, gv]).transpose(1, 3, 0, 2, 4).reshape(-1, 3 * d)
        grads[pre + "in_proj_weight"] = gqkv.T @ x.reshape(-1, d)
        grads[pre + "in_proj_bias"] = gqkv.sum(0)
        return (gqkv @ p[pre + "in_proj_weight"]).reshape(b, n, d)

    def step(self, tokens: np.ndarray, targets: np.ndarray) -> float:
        p = self.p
        b, n = tokens.shape
        x = p["tokens.weight"][tokens] + p["positions.weight"][:n]
        saved = []
        for i in range(2):
            pre = f"encoder.layers.{i}."
            sa, att = self.attention(x, pre + "self_attn.")
            h1, ln1 = layer_norm(x + sa, p[pre + "norm1.weight"], p[pre + "norm1.bias"])
            a = h1 @ p[pre + "linear1.weight"].T + p[pre + "linear1.bias"]
            r = np.maximum(a, 0)
            f = r @ p[pre + "linear2.weight"].T + p[pre + "linear2.bias"]
            x, ln2 = layer_norm(h1 + f, p[pre + "norm2.weight"], p[pre + "norm2.bias"])
            saved.append((att, ln1, h1, a, r, ln2))
        top, ln = layer_norm(x, p["norm.weight"], p["norm.bias"])
        flat = top.reshape(-1, D_MODEL)
        logits = flat @ p["head.weight"].T + p["head.bias"]
        logits -= logits.max(1, keepdims=True)
        e = np.exp(logits)
        total = e.sum(1, keepdims=True)
        rows = np.arange(len(targets))
        loss = float(np.log(total[:, 0]).mean() - logits[rows, targets].mean())
        g = e
        g /= total
        g[rows, targets] -= 1
        g /= len(targets)

        grads: dict[str, np.ndarray] = {"head.weight": g.T @ flat, "head.bias": g.sum(0)}
        gx = (g @ p["head.weight"]).reshape(b, n, D_MODEL)
        gx, grads["norm.weight"], grads["norm.bias"] = layer_norm_backward(gx, ln)
        for i in (1, 0):
            pre = f"encoder.layers.{i}."
            att, ln1, h1, a, r, ln2 = saved[i]
            gr2, grads[pre + "norm2.weight"], grads[pre + "norm2.bias"] = layer_norm_backward(
                gx, ln2
            )
            g2 = gr2.reshape(-1, D_MODEL)
            grads[pre + "linear2.weight"] = g2.T @ r.reshape(-1, r.shape[-1])
            grads[pre + "linear2.bias"] = g2.sum(0)
            ga = gr2 @ p[pre + "linear2.weight"]
            ga *= a > 0
            ga2 = ga.reshape(-1, ga.shape[-1])
            grads[pre + "linear1.weight"] = ga2.T @ h1.reshape(-1, D_MODEL)
            grads[pre + "linear1.bias"] = ga2.sum(0)
            gh1 = gr2 + ga @ p[pre + "linear1.weight"]
            gr1, grads[pre + "norm1.weight"], grads[pre + "norm1.bias"] = layer_norm_backward(
                gh1, ln1
            )
            gx = gr1 + self.attention_backward(gr1, att, pre + "self_attn.", grads)
        gtokens = np.zeros_like(p["tokens.weight"])
        np.add.at(gtokens, tokens.ravel(), gx.reshape(-1, D_MODEL))
        gpositions = np.zeros_like(p["positions.weight"])
        gpositions[:n] = gx.sum(0)
        grads["tokens.weight"], grads["positions.weight"] = gtokens, gpositions
        self.adamw(grads)
        return loss

    def adamw(self, grads: dict[str, np.ndarray]) -> None:
        """PyTorch's AdamW (not amsgrad), in place: decay, then Adam's step."""
        self.t += 1
        for name in self.names:
            self.p[name] *= 1 - LR * DECAY
            adam_update(self.p[name], grads[name], self.m[name], self.v[name], self.t, LR)


def tw_trainer(named: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> mlp_step.Trainer:
    with tw.device("numpy"):
        model = torch_models.lm(tw)
    with tw.no_grad():
        for name, p in model.named_parameters():
            p.copy_(tw.tensor(named[name], device="numpy"))
    optim = tw.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=DECAY)
    data = tw.tensor(x, device="numpy"), tw.tensor(y, device="numpy")
    return mlp_step.Trainer(model, optim, TF.cross_entropy, *data)


def main() -> None:
    p = harness.parser(__doc__, repeat=11, sample_ms=400)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    tw.manual_seed(0)
    with tw.device("numpy"):
        named = {k: v.detach().numpy().copy() for k, v in torch_models.lm(tw).named_parameters()}
    x = rng.integers(0, VOCAB, (LM_BATCH, CONTEXT))
    y = rng.integers(0, VOCAB, LM_BATCH * CONTEXT)
    by_hand, eager, compiled = NumpyLM(named), tw_trainer(named, x, y), tw_trainer(named, x, y)
    compiled.step = tw.compile(compiled.step)

    want = by_hand.step(x, y)
    worst = 0.0
    for name, trainer in (("tw-numpy", eager), ("tw-compiled", compiled)):
        got = float(trainer.step().item())
        if not np.isclose(got, want, rtol=1e-4):
            raise AssertionError(f"{name}'s first loss {got} != NumPy's {want}")
        for key, a, b in zip(by_hand.names, trainer.parameters(), by_hand.params):
            if key.endswith("in_proj_bias"):
                # The keys' bias has no effect (softmax ignores a shift of a whole row): its
                # gradient is rounding noise, which Adam's first step scales up to ~lr.
                np.testing.assert_allclose(a[D_MODEL:-D_MODEL], b[D_MODEL:-D_MODEL], atol=LR)
                a, b = np.delete(a, KEYS), np.delete(b, KEYS)
            np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-5, err_msg=f"{name}: {key}")
            worst = max(worst, float(np.abs(a - b).max()))
    for _ in range(4):  # the compiled step traces, confirms and replays
        compiled.step()
    if compiled.step.traces != 3 or len(compiled.step.graph_source()) != 1:
        raise AssertionError("tw-compiled does not replay")

    medians = harness.measure(
        {"numpy": lambda: by_hand.step(x, y), "tw-numpy": eager.step, "tw-compiled": compiled.step},
        args,
    )
    ms = {name: t * 1e3 for name, t in medians.items()}
    print(harness.describe(args))
    print(
        f"Transformer LM 2 x d{D_MODEL}, context {CONTEXT}, batch {LM_BATCH}, float32, AdamW "
        f"step; after one step all agree (largest weight difference {worst:.1e})"
    )
    for name in ms:
        print(f"  {name:12s}{ms[name]:9.2f} ms/step")
    for name, target in TARGETS.items():
        r = ms[name] / ms["numpy"]
        print(f"{name + ' / numpy by hand':28s}{r:5.2f}x  ({harness.verdict(r, target)})")


if __name__ == "__main__":
    main()
