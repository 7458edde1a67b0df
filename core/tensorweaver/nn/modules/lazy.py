"""Lazy layers: ``UninitializedParameter`` and ``LazyModuleMixin``, whose parameters take
their shapes from the first input (``LazyLinear``, ``LazyConv2d``, ...)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import tensorweaver as tw
from tensorweaver.nn.parameter import Parameter


class UninitializedParameter(Parameter):
    """A parameter without a shape yet; :meth:`materialize` gives it one (and makes it a
    plain :class:`Parameter`, the same object)."""

    __slots__ = ()

    def __init__(self, requires_grad: bool = True, device: Any = None, dtype: Any = None) -> None:
        # No elements: the device and dtype the materialized parameter will have.
        super().__init__(tw.empty(0, device=device, dtype=dtype), requires_grad)

    def materialize(self, shape: Sequence[int], device: Any = None, dtype: Any = None) -> None:
        """Give the parameter ``shape`` (uninitialized values, as ``tw.empty``)."""
        data = tw.empty(
            *shape,
            device=self.device if device is None else device,
            dtype=self.dtype if dtype is None else dtype,
        )
        self.native, self.backend, self.dtype, self.shape = (
            data.native,
            data.backend,
            data.dtype,
            data.shape,
        )
        self.__class__ = Parameter

    def __repr__(self) -> str:
        return "<UninitializedParameter>"


class LazyModuleMixin:
    """A module whose :class:`UninitializedParameter` s take their shapes in
    ``initialize_parameters(*inputs)``, called before the first ``forward``; the module then
    becomes an instance of ``cls_to_become`` (``LazyLinear`` a ``Linear``)."""

    cls_to_become: Optional[type] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter still awaits its shape."""
        return any(isinstance(p, UninitializedParameter) for p in self._parameters.values())

    def _load_from_state_dict(
        self,
        state_dict: Mapping[str, Any],
        prefix: str,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        # An uninitialized parameter takes the checkpoint's shape, then its values.
        for name, param in self._parameters.items():
            key = prefix + name
            if isinstance(param, UninitializedParameter) and key in state_dict:
                param.materialize(tuple(state_dict[key].shape))
        super()._load_from_state_dict(  # type: ignore[misc]
            state_dict, prefix, missing_keys, unexpected_keys, error_msgs
        )

    def initialize_parameters(self, *args: Any, **kwargs: Any) -> None:
        """Shape the parameters from the forward's inputs."""
        raise NotImplementedError(
            f"initialize_parameters is not implemented for {type(self).__name__}"
        )


def _infer_parameters(module: Any, args: tuple, kwargs: dict) -> None:
    module.initialize_parameters(*args, **kwargs)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become
