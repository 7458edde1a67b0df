"""Parametrized tensors (``torch.nn.utils.parametrize``): a module's parameter or buffer
computed, at each access, by a chain of modules from the tensors actually stored.

``register_parametrization(module, "weight", P)`` moves ``module.weight`` into
``module.parametrizations.weight.original`` (or ``original0``, ``original1``, ... when
``P.right_inverse`` returns several tensors) and turns ``weight`` into a property of a
subclass made for the module: reading it returns ``P(original)``, assigning it stores
``P.right_inverse(value)``. The state dict therefore holds
``parametrizations.weight.original``, as PyTorch's does.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Sequence
from typing import Any, Optional, Union

import tensorweaver as tw
from tensorweaver.nn.modules.container import ModuleDict, ModuleList
from tensorweaver.nn.modules.module import Module
from tensorweaver.nn.parameter import Parameter
from tensorweaver.tensor import Tensor

__all__ = [
    "ParametrizationList",
    "cached",
    "is_parametrized",
    "register_parametrization",
    "remove_parametrizations",
    "transfer_parametrizations_and_params",
    "type_before_parametrizations",
]

_cache_enabled = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextlib.contextmanager
def cached() -> Iterator[None]:
    """Within the context, each parametrized tensor is computed once and reused."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _store_into(original: Tensor, value: Any) -> Tensor:
    """``value`` written into ``original`` (the same object stays registered with optimizers;
    a new shape is taken as ``.data``): it may not change the dtype, as in PyTorch."""
    if not isinstance(value, Tensor):
        raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
    if value.dtype != original.dtype:
        raise ValueError(
            f"The tensor returned by `right_inverse` has dtype {value.dtype} while `original` "
            f"has dtype {original.dtype}; a parametrization may not change the dtype"
        )
    with tw.no_grad():
        if original.shape == value.shape:
            original.copy_(value)
        else:
            original.data = value.detach().clone()
    return original


def _right_inverse(module: Module, value: Any) -> Any:
    """``module.right_inverse(value)``, or ``value`` where it has none or it raises
    NotImplementedError (then the parametrization keeps the tensor as it is)."""
    inverse = getattr(module, "right_inverse", None)
    if inverse is None:
        return value
    try:
        return inverse(value)
    except NotImplementedError:
        return value


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor, and the tensors it is computed from."""

    def __init__(
        self, modules: Sequence[Module], original: Union[Tensor, Parameter], unsafe: bool = False
    ) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        # Taken now: storing right_inverse's value may give ``original`` another shape.
        original_shape, original_dtype = original.shape, original.dtype
        with tw.no_grad():
            new = original
            for module in reversed(self):  # type: ignore[call-overload]
                new = _right_inverse(module, new)
        if not isinstance(new, Tensor) and not isinstance(new, Sequence):
            raise ValueError(
                "'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                f"Got {type(new).__name__}"
            )
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            _register_parameter_or_buffer(self, "original", _store_into(original, new))
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError(
                        "'right_inverse' must return a Tensor or a Sequence of tensors; element "
                        f"{i} is a {type(originali).__name__}"
                    )
                if isinstance(original, Parameter):
                    originali = Parameter(originali.detach(), original.requires_grad)
                else:
                    originali = originali.detach().requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            Z = self()
            if not isinstance(Z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(Z).__name__}.")
            if Z.dtype != original_dtype or Z.shape != original_shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype of the "
                    f"tensor (unsafe=True allows it): unparametrized {original_dtype} "
                    f"{tuple(original_shape)}, parametrized {Z.dtype} {tuple(Z.shape)}"
                )

    def right_inverse(self, value: Tensor) -> None:
        """Store ``value`` as the parametrized tensor: the chain's right inverses, in reverse
        order, give the tensors kept in ``original``."""
        with tw.no_grad():
            for module in reversed(self):  # type: ignore[call-overload]
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                else:  # (unsafe only waives the shape and dtype checks)
                    raise RuntimeError(
                        f"parametrization {type(module).__name__} does not implement right_inverse."
                    )
            if self.is_tensor:
                self.original = _store_into(self.original, value)
            else:
                if not isinstance(value, Sequence) or len(value) != self.ntensors:
                    raise ValueError(
                        f"'right_inverse' must return a sequence of {self.ntensors} tensors"
                    )
                for i, tensor in enumerate(value):
                    name = f"original{i}"
                    setattr(self, name, _store_into(getattr(self, name), tensor))

    def forward(self) -> Tensor:
        """The parametrized tensor."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            originals = (getattr(self, f"original{i}") for i in range(self.ntensors))
            x = self[0](*originals)
        for module in list(self)[1:]:
            x = module(x)
        return x


def _refuse_pickling(self: Module) -> None:
    raise RuntimeError(
        "Serialization of parametrized modules is only supported through state_dict(): save "
        "module.state_dict() and load it into a module parametrized the same way"
    )


def _copy_without_pickling(self: Module, memo: dict) -> Module:
    """``copy.deepcopy`` of a parametrized module, which pickling's protocol would refuse."""
    if id(self) in memo:
        return memo[id(self)]
    replica = self.__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _inject_new_class(module: Module) -> None:
    """Give ``module`` a class of its own, where the parametrized properties go; as
    PyTorch's, it refuses to be pickled (the class exists in this process only) but can be
    deep-copied."""
    cls = module.__class__
    members: dict[str, Any] = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        members["__deepcopy__"] = _copy_without_pickling
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), members)


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return parametrization()
        key = (id(self), tensor_name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: Optional[str] = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, if given)."""
    parametrizations = getattr(module, "parametrizations", None)
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    if tensor_name is None:
        return len(parametrizations) > 0
    return tensor_name in parametrizations


def register_parametrization(
    module: Module, tensor_name: str, parametrization: Module, *, unsafe: bool = False
) -> Module:
    """Parametrize ``module.<tensor_name>`` by ``parametrization`` (appended to the chain if
    the tensor is parametrized already); returns ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        chain = module.parametrizations[tensor_name]
        if not unsafe:
            Y = getattr(module, tensor_name)
            X = parametrization(Y)
            if not isinstance(X, Tensor) or X.dtype != Y.dtype or X.shape != Y.shape:
                raise ValueError(
                    "Registering a parametrization may not change the shape or dtype of the "
                    "tensor (unsafe=True allows it)"
                )
            Z = _right_inverse(parametrization, Y)
            if not isinstance(Z, Tensor) or Z.dtype != Y.dtype or Z.shape != Y.shape:
                raise ValueError(
                    "The parametrization's right_inverse must return a tensor of the shape and "
                    f"dtype of the tensor it inverts ({Y.dtype} {tuple(Y.shape)})"
                )
        chain.append(parametrization)
        chain.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        chain = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = chain
    else:
        raise ValueError(
            f"Module '{module}' does not have a parameter, a buffer, or a parametrized element "
            f"with name '{tensor_name}'"
        )
    return module


def remove_parametrizations(
    module: Module, tensor_name: str, leave_parametrized: bool = True
) -> Module:
    """Undo the parametrizations of ``module.<tensor_name>``: it becomes a plain parameter or
    buffer again, holding the parametrized value (``leave_parametrized=True``) or the
    original one."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            with tw.no_grad():
                t = getattr(module, tensor_name)
            if t.dtype != original.dtype:
                raise ValueError(
                    f"remove_parametrizations: the parametrized tensor has dtype {t.dtype}, "
                    f"the original {original.dtype}; use leave_parametrized=False"
                )
            with tw.no_grad():
                if t.shape == original.shape:
                    original.copy_(t)
                else:
                    original.data = t.detach().clone()
    else:
        if not leave_parametrized:
            raise ValueError(
                "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                "parametrized in terms of a sequence of tensors."
            )
        t = getattr(module, tensor_name)  # with grad: whether it needs one is kept
        if isinstance(chain.original0, Parameter) and t.requires_grad:
            original = Parameter(t.detach())
        else:
            original = t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class, not the subclass made for its parametrizations."""
    if is_parametrized(module):
        return module.__class__.__bases__[0]
    return type(module)


def transfer_parametrizations_and_params(
    from_module: Module, to_module: Module, tensor_name: Optional[str] = None
) -> Module:
    """Register on ``to_module`` the parametrizations of ``from_module``'s ``tensor_name``
    (every parametrized tensor when None), sharing the same parametrization modules and
    ``original`` tensors (so the two modules share the parameters); a tensor
    ``to_module`` lacks is first created as a Parameter of ``from_module``'s value.
    Returns ``to_module``."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name)))
        source = from_module.parametrizations[name]
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        # The stored tensors: ``original``, or ``original0``, ``original1``, ...
        if hasattr(source, "original"):
            target.original = source.original
        else:
            index = 0
            while hasattr(source, f"original{index}"):
                setattr(target, f"original{index}", getattr(source, f"original{index}"))
                index += 1
    return to_module
