"""``ctc_loss``: the connectionist temporal classification loss, as PyTorch computes it.

The targets are extended with a blank before, between and after the labels (length
``2 * L + 1``); the forward (alpha) recursion runs over time in log space, batched over the
sequences and the extended positions. The gradient comes from the backward (beta) recursion
and is PyTorch's: ``exp(log_probs) - posterior``, that is, the gradient with respect to the
logits for ``log_probs = log_softmax(logits)`` (a ``log_softmax`` before the loss passes it
through unchanged), and zero after each sequence's input length.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import tensorweaver as tw
from tensorweaver.amp import autocast_dtype, float32_operands
from tensorweaver.contract.dtypes import SCALAR_TYPE_NAMES
from tensorweaver.nn.functional.loss import _reduce, _saved_operands
from tensorweaver.ops.bounds import extrema
from tensorweaver.ops.composite import fused_or_reference
from tensorweaver.tensor import Tensor

_NEG_INF = float("-inf")


def _lengths(lengths: Tensor | Sequence[int], batch: int, name: str) -> list[int]:
    """Lengths given as a tensor or a sequence, as a list of ``batch`` Python ints."""
    if isinstance(lengths, Tensor):
        if lengths.dtype.is_floating_point or lengths.dtype is tw.bool:
            raise RuntimeError(f"ctc_loss: {name} must be integral, got {lengths.dtype.name}")
        if lengths.dim() > 1:
            raise RuntimeError(f"ctc_loss: {name} must be 0-D or 1-D, got {tuple(lengths.shape)}")
        values = lengths.reshape(-1).tolist()
    else:
        values = [int(v) for v in lengths]
    if len(values) != batch:
        raise RuntimeError(
            f"ctc_loss: {name} must be of size batch_size ({batch}), got {len(values)} values"
        )
    return values


def _padded_targets(
    targets: Tensor, target_lengths: list[int], device: object
) -> tuple[Tensor, int]:
    """``(N, S)`` targets (S the longest target) from padded 2-D or concatenated 1-D targets."""
    longest = max(target_lengths, default=0)
    if targets.dim() == 2:
        if targets.shape[1] < longest:
            raise RuntimeError(
                f"ctc_loss: padded targets of shape {tuple(targets.shape)} are shorter than the "
                f"longest target length {longest}"
            )
        return targets[:, :longest].long(), longest
    if targets.dim() != 1:
        raise RuntimeError(
            f"ctc_loss: targets must be 1-D (concatenated) or 2-D (padded), got shape "
            f"{tuple(targets.shape)}"
        )
    if targets.shape[0] != sum(target_lengths):
        raise RuntimeError(
            f"ctc_loss: concatenated targets have {targets.shape[0]} labels, but the target "
            f"lengths add up to {sum(target_lengths)}"
        )
    starts = np.cumsum([0, *target_lengths[:-1]])
    index = np.minimum(starts[:, None] + np.arange(longest), max(targets.shape[0] - 1, 0))
    if not targets.shape[0]:
        return tw.zeros(len(target_lengths), longest, dtype=tw.int64, device=device), longest
    return targets.long()[tw.tensor(index, device=device)], longest


def _logsumexp3(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    """log(exp(a) + exp(b) + exp(c)), -inf where all three are."""
    top = tw.maximum(tw.maximum(a, b), c)
    empty = top == _NEG_INF
    top = top.masked_fill(empty, 0)
    total = (a - top).exp() + (b - top).exp() + (c - top).exp()
    return (top + total.masked_fill(empty, 1).log()).masked_fill(empty, _NEG_INF)


def _shift(x: Tensor, by: int, fill: object) -> Tensor:
    """``x`` moved ``by`` places along its last axis (right if positive), ``fill`` let in."""
    width = x.shape[1]
    moved = min(abs(by), width)
    pad = tw.full((x.shape[0], moved), fill, dtype=x.dtype, device=x.device)
    if by > 0:
        return tw.cat([pad, x[:, : width - moved]], 1)
    return tw.cat([x[:, moved:], pad], 1)


class _CTC(tw.autograd.Function):
    """Negative log-likelihood per sequence; PyTorch's gradient (see the module docstring)."""

    @staticmethod
    def forward(
        ctx,
        log_probs: Tensor,
        extended: Tensor,
        skip: Tensor,
        input_lengths: list[int],
        target_lengths: list[int],
        zero_infinity: bool,
    ) -> Tensor:
        steps, batch, _ = log_probs.shape
        emit = log_probs.gather(2, extended.unsqueeze(0).expand(steps, *extended.shape))
        position = tw.arange(extended.shape[1], device=log_probs.device)
        alpha = emit[0].masked_fill(position >= 2, _NEG_INF)
        alphas = [alpha]
        for t in range(1, steps):
            before = _shift(alpha, 2, _NEG_INF).masked_fill(~skip, _NEG_INF)
            alpha = _logsumexp3(alpha, _shift(alpha, 1, _NEG_INF), before) + emit[t]
            alphas.append(alpha)
        alphas = tw.stack(alphas)
        # The likelihood: paths ending on the last label or the blank after it.
        last = [max(n - 1, 0) for n in input_lengths]
        rows = tw.arange(batch, device=log_probs.device)
        times = tw.tensor(last, device=log_probs.device)
        ends = tw.tensor([2 * n for n in target_lengths], device=log_probs.device)
        end = alphas[times, rows, ends]
        label = alphas[times, rows, (ends - 1).clamp(min=0)]
        has_label = ends > 0
        label = label.masked_fill(~has_label, _NEG_INF)
        likelihood = _logsumexp3(end, label, tw.full_like(end, _NEG_INF))
        # No input steps: only the empty target has a (certain) path.
        started = tw.tensor([n > 0 for n in input_lengths], device=log_probs.device)
        likelihood = tw.where(started, likelihood, tw.where(has_label, _NEG_INF, 0.0))
        nll = -likelihood
        ctx.save_for_backward(log_probs, emit, alphas, extended, skip, nll)
        ctx.lengths = (input_lengths, target_lengths)
        ctx.zero_infinity = zero_infinity
        return nll

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        log_probs, emit, alphas, extended, skip, nll = ctx.saved_tensors
        input_lengths, target_lengths = ctx.lengths
        steps, batch, classes = log_probs.shape
        device = log_probs.device
        position = tw.arange(extended.shape[1], device=device)
        ends = tw.tensor([2 * n for n in target_lengths], device=device).unsqueeze(1)
        tail = (position == ends) | ((position == ends - 1) & (ends > 0))
        final = tw.tensor([n - 1 for n in input_lengths], device=device).unsqueeze(1)
        skip_after = _shift(skip, -2, False)
        beta = tw.full(tuple(extended.shape), _NEG_INF, dtype=log_probs.dtype, device=device)
        betas = []
        for t in range(steps - 1, -1, -1):
            after = _shift(beta, -2, _NEG_INF).masked_fill(~skip_after, _NEG_INF)
            step = _logsumexp3(beta, _shift(beta, -1, _NEG_INF), after) + emit[t]
            start = emit[t].masked_fill(~tail, _NEG_INF)
            beta = tw.where(final == t, start, step.masked_fill(final < t, _NEG_INF))
            betas.append(beta)
        betas = tw.stack(betas[::-1])
        # Each extended position's occupancy (alpha and beta both count its emission).
        posterior = (alphas + betas - emit + nll.unsqueeze(1)).exp()
        index = extended.unsqueeze(0).expand(steps, *extended.shape)
        occupancy = tw.zeros_like(log_probs).scatter_add(2, index, posterior)
        out = log_probs.exp() - occupancy
        # An impossible alignment: PyTorch's gradient is NaN, or zero with zero_infinity.
        impossible = (nll == float("inf")).reshape(1, batch, 1)
        out = out.masked_fill(impossible, 0.0 if ctx.zero_infinity else float("nan"))
        within = tw.arange(steps, device=device).unsqueeze(1) <= final.reshape(1, batch)
        return out.masked_fill(~within.unsqueeze(2), 0) * grad.reshape(1, batch, 1), *[None] * 5


def ctc_loss_reference(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor,
    target_lengths: Tensor,
    blank: int,
    zero_infinity: bool,
) -> Tensor:
    """The decomposition of the ``ctc_loss`` composite: the loss of each sequence, ``(N,)``,
    for ``(T, N, C)`` log-probabilities, ``(N, S)`` int64 targets padded with ``blank`` and
    ``(N,)`` int64 lengths, all checked."""
    batch, longest = targets.shape
    blanks = tw.full((batch, longest + 1), blank, dtype=tw.int64, device=targets.device)
    between = tw.stack([blanks[:, 1:], targets], 2).reshape(batch, 2 * longest)
    extended = tw.cat([between, blanks[:, :1]], 1)
    # A label may follow the one two places back unless it repeats it (a blank must part them).
    skip = (extended != blank) & (extended != _shift(extended, 2, blank))
    inputs, labels = input_lengths.tolist(), target_lengths.tolist()
    loss = _CTC.apply(log_probs, extended, skip, inputs, labels, zero_infinity)
    if zero_infinity:
        loss = tw.where(loss == float("inf"), tw.zeros_like(loss), loss)
    return loss


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | Sequence[int],
    target_lengths: Tensor | Sequence[int],
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: bool = False,
) -> Tensor:
    """The CTC loss of ``(T, N, C)`` log-probabilities (``(T, C)`` unbatched) against targets
    padded ``(N, S)`` or concatenated ``(sum(target_lengths),)``.

    ``reduction='mean'`` divides each loss by its target length (at least 1) before
    averaging over the batch; ``zero_infinity`` zeroes the infinite losses of impossible
    alignments and their gradients."""
    if autocast_dtype() is not None:  # on PyTorch's CPU float32 list (amp.CPU_FLOAT32)
        (log_probs,) = float32_operands(log_probs)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"ctc_loss: {reduction!r} is not a valid value for reduction")
    if log_probs.dtype not in (tw.float32, tw.float64):
        # PyTorch's kernel takes these two only, and says so before any other check.
        name = SCALAR_TYPE_NAMES[log_probs.dtype.name]
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for '{name}'")
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.reshape(1, -1)
    if log_probs.dim() != 3:
        raise RuntimeError(
            f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {tuple(log_probs.shape)}"
        )
    steps, batch, classes = log_probs.shape
    inputs = _lengths(input_lengths, batch, "input_lengths")
    labels = _lengths(target_lengths, batch, "target_lengths")
    if not 0 <= blank < classes:
        raise RuntimeError(f"ctc_loss: blank ({blank}) must be in the label range [0, {classes})")
    for name, values, top in (("input_lengths", inputs, steps), ("target_lengths", labels, None)):
        if min(values, default=0) < 0 or top is not None and max(values, default=0) > top:
            raise RuntimeError(
                f"ctc_loss: {name} must lie in [0, {top if top is not None else 'inf'}], got "
                f"{values}"
            )
    padded, longest = _padded_targets(targets, labels, log_probs.device)
    device = log_probs.device
    kept = tw.arange(longest, device=device) < tw.tensor(labels, device=device).unsqueeze(1)
    bounds = extrema(padded[kept])
    if bounds is not None and (bounds[0] < 0 or bounds[1] >= classes):
        raise RuntimeError(
            f"ctc_loss: target labels must lie in [0, {classes}), got values from {bounds[0]} "
            f"to {bounds[1]}"
        )
    lengths = (tw.tensor(inputs, device=device), tw.tensor(labels, device=device))
    padded = padded.masked_fill(~kept, blank)
    loss = fused_or_reference(
        "ctc_loss", ctc_loss_reference, (log_probs, padded, *lengths), blank, zero_infinity
    )
    if loss._node is not None:
        # PyTorch's node saves the targets (not the lengths, which it reads as ints): the node
        # made here (labelled on the reference path, a backend's fused kernel's unlabelled)
        loss = _saved_operands(loss, loss._node.label, (targets,))
    if reduction == "mean":
        divisor = lengths[1].clamp(min=1).to(loss.dtype)
        return (loss / divisor).mean()
    loss = _reduce(loss, reduction, "ctc_loss")
    return loss.squeeze(0) if unbatched and reduction == "none" else loss
