"""``tw.chain_matmul``: PyTorch's deprecated product of several matrices (``tw.linalg.
multi_dot`` takes a list)."""

from __future__ import annotations

import warnings

from tensorweaver.tensor import Tensor


def chain_matmul(*matrices: Tensor, out: Tensor | None = None) -> Tensor:
    """The product of the 2-d ``matrices``, in the order of fewest multiplications."""
    from tensorweaver.linalg.products import multi_dot

    warnings.warn(
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. "
        "Use tw.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
        "than multiple parameters.",
        UserWarning,
        stacklevel=2,
    )
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(
                f"chain_matmul(): Tensor dimension is {m.ndim}, expected 2 instead (a "
                f"matrix of shape {tuple(m.shape)})"
            )
    result = matrices[0].clone() if len(matrices) == 1 else multi_dot(matrices)
    if out is not None:
        return out.copy_(result)
    return result
