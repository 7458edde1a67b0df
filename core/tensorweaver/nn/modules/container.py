"""Module containers: ``Sequential``, ``ModuleList``, ``ModuleDict``, ``ParameterList`` and
``ParameterDict``."""

from __future__ import annotations

import itertools
import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Optional, Union

from tensorweaver.nn.modules.module import Module, _addindent
from tensorweaver.nn.parameter import Parameter
from tensorweaver.tensor import Tensor


def _abs_index(container: Module, idx: int) -> int:
    """``idx`` as a non-negative position in ``container``, or IndexError naming both."""
    idx = operator.index(idx)
    size = len(container._modules)
    if not -size <= idx < size:
        raise IndexError(
            f"index {idx} is out of range for {container._get_name()} of length {size}"
        )
    return idx % size


def _renumber(container: Module, modules: list[Module] | None = None) -> None:
    """Rename children (or set them to ``modules``) as ``"0"``, ``"1"``, ... after an insertion
    or deletion."""
    if modules is None:
        modules = list(container._modules.values())
    container._modules.clear()
    for i, module in enumerate(modules):
        container.add_module(str(i), module)


def _insert(container: Module, index: int, module: Module) -> None:
    modules = list(container._modules.values())
    modules.insert(index, module)
    _renumber(container, modules)


def _factor(container: Module, factor: Any) -> int:
    """``factor`` checked as the positive int count of ``Sequential * factor``."""
    if not isinstance(factor, int):
        raise TypeError(f"unsupported operand type(s) for *: {type(container)} and {type(factor)}")
    if factor <= 0:
        raise ValueError(f"Non-positive multiplication factor {factor} for {type(container)}")
    return factor


def _only_sequential(other: Any) -> Sequential:
    if not isinstance(other, Sequential):
        raise ValueError(
            f"add operator supports only objects of Sequential class, but {type(other)} is given."
        )
    return other


class Sequential(Module):
    """Runs its children in order, each one's output feeding the next:
    ``Sequential(m0, m1, ...)`` or ``Sequential(OrderedDict(name=module, ...))``."""

    def __init__(self, *args: Module) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, idx: Union[int, slice]) -> Union[Sequential, Module]:
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        return list(self._modules.values())[_abs_index(self, idx)]

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_abs_index(self, idx)]
        setattr(self, key, module)

    def __delitem__(self, idx: Union[int, slice]) -> None:
        keys = list(self._modules)
        targets = keys[idx] if isinstance(idx, slice) else [keys[_abs_index(self, idx)]]
        for key in targets:
            del self._modules[key]
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> Sequential:
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> Sequential:
        """Put ``module`` before position ``index`` (``-len <= index <= len``)."""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")  # PyTorch's class
        if not -len(self) <= index <= len(self):
            raise IndexError(f"Index out of range: {index}")
        _insert(self, index, module)
        return self

    def __add__(self, other: Sequential) -> Sequential:
        """A new Sequential of this one's modules then ``other``'s (the same objects)."""
        return Sequential(*self, *_only_sequential(other))

    def __iadd__(self, other: Sequential) -> Sequential:
        return self.extend(_only_sequential(other))

    def __mul__(self, factor: int) -> Sequential:
        """A new Sequential repeating these modules (the same objects) ``factor`` times."""
        return Sequential(*(list(self) * _factor(self, factor)))

    def __rmul__(self, factor: int) -> Sequential:
        return self.__mul__(factor)

    def __imul__(self, factor: int) -> Sequential:
        return self.extend(list(self) * (_factor(self, factor) - 1))

    def pop(self, key: Union[int, slice]) -> Module:
        module = self[key]
        del self[key]
        return module

    def forward(self, input: Any) -> Any:
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules that registers them as children (a plain list would hide them)."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, idx: Union[int, slice]) -> Union[ModuleList, Module]:
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[str(_abs_index(self, idx))]

    def __setitem__(self, idx: int, module: Module) -> None:
        setattr(self, str(_abs_index(self, idx)), module)

    def __delitem__(self, idx: Union[int, slice]) -> None:
        keys = list(self._modules)
        targets = keys[idx] if isinstance(idx, slice) else [str(_abs_index(self, idx))]
        for key in targets:
            del self._modules[key]
        _renumber(self)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __iadd__(self, modules: Iterable[Module]) -> ModuleList:
        return self.extend(modules)

    def __add__(self, other: Iterable[Module]) -> ModuleList:
        return ModuleList(itertools.chain(self, other))

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleList.extend should be called with an iterable of modules, but got "
                f"{type(modules).__name__}"
            )
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"module should be of type Module, got {type(module).__name__}")
        _insert(self, index, module)

    def pop(self, key: Union[int, slice]) -> Module:
        module = self[key]
        del self[key]
        return module

    def __repr__(self) -> str:
        # Runs of identical children print once, as "(first-last): n x child" (as PyTorch does).
        reprs = [repr(m) for m in self]
        if not reprs:
            return f"{self._get_name()}()"
        lines = []
        start = 0
        for text, group in itertools.groupby(reprs):
            count = len(list(group))
            end = start + count - 1
            head = f"({start}): {text}" if count == 1 else f"({start}-{end}): {count} x {text}"
            lines.append(_addindent(head, 2))
            start = end + 1
        return f"{self._get_name()}(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules (insertion ordered) that registers them as children."""

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def keys(self) -> Iterable[str]:
        return self._modules.keys()

    def items(self) -> Iterable[tuple[str, Module]]:
        return self._modules.items()

    def values(self) -> Iterable[Module]:
        return self._modules.values()

    def update(self, modules: Mapping[str, Module] | Iterable[tuple[str, Module]]) -> None:
        """Add ``modules``: a mapping or ModuleDict (in its order), or an iterable of
        ``(name, module)`` pairs."""
        if not isinstance(modules, Iterable):
            raise TypeError(
                "ModuleDict.update should be called with an iterable of key/value pairs, but "
                f"got {type(modules).__name__}"
            )
        if isinstance(modules, (Mapping, ModuleDict)):
            pairs: Iterable[Any] = modules.items()
        else:
            pairs = modules
        for i, pair in enumerate(pairs):
            if not isinstance(pair, Iterable):
                raise TypeError(
                    f"ModuleDict update sequence element #{i} should be Iterable; is "
                    f"{type(pair).__name__}"
                )
            if len(pair) != 2:
                raise ValueError(
                    f"ModuleDict update sequence element #{i} has length {len(pair)}; 2 is required"
                )
            self[pair[0]] = pair[1]


def _as_parameter(value: Any) -> Any:
    """A plain tensor wrapped in a Parameter (as PyTorch's parameter containers do); anything
    else unchanged."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value: Any, by_type: bool) -> str:
    """One entry of a parameter container's repr: the tensor's dtype (ParameterList) or its
    ``type()`` name (ParameterDict), as PyTorch prints them, and any device but the CPU."""
    if isinstance(value, Tensor):
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        size = "x".join(str(n) for n in value.shape)
        where = "" if value.device.type == "cpu" else f" ({value.device})"
        name = value.type() if by_type else value.dtype
        return f"{kind} containing: [{name} of size {size}{where}]"
    return f"Object of type: {type(value).__name__}"


class _ParameterContainer(Module):
    """What ParameterList and ParameterDict share: they hold parameters, they are not run."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self._get_name()} should not be called.")


class ParameterList(_ParameterContainer):
    """A list of parameters registered under ``"0"``, ``"1"``, ... (plain tensors are wrapped
    in Parameters; other objects are kept as plain attributes)."""

    def __init__(self, values: Optional[Iterable[Any]] = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _abs_index(self, idx: int) -> int:
        idx = operator.index(idx)
        if not -len(self) <= idx < len(self):
            raise IndexError(f"index {idx} is out of range for ParameterList of length {len(self)}")
        return idx % len(self)

    def __getitem__(self, idx: Union[int, slice]) -> Any:
        if isinstance(idx, slice):
            return type(self)(self[i] for i in range(len(self))[idx])
        return getattr(self, str(self._abs_index(idx)))

    def __setitem__(self, idx: int, value: Any) -> None:
        setattr(self, str(self._abs_index(idx)), _as_parameter(value))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(
                "ParameterList.extend should be called with an iterable, but got "
                f"{type(values).__name__}"
            )
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({i}): {_describe(v, False)}" for i, v in enumerate(self))


class ParameterDict(_ParameterContainer):
    """A dict of parameters registered under their (string) keys, in insertion order (plain
    tensors are wrapped in Parameters; other objects are kept as plain attributes)."""

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _check_key(key: Any) -> str:
        if not isinstance(key, str):
            raise TypeError(
                f"ParameterDict keys must be strings, got {type(key).__name__} ({key!r})"
            )
        return key

    def __getitem__(self, key: str) -> Any:
        return getattr(self, self._check_key(key))

    def __setitem__(self, key: str, value: Any) -> None:
        self._check_key(key)
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def keys(self) -> Iterable[str]:
        return self._keys.keys()

    def items(self) -> Iterable[tuple[str, Any]]:
        return ((k, self[k]) for k in self._keys)

    def values(self) -> Iterable[Any]:
        return (self[k] for k in self._keys)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key: str) -> Any:
        value = self[key]
        del self[key]
        return value

    def popitem(self) -> tuple[str, Any]:
        if not self._keys:
            raise KeyError("popitem(): dictionary is empty")
        key = next(reversed(self))
        return key, self.pop(key)

    def clear(self) -> None:
        for key in list(self._keys):
            del self[key]

    def copy(self) -> ParameterDict:
        """A new ParameterDict holding the same parameters."""
        return ParameterDict(self.items())

    def fromkeys(self, keys: Iterable[str], default: Any = None) -> ParameterDict:
        return ParameterDict((k, default) for k in keys)

    def update(self, parameters: Any) -> None:
        """Add ``parameters``: a mapping (a plain dict's items in sorted key order, as in
        PyTorch; an OrderedDict or ParameterDict in its own order), or ``(key, value)``
        pairs."""
        if not isinstance(parameters, Iterable):
            raise TypeError(
                "ParameterDict.update should be called with an iterable of key/value pairs, "
                f"but got {type(parameters).__name__}"
            )
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs: Iterable[Any] = parameters.items()
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = parameters
        for i, pair in enumerate(pairs):
            if not isinstance(pair, Iterable) or len(pair) != 2:
                raise ValueError(
                    f"ParameterDict update sequence element #{i} must be a (key, value) pair, "
                    f"got {pair!r}"
                )
            self[pair[0]] = pair[1]

    def __or__(self, other: ParameterDict) -> ParameterDict:
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: ParameterDict) -> ParameterDict:
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other: ParameterDict) -> ParameterDict:
        self.update(other)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(v, True)}" for k, v in self.items())
