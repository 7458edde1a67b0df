"""Parametrizations registered with :mod:`~tensorweaver.nn.utils.parametrize`
(``torch.nn.utils.parametrizations``): weight normalization, spectral normalization and
orthogonal matrices (``orthogonal``, in its own module)."""

from __future__ import annotations

from typing import Optional, TypeVar

import tensorweaver as tw
from tensorweaver.nn import functional as F
from tensorweaver.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.utils import parametrize
from tensorweaver.nn.utils.orthogonal import orthogonal
from tensorweaver.nn.utils.weight_norm import norm_except_dim, weight_from
from tensorweaver.tensor import Tensor

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]

T_module = TypeVar("T_module", bound=Module)


class _WeightNorm(Module):
    """``weight = v * g / ||v||`` from ``original0 = g`` and ``original1 = v``."""

    def __init__(self, dim: Optional[int] = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_from(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: T_module, name: str = "weight", dim: Optional[int] = 0) -> T_module:
    """Parametrize ``module.<name>`` by its magnitude
    (``parametrizations.<name>.original0``) and direction (``original1``). As in PyTorch,
    the module also loads state dicts saved with the old hook's ``<name>_g``/``<name>_v``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def old_keys_to_new(state_dict: dict, prefix: str, *_: object) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(old_keys_to_new)
    return module


def weight_matrix(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as a matrix whose rows run along ``dim`` (a vector: one column)."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.reshape(weight.shape[0], -1)


def power_iteration(module: Module, weight_mat: Tensor, n_power_iterations: int) -> None:
    """Refine ``module._u`` and ``module._v``, the leading singular vectors of
    ``weight_mat`` (without gradient)."""
    with tw.no_grad():
        for _ in range(n_power_iterations):
            module._u = F.normalize(weight_mat @ module._v, dim=0, eps=module.eps)
            module._v = F.normalize(weight_mat.mH @ module._u, dim=0, eps=module.eps)


class _SpectralNorm(Module):
    """``weight / sigma``, ``sigma`` the largest singular value of ``weight`` as a matrix
    along ``dim``, estimated by power iteration (one refinement per training forward)."""

    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = weight_matrix(weight, self.dim)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            # a good start: 15 iterations on the initial weight
            power_iteration(self, weight_mat.detach(), 15)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = weight_matrix(weight, self.dim)
        if self.training:
            power_iteration(self, weight_mat.detach(), self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u.conj() * (weight_mat @ v)).sum()
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(
    module: T_module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: Optional[int] = None,
) -> T_module:
    """Parametrize ``module.<name>`` divided by its spectral norm (``dim`` defaults to 1 for
    transposed convolutions, else 0); the singular vectors are buffers ``_u`` and ``_v``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module
