"""Spectral normalization by a forward pre-hook (``torch.nn.utils.spectral_norm``, the form
GAN scripts use): ``weight`` is kept as ``weight_orig`` with the buffers ``weight_u`` and
``weight_v`` (its leading singular vectors), and recomputed before each forward as
``weight_orig / sigma``; a training forward first refines ``u`` and ``v`` by power iteration.
"""

from __future__ import annotations

from typing import Any, Optional, TypeVar

import tensorweaver as tw
from tensorweaver.nn import functional as F
from tensorweaver.nn.modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.utils.parametrizations import weight_matrix
from tensorweaver.tensor import Tensor

__all__ = ["remove_spectral_norm", "spectral_norm"]

T_module = TypeVar("T_module", bound=Module)


class SpectralNorm:
    """The forward pre-hook that sets ``module.<name>`` from ``<name>_orig``, ``<name>_u``
    and ``<name>_v``."""

    # The state-dict format, recorded in the module's metadata (PyTorch's: 1 since its
    # state dicts stopped holding the computed weight).
    _version = 1

    def __init__(
        self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = weight_matrix(weight, self.dim)
        if do_power_iteration:
            # (the buffers are written in place, as PyTorch does: whoever holds them sees the
            # iteration; the values used below are clones, so that two forwards can be
            # differentiated together)
            with tw.no_grad():
                for _ in range(self.n_power_iterations):
                    v = F.normalize(tw.mv(weight_mat.t(), u), dim=0, eps=self.eps, out=v)
                    u = F.normalize(tw.mv(weight_mat, v), dim=0, eps=self.eps, out=u)
                u = u.clone(memory_format=tw.contiguous_format)
                v = v.clone(memory_format=tw.contiguous_format)
        return weight / tw.dot(u, tw.mv(weight_mat, v))

    def remove(self, module: Module) -> None:
        with tw.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, tw.nn.Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> Any:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(
                    f"Cannot register two spectral_norm hooks on the same parameter {name}"
                )
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        with tw.no_grad():
            h, w = weight_matrix(weight, fn.dim).shape
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # a plain attribute until the first forward computes it
        setattr(module, fn.name, weight.data)
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        module._register_state_dict_hook(SpectralNormStateDictHook(fn))
        return fn


class SpectralNormStateDictHook:
    """Records ``{"<name>.version": 1}`` under ``"spectral_norm"`` in the module's state-dict
    metadata, as PyTorch's hook does (its loader takes a state dict without it for a pre-1.0
    one)."""

    def __init__(self, fn: SpectralNorm) -> None:
        self.fn = fn

    def __call__(self, module: Module, state_dict: Any, prefix: str, local_metadata: dict) -> None:
        versions = local_metadata.setdefault("spectral_norm", {})
        key = self.fn.name + ".version"
        if key in versions:
            raise RuntimeError(f"Unexpected key in metadata['spectral_norm']: {key}")
        versions[key] = self.fn._version


def spectral_norm(
    module: T_module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: Optional[int] = None,
) -> T_module:
    """Divide ``module.<name>`` by its spectral norm before each forward (``dim`` defaults to
    1 for transposed convolutions, else 0)."""
    if dim is None:
        transposed = (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
        dim = 1 if isinstance(module, transposed) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: T_module, name: str = "weight") -> T_module:
    """Undo :func:`spectral_norm`: ``module.<name>`` is a plain parameter again."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            break
    else:
        raise ValueError(f"spectral_norm of '{name}' not found in {module}")
    for k, hook in module._state_dict_hooks.items():
        if isinstance(hook, SpectralNormStateDictHook) and hook.fn.name == name:
            del module._state_dict_hooks[k]
            break
    return module
