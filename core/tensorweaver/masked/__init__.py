"""``tw.masked``: PyTorch's ``torch.masked`` reductions and normalizations on dense tensors.

Each function takes a ``mask`` broadcastable to its input (True, or nonzero for masks of other
dtypes, = take part) and is composed of ordinary tensor ops, so it runs on every backend and
differentiates as PyTorch's.
MaskedTensor (a prototype in PyTorch) is not provided.
"""

from tensorweaver.masked import _mask
from tensorweaver.masked._binary import logaddexp
from tensorweaver.masked._normalizations import (
    cumprod,
    cumsum,
    log_softmax,
    normalize,
    softmax,
    softmin,
)
from tensorweaver.masked._reductions import (
    amax,
    amin,
    argmax,
    argmin,
    logsumexp,
    mean,
    median,
    norm,
    prod,
    std,
    sum,
    var,
)

# PyTorch's private helpers: attributes of torch.masked that its __all__ leaves out.
_canonical_dim = _mask._canonical_dim
_combine_input_and_mask = _mask._combine_input_and_mask
_input_mask = _mask._input_mask
_output_mask = _mask._output_mask
_reduction_identity = _mask._reduction_identity
_where = _mask._where

__all__ = [
    "amax",
    "amin",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "log_softmax",
    "logaddexp",
    "logsumexp",
    "mean",
    "median",
    "norm",
    "normalize",
    "prod",
    "softmax",
    "softmin",
    "std",
    "sum",
    "var",
]
