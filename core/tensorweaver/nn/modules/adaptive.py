"""Efficient softmax over a large vocabulary (``nn.AdaptiveLogSoftmaxWithLoss``, Grave et
al. 2016): frequent classes (below ``cutoffs[0]``) and one entry per rarer cluster share the
head's softmax; a target in a cluster adds that cluster's own softmax, computed through a
smaller projection (``in_features // div_value**(i+1)``), only for its rows.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import tensorweaver as tw
from tensorweaver.nn import functional as F
from tensorweaver.nn.modules.container import ModuleList, Sequential
from tensorweaver.nn.modules.linear import Linear
from tensorweaver.nn.modules.module import Module
from tensorweaver.tensor import Tensor

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """``forward(input, target)`` gives ``(output, loss)``: each row's log-probability of
    its target and their negated mean; ``log_prob`` and ``predict`` cover all classes."""

    def __init__(
        self,
        in_features: int,
        n_classes: int,
        cutoffs: Sequence[int],
        div_value: float = 4.0,
        head_bias: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (
            cutoffs != sorted(cutoffs)
            or min(cutoffs) <= 0
            or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs)
            or any(int(c) != c for c in cutoffs)
        ):
            raise ValueError(
                "cutoffs should be a sequence of unique, positive integers sorted in an "
                f"increasing order, where each value is between 1 and n_classes-1; got {cutoffs} "
                f"for n_classes={n_classes}"
            )
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        factory = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(
                Sequential(
                    Linear(in_features, hsz, bias=False, **factory),
                    Linear(hsz, osz, bias=False, **factory),
                )
            )

    def reset_parameters(self) -> None:
        """Re-initialize the head and every cluster's projections."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> Any:
        """``(output, loss)`` for inputs ``(N, in_features)`` and targets ``(N,)`` (or one
        unbatched row and a 0-d target)."""
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError(
                    "Input and target should have the same size in the batch dimension: "
                    f"input {tuple(input_.shape)}, target {tuple(target_.shape)}"
                )
            if input_.ndim != 2:
                raise RuntimeError(
                    "1D target tensor expects 2D input tensors, but found inputs with size "
                    f"{tuple(input_.shape)}"
                )
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(
                    "0D target tensor expects 1D input tensors, but found inputs with size "
                    f"{tuple(input_.shape)}"
                )
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if bool(((target < 0) | (target >= self.n_classes)).any()):
            raise RuntimeError(
                f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                f"[{target.min().item()}, {target.max().item()}] were found. "
            )
        # cluster 0 is the shortlist; cluster i > 0 is the head's entry shortlist_size + i - 1
        cluster = sum((target >= c).long() for c in self.cutoffs[:-1])
        head_index = tw.where(cluster == 0, target, self.shortlist_size + cluster - 1)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = head_logprob.gather(1, head_index.unsqueeze(1)).squeeze(1)
        tail_part = output.new_zeros(target.shape[0])
        for i in range(1, self.n_clusters + 1):
            rows = (cluster == i).nonzero().flatten()
            if rows.numel() == 0:
                continue
            relative = target.index_select(0, rows) - self.cutoffs[i - 1]
            cluster_logprob = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
            local = cluster_logprob.gather(1, relative.unsqueeze(1)).squeeze(1)
            tail_part = tail_part.index_add(0, rows, local)
        output = tail_part + output
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            entry = self.shortlist_size + i
            parts.append(cluster_logprob + head_logprob[:, entry : entry + 1])
        return tw.cat(parts, dim=1)

    def _check_input(self, name: str, input: Tensor) -> None:
        if input.ndim not in (1, 2) or input.shape[-1] != self.in_features:
            raise RuntimeError(
                f"AdaptiveLogSoftmaxWithLoss.{name}: expected input of shape (N, "
                f"{self.in_features}) or ({self.in_features},), got {tuple(input.shape)}"
            )

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of every class, ``(N, n_classes)``."""
        self._check_input("log_prob", input)
        batched = input.ndim == 2
        rows = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(rows, self.head(rows))
        return out if batched else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each row (the head's answer when it is a frequent
        class, else the argmax over every class)."""
        self._check_input("predict", input)
        batched = input.ndim == 2
        rows = input if batched else input.unsqueeze(0)
        head_output = self.head(rows)
        output = tw.argmax(head_output, dim=1)
        not_in_shortlist = output >= self.shortlist_size
        if bool(not_in_shortlist.any()):
            full = tw.argmax(self._get_full_log_prob(rows, head_output), dim=1)
            output = tw.where(not_in_shortlist, full, output)
        return output if batched else output.squeeze(0)
