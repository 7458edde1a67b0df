"""``Parameter``: a tensor that a Module registers as one of its learnable weights."""

from __future__ import annotations

from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor with ``requires_grad=True`` (by default) that ``Module.__setattr__``
    registers. It holds ``data``'s values (the native array is shared, never copied); results
    of operations on it are plain Tensors."""

    __slots__ = ()

    def __init__(self, data: Optional[Tensor] = None, requires_grad: bool = True) -> None:
        if data is None:
            data = tw.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter: data must be a tw.Tensor, got {type(data).__name__}; "
                "wrap arrays with tw.tensor(...) first"
            )
        super().__init__(data.native, data.backend, data.dtype)
        self._share_like(data)  # a parameter made from a NumPy-shared tensor keeps sharing
        self.requires_grad_(requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo: dict[int, Any]) -> Parameter:
        if id(self) not in memo:
            memo[id(self)] = Parameter(self.detach().clone(), self.requires_grad)
        return memo[id(self)]
