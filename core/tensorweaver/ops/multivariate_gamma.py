"""``tw.mvlgamma``: PyTorch's top-level and method spelling of ``tw.special.multigammaln``,
the log of the multivariate gamma function of dimension ``p``, and ``Tensor.mvlgamma_``."""

from __future__ import annotations

from tensorweaver.ops.special import multigammaln
from tensorweaver.tensor import Tensor


def mvlgamma(input: Tensor, p: int) -> Tensor:
    return multigammaln(input, p)


def mvlgamma_(self: Tensor, p: int) -> Tensor:
    return self._assign(multigammaln(self._inplace_source(), p), "mvlgamma_")
