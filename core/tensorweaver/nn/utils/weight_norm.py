"""Weight normalization by a forward pre-hook (``torch.nn.utils.weight_norm``, the form
older scripts use): ``weight`` is replaced by the parameters ``weight_g`` (its norm over every
dimension but ``dim``) and ``weight_v`` (its direction), and recomputed as
``weight_v * weight_g / ||weight_v||`` before each forward.
"""

from __future__ import annotations

import warnings
from typing import Any, Optional, TypeVar

from tensorweaver.contract import dtypes
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.parameter import Parameter
from tensorweaver.ops.elementwise import cast, in_float32
from tensorweaver.tensor import Tensor

__all__ = ["remove_weight_norm", "weight_norm"]

T_module = TypeVar("T_module", bound=Module)


def norm_except_dim(v: Tensor, pow: float, dim: int) -> Tensor:
    """The ``pow``-norm of ``v`` over every dimension but ``dim``, keeping dimensions
    (``dim=-1``: over the whole tensor, a 0-d result, as PyTorch's ``norm_except_dim``)."""
    if v.dtype in (dtypes.float16, dtypes.bfloat16):
        # (powers and sums in float32, as PyTorch's opmath: float16 squares overflow past 256)
        return in_float32(lambda wide: norm_except_dim(wide, pow, dim), v)
    if dim == -1:
        return v.abs().pow(pow).sum().pow(1.0 / pow)
    ndim = v.ndim
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}] "
            f"but got {dim}): weight norm of a tensor of shape {tuple(v.shape)}"
        )
    if dim < 0:  # -1 is the whole tensor (above); other negative dims count from the end
        dim += ndim
    dims = tuple(d for d in range(ndim) if d != dim)
    if not dims:
        return v.abs()
    return v.abs().pow(pow).sum(dim=dims, keepdim=True).pow(1.0 / pow)


def weight_from(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """``v * (g / ||v||)``, the norm taken over every dimension but ``dim``."""
    if v.dtype in (dtypes.float16, dtypes.bfloat16) and dim in (0, v.ndim - 1):
        # (PyTorch's fused kernel for the first or last dim: all of it in float32, rounded once)
        return in_float32(lambda wide: weight_from(wide, cast(g, dtypes.float32), dim), v)
    return v * (g / norm_except_dim(v, 2, dim))


class WeightNorm:
    """The forward pre-hook that recomputes ``module.<name>`` from ``<name>_g`` and
    ``<name>_v``."""

    def __init__(self, name: str, dim: Optional[int]) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return weight_from(v, g, self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: Optional[int]) -> WeightNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two weight_norm hooks on the same parameter {name}"
                )
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if not isinstance(weight, Parameter):
            raise TypeError(
                f"weight_norm: {type(module).__name__}.{name} is a {type(weight).__name__}, "
                "not a Parameter"
            )
        # the magnitude and direction replace the weight itself
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: T_module, name: str = "weight", dim: Optional[int] = 0) -> T_module:
    """Reparametrize ``module.<name>`` by magnitude ``<name>_g`` and direction ``<name>_v``
    (norms over every dimension but ``dim``; ``dim=None``: over the whole tensor). It warns
    that it is deprecated, as PyTorch's does."""
    warnings.warn(
        "`torch.nn.utils.weight_norm` is deprecated in favor of "
        "`torch.nn.utils.parametrizations.weight_norm`.",
        FutureWarning,
        stacklevel=2,
    )
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`weight_norm`: ``module.<name>`` is a plain parameter again."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
