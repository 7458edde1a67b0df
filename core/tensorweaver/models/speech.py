"""A small speech-recognition-style acoustic model trained with CTC, and greedy CTC decoding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

import numpy as np

import tensorweaver as tw
import tensorweaver.nn.functional as F
from tensorweaver import nn
from tensorweaver.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from tensorweaver.tensor import Tensor

RNNS = {"gru": nn.GRU, "lstm": nn.LSTM}
Lengths = Union[Tensor, Sequence[int]]


class CTCSpeechModel(nn.Module):
    """Feature frames to per-frame class log-probabilities for ``nn.CTCLoss``; class 0 is
    the blank by default, as in ``nn.CTCLoss`` and :func:`greedy_decode`.

    A ``Conv1d`` front-end over time with stride 2 (half the frame rate) and ReLU, a
    bidirectional GRU (``rnn="gru"``) or LSTM (``"lstm"``) of ``num_layers`` layers that
    runs over each sequence's valid frames only (packed), and a linear layer to
    ``n_classes``.

    ``forward(features, lengths)`` takes padded ``(N, T, n_features)`` frames and the ``N``
    valid lengths; it returns the ``(T', N, n_classes)`` log-probabilities and the ``N``
    output lengths (int64), the layout and lengths ``nn.CTCLoss`` expects.
    """

    def __init__(
        self,
        n_features: int,
        n_classes: int,
        hidden: int = 64,
        num_layers: int = 1,
        rnn: str = "gru",
        kernel_size: int = 3,
    ) -> None:
        super().__init__()
        if rnn not in RNNS:
            raise ValueError(f"CTCSpeechModel: rnn must be one of {', '.join(RNNS)}, got {rnn!r}")
        if n_classes < 2:
            raise ValueError(
                f"CTCSpeechModel: n_classes counts the blank and the labels, so it must be at "
                f"least 2, got {n_classes}"
            )
        self.n_features = n_features
        self.padding = kernel_size // 2
        self.kernel_size = kernel_size
        self.frontend = nn.Conv1d(n_features, hidden, kernel_size, stride=2, padding=self.padding)
        self.rnn = RNNS[rnn](hidden, hidden, num_layers, bidirectional=True)
        self.classifier = nn.Linear(2 * hidden, n_classes)

    def output_lengths(self, lengths: Lengths) -> Tensor:
        """The number of output frames for inputs of ``lengths`` frames (the stride-2
        convolution's output size)."""
        if not isinstance(lengths, Tensor):
            lengths = tw.tensor(list(lengths), dtype=tw.int64)
        return (lengths.long() + 2 * self.padding - self.kernel_size) // 2 + 1

    def forward(self, features: Tensor, lengths: Lengths) -> tuple[Tensor, Tensor]:
        if features.dim() != 3 or features.shape[-1] != self.n_features:
            raise ValueError(
                f"CTCSpeechModel: expected padded features of shape (N, T, {self.n_features}), "
                f"got {tuple(features.shape)}"
            )
        batch, frames = features.shape[:2]
        values = lengths.tolist() if isinstance(lengths, Tensor) else [int(n) for n in lengths]
        if len(values) != batch or not all(1 <= n <= frames for n in values):
            raise ValueError(
                f"CTCSpeechModel: lengths must hold {batch} values in [1, {frames}] (one per "
                f"sequence of features {tuple(features.shape)}), got {values}"
            )
        x = F.relu(self.frontend(features.transpose(1, 2)))  # (N, hidden, T')
        out_lengths = self.output_lengths(values)
        packed = pack_padded_sequence(x.permute(2, 0, 1), out_lengths, enforce_sorted=False)
        hidden, _ = pad_packed_sequence(self.rnn(packed)[0], total_length=x.shape[-1])
        return F.log_softmax(self.classifier(hidden), dim=-1), out_lengths.to(features.device)


def greedy_decode(log_probs: Tensor, lengths: Lengths, blank: int = 0) -> list[list[int]]:
    """Best-path CTC decoding of ``(T, N, C)`` log-probabilities: the most likely class of
    each of the first ``lengths[n]`` frames of sequence ``n``, repeats collapsed and blanks
    dropped; one list of labels per sequence."""
    if log_probs.dim() != 3:
        raise ValueError(
            f"greedy_decode: expected (T, N, C) log-probabilities, got {tuple(log_probs.shape)}"
        )
    best = np.asarray(log_probs.detach().argmax(-1))  # (T, N)
    values = np.asarray(lengths).reshape(-1) if isinstance(lengths, Tensor) else list(lengths)
    if len(values) != best.shape[1]:
        raise ValueError(
            f"greedy_decode: got {len(values)} lengths for a batch of {best.shape[1]} sequences"
        )
    labels = []
    for n, length in enumerate(values):
        path = best[: int(length), n]
        keep = np.ones(len(path), dtype=bool)
        keep[1:] = path[1:] != path[:-1]
        labels.append([int(c) for c in path[keep & (path != blank)]])
    return labels
