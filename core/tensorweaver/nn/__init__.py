"""Neural-network building blocks (``tw.nn``): Parameter, Module, layers, init, functional."""

from tensorweaver.nn import functional, init, utils
from tensorweaver.nn.modules import *  # noqa: F403  (the layer classes, listed in modules.__all__)
from tensorweaver.nn.modules import __all__ as _module_names
from tensorweaver.nn.modules.lazy import UninitializedParameter
from tensorweaver.nn.parameter import Buffer, Parameter, UninitializedBuffer
from tensorweaver.nn.rnn_cell_base import RNNCellBase

__all__ = [
    "Buffer",
    "Parameter",
    "RNNCellBase",
    "UninitializedParameter",
    "UninitializedBuffer",
    "functional",
    "init",
    "utils",
    *_module_names,
]
