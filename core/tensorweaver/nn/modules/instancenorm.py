"""Instance normalisation layers (PyTorch's ``torch.nn.modules.instancenorm``)."""

from __future__ import annotations

import warnings

from tensorweaver.nn import functional as F
from tensorweaver.nn.modules.batchnorm import _LazyNormBase, _NormBase
from tensorweaver.tensor import Tensor


class _InstanceNorm(_NormBase):
    """Normalise each channel of each sample over its spatial axes. Unlike batch
    normalisation the defaults are ``affine=False, track_running_stats=False``; with running
    statistics, eval mode normalises by them."""

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: object = None,
        dtype: object = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        unbatched = input.dim() == self._input_dims[0]
        channel_axis = 0 if unbatched else 1
        if input.shape[channel_axis] != self.num_features:
            message = (
                f"{type(self).__name__}: expected input's size at dim={channel_axis} to match "
                f"num_features ({self.num_features}), but got: {input.shape[channel_axis]}."
            )
            if self.affine:
                raise ValueError(message)
            warnings.warn(message + " The input is normalised anyway.", stacklevel=2)
        x = input.unsqueeze(0) if unbatched else input
        out = F.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            self.training or not self.track_running_stats,
            self.momentum if self.momentum is not None else 0.0,
            self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance normalisation of ``(N, C, L)`` or ``(C, L)`` inputs."""

    _input_dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalisation of ``(N, C, H, W)`` or ``(C, H, W)`` inputs."""

    _input_dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalisation of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` inputs."""

    _input_dims = (4, 5)


class LazyInstanceNorm1d(_LazyNormBase, _InstanceNorm):
    """An :class:`InstanceNorm1d` whose ``num_features`` is inferred from ``input.size(1)``
    (PyTorch's defaults: ``affine=True, track_running_stats=True``)."""

    cls_to_become = InstanceNorm1d
    _input_dims = InstanceNorm1d._input_dims


class LazyInstanceNorm2d(_LazyNormBase, _InstanceNorm):
    """An :class:`InstanceNorm2d` whose ``num_features`` is inferred from ``input.size(1)``
    (PyTorch's defaults: ``affine=True, track_running_stats=True``)."""

    cls_to_become = InstanceNorm2d
    _input_dims = InstanceNorm2d._input_dims


class LazyInstanceNorm3d(_LazyNormBase, _InstanceNorm):
    """An :class:`InstanceNorm3d` whose ``num_features`` is inferred from ``input.size(1)``
    (PyTorch's defaults: ``affine=True, track_running_stats=True``)."""

    cls_to_become = InstanceNorm3d
    _input_dims = InstanceNorm3d._input_dims
