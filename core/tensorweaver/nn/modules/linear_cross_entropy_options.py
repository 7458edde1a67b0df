"""``LinearCrossEntropyOptions``: PyTorch's settings of the chunked path of
``linear_cross_entropy``, accepted as they are (tw always computes the reference, whose
answers the chunked path equals)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional


@dataclass(frozen=True)
class LinearCrossEntropyOptions:
    """How PyTorch chunks the batch of :func:`linear_cross_entropy` to save memory."""

    allow_retain_graph: bool = False
    batch_chunk_size: Optional[int] = None
    chunking_method: Optional[str] = "auto"
    acc_policy: Literal["accurate", "balanced", "compact", "auto"] = "auto"
    acc_dtype: Any = None
