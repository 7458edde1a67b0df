"""Helpers around modules and parameters (``tw.nn.utils``)."""

from tensorweaver.nn.utils import (
    fusion,
    memory_format,
    parametrizations,
    parametrize,
    prune,
    rnn,
    stateless,
)
from tensorweaver.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from tensorweaver.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from tensorweaver.nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from tensorweaver.nn.utils.init import skip_init
from tensorweaver.nn.utils.memory_format import (
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
)
from tensorweaver.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from tensorweaver.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "convert_conv2d_weight_memory_format",
    "convert_conv3d_weight_memory_format",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "fusion",
    "get_total_norm",
    "memory_format",
    "parameters_to_vector",
    "parametrizations",
    "parametrize",
    "prune",
    "remove_spectral_norm",
    "remove_weight_norm",
    "rnn",
    "skip_init",
    "spectral_norm",
    "stateless",
    "vector_to_parameters",
    "weight_norm",
]
