"""Module containers: ``Sequential``, ``ModuleList`` and ``ModuleDict``."""

from __future__ import annotations

import itertools
import operator
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Union

from tensorweaver.nn.modules.module import Module, _addindent


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
    if not isinstance(module, Module):
        raise TypeError(f"module should be of type Module, got {type(module).__name__}")
    modules = list(container._modules.values())
    modules.insert(index, module)
    _renumber(container, modules)


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
        _insert(self, index, module)
        return self

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
        if isinstance(modules, (Module, Mapping)) or not isinstance(modules, Iterable):
            raise TypeError(
                f"ModuleList.extend should be called with an iterable of modules, "
                f"but got {type(modules).__name__}"
            )
        for module in modules:
            self.append(module)
        return self

    def insert(self, index: int, module: Module) -> None:
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
        """Add ``modules``: a mapping, or an iterable of ``(name, module)`` pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for i, pair in enumerate(pairs):
            if len(pair) != 2:
                raise ValueError(
                    f"ModuleDict update sequence element #{i} has length {len(pair)}; 2 is required"
                )
            self[pair[0]] = pair[1]
