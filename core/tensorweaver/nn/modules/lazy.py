"""``LazyModuleMixin``: layers whose parameters and buffers take their shapes from the first
input (``LazyLinear``, ``LazyConv2d``, ``LazyBatchNorm1d``, ...)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.nn.parameter import UninitializedBuffer, UninitializedParameter, is_lazy

__all__ = ["LazyModuleMixin", "UninitializedBuffer", "UninitializedParameter"]


class LazyModuleMixin:
    """A module whose :class:`UninitializedParameter` s and :class:`UninitializedBuffer` s
    take their shapes in ``initialize_parameters(*inputs)``, called before the first
    ``forward``; the module then becomes an instance of ``cls_to_become`` (``LazyLinear`` a
    ``Linear``)."""

    cls_to_become: Optional[type] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        arm_initialize_hook(self)

    def _lazy_tensors(self) -> Any:
        return itertools.chain(self._parameters.items(), self._buffers.items())  # type: ignore

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer still awaits its shape."""
        return any(is_lazy(t) for _, t in self._lazy_tensors())

    def _state_entry(self, tensor: Any, keep_vars: bool) -> Any:
        # As PyTorch: an uninitialized entry is saved as itself (undetached), so that loading
        # it keeps the target uninitialized.
        return tensor if is_lazy(tensor) else super()._state_entry(tensor, keep_vars)  # type: ignore[misc]

    def _load_from_state_dict(self, state_dict: Mapping[str, Any], prefix: str, *rest: Any) -> None:
        # An uninitialized tensor takes the checkpoint's shape, then its values.
        for name, tensor in self._lazy_tensors():
            key = prefix + name
            if is_lazy(tensor) and key in state_dict and not is_lazy(state_dict[key]):
                with tw.no_grad():
                    tensor.materialize(tuple(state_dict[key].shape))
        # The rest of the arguments in whichever form the next class takes (see Module's).
        super()._load_from_state_dict(state_dict, prefix, *rest)  # type: ignore[misc]

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Shape the parameters from the forward's inputs."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {type(self).__name__}"
        )


#: The attribute holding the handle of the hook that shapes the parameters on the first forward.
LAZY_HOOK = "_initialize_hook"


def arm_initialize_hook(module: Any) -> None:
    """Register the forward pre-hook that shapes ``module``'s parameters (also for a module
    ``tw.load`` rebuilt before its first forward: handles are not saved)."""
    handle = module.register_forward_pre_hook(_infer_parameters, with_kwargs=True)
    vars(module)[LAZY_HOOK] = handle  # as Module.__setattr__ would store a plain value


def _infer_parameters(module: Any, args: tuple, kwargs: dict) -> None:
    module.initialize_parameters(*args, **kwargs)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become
