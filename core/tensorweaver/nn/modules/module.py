"""``Module``: the base class of every layer, with PyTorch's registration and state API.

Parameters, buffers and submodules live in three ordered dicts (``_parameters``, ``_buffers``,
``_modules``) filled by ``__setattr__``, so traversal order is definition order, as in PyTorch.
Moving a module (``to``, ``float``, ``double``) rebinds each Parameter's storage in place, so
optimizers that hold the Parameter objects keep working.
"""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any, Callable, Optional, Union

import tensorweaver as tw
from tensorweaver.contract.dtypes import DType
from tensorweaver.nn.modules.backward_hook import BackwardHook
from tensorweaver.nn.parameter import Buffer, Parameter
from tensorweaver.tensor import Tensor


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """``load_state_dict``'s result, printed as PyTorch prints it."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


_hook_ids = itertools.count()

#: Hooks that run for every module (``register_module_forward_hook`` and the rest), before
#: each module's own; the option tables hold the ids registered with that option.
_global_forward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_forward_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_forward_hooks_with_kwargs: dict[int, bool] = {}
_global_forward_hooks_always_called: dict[int, bool] = {}
_global_backward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_backward_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_parameter_registration_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_buffer_registration_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_module_registration_hooks: OrderedDict[int, Callable] = OrderedDict()

#: The state_dict key (after the module's prefix) of ``get_extra_state``'s value.
_EXTRA_STATE_KEY_SUFFIX = "_extra_state"

#: Every module's hook tables, made empty in ``__init__`` (and on unpickling old modules).
_HOOK_TABLES = (
    "_forward_pre_hooks",
    "_forward_pre_hooks_with_kwargs",
    "_forward_hooks",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_backward_pre_hooks",
    "_backward_hooks",
    "_state_dict_pre_hooks",
    "_state_dict_hooks",
    "_state_dict_hooks_public",
    "_load_state_dict_pre_hooks",
    "_load_state_dict_post_hooks",
)


class RemovableHandle:
    """What registering a hook returns; ``remove()`` unregisters the hook (and forgets it in
    ``extra_dict``, the tables of its options)."""

    __slots__ = ("_tables", "id")

    def __init__(
        self, hooks: dict[int, Any], *, extra_dict: Union[dict, list[dict], None] = None
    ) -> None:
        extra = extra_dict if isinstance(extra_dict, list) else [extra_dict] * bool(extra_dict)
        self._tables = [hooks, *extra]
        self.id = next(_hook_ids)

    def remove(self) -> None:
        for table in self._tables:
            table.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _registered(hooks: Mapping[int, Callable], module: Any, name: str, value: Any) -> Any:
    """``value`` after the global registration ``hooks`` (each may return a replacement)."""
    for hook in hooks.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value


def _add_global_hook(table: OrderedDict, hook: Callable, *options: tuple[dict, bool]) -> Any:
    """Store ``hook`` in a global ``table`` and its id in each option table whose flag is
    set; returns the handle."""
    handle = RemovableHandle(table, extra_dict=[t for t, _ in options])
    table[handle.id] = hook
    for option, flag in options:
        if flag:
            option[handle.id] = True
    return handle


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, args)`` runs before every module's ``forward`` (before the module's own
    pre-hooks); a non-None result replaces ``args``."""
    return _add_global_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(
    hook: Callable, *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
    ``with_kwargs``) runs after every module's ``forward``, before the module's own hooks;
    a non-None result replaces ``output``."""
    return _add_global_hook(
        _global_forward_hooks,
        hook,
        (_global_forward_hooks_with_kwargs, with_kwargs),
        (_global_forward_hooks_always_called, always_call),
    )


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, grad_output)`` for every module, before the module's own pre-hooks."""
    return _add_global_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, grad_input, grad_output)`` for every module, before its own hooks."""
    return _add_global_hook(_global_backward_hooks, hook)


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, param)`` runs whenever a parameter is registered; a non-None
    result is registered instead."""
    return _add_global_hook(_global_parameter_registration_hooks, hook)


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, buffer)`` runs whenever a buffer is registered or assigned; a
    non-None result is stored instead."""
    return _add_global_hook(_global_buffer_registration_hooks, hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, submodule)`` runs whenever a child module is registered; a
    non-None result is registered instead."""
    return _add_global_hook(_global_module_registration_hooks, hook)


def _addindent(text: str, spaces: int) -> str:
    """Indent every line of ``text`` but the first (children inside a parent's repr)."""
    first, *rest = text.split("\n")
    if not rest:
        return text
    pad = " " * spaces
    return "\n".join([first] + [pad + line for line in rest])


def _parse_to(*args: Any, **kwargs: Any) -> tuple[Any, Optional[DType]]:
    """Split ``Module.to``'s PyTorch-style arguments into ``(device, dtype)``."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"Module.to() got unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, DType):
            dtype = arg
        elif isinstance(arg, Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, tw.Device)):
            device = arg
        elif isinstance(arg, bool):  # non_blocking given positionally
            continue
        else:
            raise TypeError(
                f"Module.to() expects a device (str or tw.Device), a dtype or a tensor, "
                f"got {type(arg).__name__}"
            )
    if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
        raise TypeError(
            f"Module.to() only accepts floating point or complex dtypes, but got desired "
            f"dtype={dtype}"
        )
    if dtype is not None and dtype.is_complex:
        # PyTorch warns too: complex parameters and buffers are new, not every module's
        # forward handles them
        warnings.warn(
            f"Module.to({dtype}): complex modules are a new feature; some modules may not work "
            "with complex parameters or buffers",
            UserWarning,
            stacklevel=3,
        )
    return device, dtype


def _in_memory_format(t: Tensor, memory_format: Any) -> Tensor:
    """``t`` contiguous in ``memory_format``; the channels-last formats need their rank."""
    ranks = {tw.channels_last: 4, tw.channels_last_3d: 5}
    rank = ranks.get(memory_format)
    if rank is not None and t.dim() != rank:
        name = str(memory_format).rpartition(".")[2]
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")
    return t.contiguous(memory_format=memory_format)


class Module:
    """Base class for all neural network modules; subclasses define ``forward``."""

    training: bool
    _version: int = 1  # state_dict layout version, bumped by subclasses that change it
    dump_patches: bool = False  # PyTorch's (unused) flag, kept for code that reads it
    call_super_init: bool = False  # PyTorch's flag: whether __init__ calls super().__init__

    def __init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", OrderedDict())
        set_(self, "_buffers", OrderedDict())
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", OrderedDict())
        for table in _HOOK_TABLES:
            set_(self, table, OrderedDict())

    def __setstate__(self, state: dict) -> None:
        # Modules pickled before a hook table existed get it empty, as PyTorch's do.
        self.__dict__.update(state)
        for table in _HOOK_TABLES:
            self.__dict__.setdefault(table, OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # _call_impl's test inlined: the call of a module without hooks is hot
        own = self.__dict__
        compiled = own.get("_compiled_call_impl")
        if compiled is not None:
            return compiled(*args, **kwargs)
        if not (
            own["_forward_pre_hooks"]
            or own["_forward_hooks"]
            or own["_backward_hooks"]
            or own["_backward_pre_hooks"]
            or _global_forward_pre_hooks
            or _global_forward_hooks
            or _global_backward_hooks
            or _global_backward_pre_hooks
        ):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        """``forward`` with the hooks around it (``__call__`` unless ``compile`` was used)."""
        if not (
            self._forward_pre_hooks
            or self._forward_hooks
            or self._backward_hooks
            or self._backward_pre_hooks
            or _global_forward_pre_hooks
            or _global_forward_hooks
            or _global_backward_hooks
            or _global_backward_pre_hooks
        ):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        """``forward`` between the forward hooks (the global ones first), its inputs and
        outputs wired to the backward hooks, in PyTorch's order."""
        pre_hooks = (*_global_forward_pre_hooks.items(), *self._forward_pre_hooks.items())
        for hook_id, hook in pre_hooks:
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {result}."
                        )
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        backward = None
        backward_hooks = [*_global_backward_hooks.values(), *self._backward_hooks.values()]
        backward_pre_hooks = [
            *_global_backward_pre_hooks.values(),
            *self._backward_pre_hooks.values(),
        ]
        given = args
        if backward_hooks or backward_pre_hooks:
            backward = BackwardHook(self, backward_hooks, backward_pre_hooks)
            args = backward.setup_input_hook(args)
        output = None
        called: set[int] = set()
        try:
            output = self.forward(*args, **kwargs)
            # (after forward, as PyTorch: a hook removed during forward does not run)
            forward_hooks = (*_global_forward_hooks.items(), *self._forward_hooks.items())
            for hook_id, hook in forward_hooks:
                called.add(hook_id)
                output = self._run_forward_hook(hook_id, hook, args, kwargs, output)
        except Exception:
            # Hooks registered with always_call=True still run, then the error propagates.
            for hook_id, hook in (*_global_forward_hooks.items(), *self._forward_hooks.items()):
                always = (
                    hook_id in self._forward_hooks_always_called
                    or hook_id in _global_forward_hooks_always_called
                )
                if not always or hook_id in called:
                    continue
                try:
                    output = self._run_forward_hook(hook_id, hook, args, kwargs, output)
                except Exception as err:
                    warnings.warn(
                        "forward hook with always_call=True raised an exception that was "
                        f"silenced as another error was raised in forward: {err}",
                        stacklevel=2,
                    )
            raise
        if self.__dict__.get("_is_full_backward_hook") is False and self._backward_hooks:
            _warn_non_full_backward_hook(given, args, output)
        return output if backward is None else backward.setup_output_hook(output)

    def _run_forward_hook(
        self, hook_id: int, hook: Callable, args: tuple, kwargs: dict, output: Any
    ) -> Any:
        if (
            hook_id in self._forward_hooks_with_kwargs
            or hook_id in _global_forward_hooks_with_kwargs
        ):
            result = hook(self, args, kwargs, output)
        else:
            result = hook(self, args, output)
        return output if result is None else result

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compile this module's call in place with ``tw.compile(..., *args, **kwargs)``;
        ``__call__`` runs the compiled form from now on."""
        self._compiled_call_impl = tw.compile(self._call_impl, *args, **kwargs)

    # ------------------------------------------------------------------ hooks

    @staticmethod
    def _add_hook(
        table: OrderedDict, hook: Callable, prepend: bool, *options: tuple[dict, bool]
    ) -> RemovableHandle:
        """Store ``hook`` in ``table`` (first if ``prepend``) and its id in each option table
        whose flag is set."""
        handle = RemovableHandle(table, extra_dict=[t for t, _ in options])
        table[handle.id] = hook
        if prepend:
            table.move_to_end(handle.id, last=False)
        for option, flag in options:
            if flag:
                option[handle.id] = True
        return handle

    def register_forward_pre_hook(
        self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """``hook(module, args)`` runs before ``forward``; a non-None result replaces ``args``.
        With ``with_kwargs``: ``hook(module, args, kwargs)`` returning None or
        ``(args, kwargs)``. ``prepend`` runs it before the hooks already registered."""
        return self._add_hook(
            self._forward_pre_hooks,
            hook,
            prepend,
            (self._forward_pre_hooks_with_kwargs, with_kwargs),
        )

    def register_forward_hook(
        self,
        hook: Callable,
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """``hook(module, args, output)`` (``hook(module, args, kwargs, output)`` with
        ``with_kwargs``) runs after ``forward``; a non-None result replaces ``output``.
        ``always_call`` runs it even when ``forward`` raises."""
        return self._add_hook(
            self._forward_hooks,
            hook,
            prepend,
            (self._forward_hooks_with_kwargs, with_kwargs),
            (self._forward_hooks_always_called, always_call),
        )

    def register_full_backward_pre_hook(
        self, hook: Callable, prepend: bool = False
    ) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the gradients of the outputs are known; a
        non-None result (a tuple as long as ``grad_output``) replaces them."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients of the positional
        inputs are known (None for non-tensors and tensors without grad); a non-None result
        replaces ``grad_input``. All of a call's tensors that require grad, among its inputs
        and among its outputs, must share a dtype."""
        self._backward_hook_kind(True)
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """PyTorch's deprecated form of :meth:`register_full_backward_hook`: each call of the
        module warns FutureWarning as PyTorch's does (unless its output's node takes exactly
        its inputs' nodes). ``grad_output`` is the outputs' gradients; ``grad_input`` is the
        inputs' gradients, not PyTorch's gradients of its output node's own inputs (which
        depend on how an op is decomposed, and are what its warning says is unreliable)."""
        self._backward_hook_kind(False)
        return self._add_hook(self._backward_hooks, hook, False)

    def _backward_hook_kind(self, full: bool) -> None:
        """Record that the module's backward hooks are full ones (or not), refusing a mix."""
        if self.__dict__.get("_is_full_backward_hook", full) is not full:
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single "
                "Module. Please use only one of them."
            )
        self.__dict__["_is_full_backward_hook"] = full

    # ---------------------------------------------------------- registration

    def _check_name(self, kind: str, name: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
        if not name:
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain ".", got: {name}')

    def register_parameter(self, name: str, param: Optional[Parameter]) -> None:
        """Add ``param`` (or ``None``, a declared but absent parameter) under ``name``."""
        self._check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                "(tw.nn.Parameter or None required)"
            )
        if param is not None:
            param = _registered(_global_parameter_registration_hooks, self, name, param)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Optional[Tensor], persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (running stats); ``persistent=False``
        keeps it out of ``state_dict``."""
        self._check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                "(tw.Tensor or None required)"
            )
        if tensor is not None:
            tensor = _registered(_global_buffer_registration_hooks, self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Optional[Module]) -> None:
        """Add a child module under ``name`` (``None`` declares an absent child)."""
        self._check_name("module", name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if module is not None:
            module = _registered(_global_module_registration_hooks, self, name, module)
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._drop(name, keep=self._parameters)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                    "(tw.nn.Parameter or None expected)"
                )
            params[name] = None
        elif isinstance(value, Buffer):  # self.x = nn.Buffer(t): registered, as PyTorch 2.x
            if params is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._drop(name, keep=self._buffers)
            self.register_buffer(name, value, persistent=value.persistent)
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._drop(name, keep=self._modules)
            self._modules[name] = _registered(_global_module_registration_hooks, self, name, value)
        elif params is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as child module '{name}' "
                    "(tw.nn.Module or None expected)"
                )
            d["_modules"][name] = None
        elif params is not None and name in d["_buffers"]:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                    "(tw.Tensor or None expected)"
                )
            if value is not None:
                value = _registered(_global_buffer_registration_hooks, self, name, value)
            d["_buffers"][name] = value
        else:
            object.__setattr__(self, name, value)

    def _drop(self, name: str, keep: dict) -> None:
        """Forget ``name`` everywhere but in ``keep``, the store it is about to be set in
        (where it keeps its place in the order)."""
        self.__dict__.pop(name, None)
        for store in (self._parameters, self._buffers, self._modules):
            if store is not keep:
                store.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: registered entries are not in __dict__.
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            entries = d.get(store)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._buffers, self._modules):
            if name in store:
                del store[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        names = list(super().__dir__())
        names += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(n for n in set(names) if not n[0].isdigit())

    # ------------------------------------------------------------- traversal

    def named_modules(
        self, memo: Optional[set] = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module and all below it, depth first, each once unless ``remove_duplicate``
        is False."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        # The recursion of PyTorch's definition, walked with a stack of the open modules'
        # child iterators: a yield passes through one generator, not one per level (the
        # walk runs in parameters(), zero_grad() and clip_grad_norm_() of every step). A
        # module whose class or instance overrides named_modules walks its own part.
        walk = Module.named_modules
        stack = [(prefix, iter(self._modules.items()))]
        while stack:
            above, children = stack[-1]
            for name, module in children:
                if module is None:
                    continue
                child_prefix = f"{above}.{name}" if above else name
                if type(module).named_modules is not walk or "named_modules" in vars(module):
                    yield from module.named_modules(memo, child_prefix, remove_duplicate)
                    continue
                if remove_duplicate:
                    if module in memo:
                        continue
                    memo.add(module)
                yield child_prefix, module
                stack.append((child_prefix, iter(module._modules.items())))
                break
            else:
                stack.pop()

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(
        self, store: str, prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        if recurse:
            owners = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
        else:
            owners = iter([(prefix, self)])
        for owner_prefix, owner in owners:
            for name, value in getattr(owner, store).items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield (f"{owner_prefix}.{name}" if owner_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``(name, parameter)`` pairs; a parameter shared by several modules appears once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def get_submodule(self, target: str) -> Module:
        """The module at dotted path ``target`` (``""`` is this module)."""
        module = self
        if target == "":
            return module
        for part in target.split("."):
            child = module._modules.get(part)
            if not isinstance(child, Module):
                raise AttributeError(f"{module._get_name()} has no submodule `{part}`")
            module = child
        return module

    def get_parameter(self, target: str) -> Parameter:
        owner_path, _, name = target.rpartition(".")
        owner = self.get_submodule(owner_path)
        if owner._parameters.get(name) is None:
            raise AttributeError(f"{owner._get_name()} has no parameter `{name}`")
        return owner._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        owner_path, _, name = target.rpartition(".")
        owner = self.get_submodule(owner_path)
        if owner._buffers.get(name) is None:
            raise AttributeError(f"{owner._get_name()} has no buffer `{name}`")
        return owner._buffers[name]

    def set_submodule(self, target: str, module: Module, strict: bool = False) -> None:
        """Put ``module`` at dotted path ``target``, replacing the module there or (unless
        ``strict``) adding it to an existing parent."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    # ----------------------------------------------------------------- modes

    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and every submodule; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's ``.grad``: to None (default) or to zeros."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                with tw.no_grad():
                    param.grad.zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Call ``fn`` on every submodule (children first) and then on self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------- device / dtype

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        """Replace every parameter's storage, its gradient and every buffer by ``fn`` of it.

        Parameters keep their identity (their storage is rebound) so that optimizers built
        before the move still update the module's tensors."""
        for module in self.children():
            module._apply(fn)
        with tw.no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                param.data = fn(param.data)
                if param.grad is not None:
                    param.grad = fn(param.grad)
            for name, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[name] = fn(buf)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Move parameters and buffers to a device and/or cast floating point ones to a dtype:
        ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)``, or keywords;
        ``memory_format=`` lays out the 4-D and 5-D ones in that format."""
        memory_format = kwargs.pop("memory_format", None)
        device, dtype = _parse_to(*args, **kwargs)

        def convert(t: Tensor) -> Tensor:
            if (
                dtype is not None
                and (t.dtype.is_floating_point or t.dtype.is_complex)
                and t.dtype is not dtype
            ):
                t = t.to(dtype)
            if device is not None and t.device != device:
                t = t.to(device)
            if memory_format is not None and t.dim() in (4, 5):
                t = _in_memory_format(t, memory_format)
            return t

        return self._apply(convert)

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        """Give every parameter and buffer new memory on ``device`` (zeros here: there is no
        uninitialised memory), as after ``meta``-device construction; ``recurse=False``:
        only this module's own."""

        def empty(t: Tensor) -> Tensor:
            return tw.zeros_like(t, device=device)

        # (PyTorch's empty_like of an uninitialized parameter or buffer refuses: so does its
        # memory here, which its .data, a plain tensor, would not)
        for t in itertools.chain(self.parameters(recurse=recurse), self.buffers(recurse=recurse)):
            _ = t.native
        if recurse:
            return self._apply(empty)
        with tw.no_grad():
            for param in self._parameters.values():
                if param is not None:
                    param.data = empty(param.data)
            for name, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[name] = empty(buf)
        return self

    def share_memory(self) -> Module:
        """Move every parameter, its gradient and every buffer to shared memory
        (``Tensor.share_memory_`` of each, which an uninitialized one refuses)."""
        for param in self.parameters():
            param.share_memory_()
            if param.grad is not None:
                param.grad.share_memory_()
        for buf in self.buffers():
            buf.share_memory_()
        return self

    def _cast(self, dtype: DType) -> Module:
        return self._apply(
            lambda t: t.to(dtype) if t.dtype.is_floating_point and t.dtype is not dtype else t
        )

    def float(self) -> Module:
        return self._cast(tw.float32)

    def double(self) -> Module:
        return self._cast(tw.float64)

    def half(self) -> Module:
        return self._cast(tw.float16)

    def bfloat16(self) -> Module:
        return self._cast(tw.bfloat16)

    def cpu(self) -> Module:
        """Move to a CPU: the current backend's own when it has one (as ``Tensor.cpu``)."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Module:
        """Move to a CUDA device of the torch backend (``device``: an index or spec)."""
        from tensorweaver.cuda import device_spec

        return self.to(device_spec(device))

    def type(self, dst_type: Any) -> Module:
        """Cast every parameter and buffer to ``dst_type`` (floating and integer alike)."""
        return self._apply(lambda t: t.type(dst_type))

    # ----------------------------------------------------------- state dict

    def get_extra_state(self) -> Any:
        """State beyond parameters and buffers to save in ``state_dict`` (under
        ``_extra_state``); a module that has any overrides this and ``set_extra_state``."""
        raise RuntimeError(
            "Reached a code path in Module.get_extra_state() that should never be called: "
            f"{self._get_name()} does not override get_extra_state."
        )

    def set_extra_state(self, state: Any) -> None:
        """Restore what ``get_extra_state`` returned, when loading a state dict."""
        raise RuntimeError(
            "Reached a code path in Module.set_extra_state() that should never be called: "
            f"{self._get_name()} does not override set_extra_state."
        )

    def _has_extra_state(self, method: str) -> bool:
        return getattr(type(self), method) is not getattr(Module, method)

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = self._state_entry(param, keep_vars)
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = self._state_entry(buf, keep_vars)
        if self._has_extra_state("get_extra_state"):
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def _state_entry(self, tensor: Tensor, keep_vars: bool) -> Tensor:
        """What ``_save_to_state_dict`` stores for a parameter or buffer."""
        return tensor if keep_vars else tensor.detach()

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs before this module saves its state."""
        return self._add_hook(self._state_dict_pre_hooks, hook, False)

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` runs after this module and its
        children saved their state; it may change ``state_dict`` in place and must return
        None."""
        return self._add_hook(
            self._state_dict_hooks, hook, False, (self._state_dict_hooks_public, True)
        )

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """As ``register_state_dict_post_hook``, but a non-None result of the hook of the
        module ``state_dict`` is called on replaces the returned dict (PyTorch's older
        private form)."""
        return self._add_hook(self._state_dict_hooks, hook, False)

    def state_dict(
        self,
        *args: Any,
        destination: Optional[dict] = None,
        prefix: str = "",
        keep_vars: bool = False,
    ) -> Any:
        """Parameters, persistent buffers and extra state by dotted name, in registration
        order, detached unless ``keep_vars``. A new dict is an OrderedDict whose
        ``_metadata`` maps each module's prefix to ``{"version": module._version}``."""
        if args:  # PyTorch's deprecated positional form: (destination, prefix, keep_vars)
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead.",
                FutureWarning,
                stacklevel=2,
            )
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # type: ignore[attr-defined]
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars
                )
        for hook_id, hook in self._state_dict_hooks.items():
            result = hook(self, destination, prefix, local_metadata)
            if hook_id in self._state_dict_hooks_public:
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:
                destination = result
        return destination

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` runs before this module loads its entries; it may
        change ``state_dict`` in place."""
        return self._add_hook(self._load_state_dict_pre_hooks, partial(hook, self), False)

    def _register_load_state_dict_pre_hook(
        self, hook: Callable, with_module: bool = False
    ) -> RemovableHandle:
        """As ``register_load_state_dict_pre_hook``; without ``with_module`` the hook is
        not given the module (PyTorch's private form)."""
        return self._add_hook(
            self._load_state_dict_pre_hooks, partial(hook, self) if with_module else hook, False
        )

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after this module and its children loaded;
        it may change ``incompatible_keys.missing_keys``/``unexpected_keys`` in place and
        must return None."""
        return self._add_hook(self._load_state_dict_post_hooks, hook, False)

    def _load_from_state_dict(
        self,
        state_dict: Mapping[str, Any],
        prefix: str,
        *rest: Any,
    ) -> None:
        """Copy this module's own entries out of ``state_dict``; record what does not fit.

        PyTorch's arguments after ``prefix`` are ``local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs``; the shorter ``missing_keys, unexpected_keys,
        error_msgs`` (no metadata, strict) is accepted from overrides written that way."""
        local_metadata, strict, missing_keys, unexpected_keys, error_msgs = (
            rest if len(rest) == 5 else ({}, True, *rest)
        )
        for hook in self._load_state_dict_pre_hooks.values():
            hook(
                state_dict,
                prefix,
                local_metadata,
                strict,
                missing_keys,
                unexpected_keys,
                error_msgs,
            )
        persistent = {
            n: b for n, b in self._buffers.items() if n not in self._non_persistent_buffers_set
        }
        local = {
            k: v
            for k, v in itertools.chain(self._parameters.items(), persistent.items())
            if v is not None
        }
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            self._load_entry(name, key, target, state_dict[key], assign, error_msgs)
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        if self._has_extra_state("set_extra_state"):
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        if not strict:
            return
        for key in state_dict:
            if not key.startswith(prefix) or key == extra_key:
                continue
            head, dot, _ = key[len(prefix) :].partition(".")
            known = head in self._modules if dot else head in local
            if not known:
                unexpected_keys.append(key)

    def _load_entry(
        self, name: str, key: str, target: Tensor, value: Any, assign: bool, error_msgs: list
    ) -> None:
        """Copy (or with ``assign``, store) ``value`` as the entry ``name``; record why not."""
        from tensorweaver.nn.parameter import is_lazy

        if not isinstance(value, Tensor) and (
            hasattr(value, "__dlpack__") or hasattr(value, "__array__")
        ):
            # a torch tensor or NumPy array (torch.load_state_dict refuses them; a model
            # ported from torch loads torch's weights directly)
            value = tw.as_tensor(value)
        if not isinstance(value, Tensor):
            error_msgs.append(
                f'While copying the parameter named "{key}", expected tw.Tensor or '
                f"Tensor-like object from checkpoint but received {type(value)}"
            )
            return
        lazy = is_lazy(target)
        # Checkpoints from before 0-dim tensors hold a scalar as one element.
        if not lazy and target.dim() == 0 and value.dim() == 1 and value.shape[0] == 1:
            value = value[0]
        if not lazy and tuple(value.shape) != tuple(target.shape):
            error_msgs.append(
                f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} "
                f"from checkpoint, the shape in current model is {tuple(target.shape)}."
            )
            return
        try:
            if assign:
                if isinstance(target, Parameter):
                    if isinstance(value, Parameter):
                        value.requires_grad_(target.requires_grad)
                    else:
                        value = Parameter(value, requires_grad=target.requires_grad)
                setattr(self, name, value)
            else:
                with tw.no_grad():
                    target.copy_(value.to(target.dtype).to(target.device))
        except Exception as error:
            error_msgs.append(
                f'While copying the parameter named "{key}", whose dimensions in the model '
                f"are {target.shape} and whose dimensions in the checkpoint are "
                f"{value.shape}, an exception occurred : {error.args}."
            )

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Any:
        """Copy parameters and buffers from ``state_dict`` into this module's own tensors
        (with ``assign``, make the state dict's tensors the module's, keeping each
        parameter's ``requires_grad``).

        Returns ``(missing_keys, unexpected_keys)``. Raises ``RuntimeError`` listing every
        problem when a shape differs, or, with ``strict=True``, when a key is missing or
        unexpected."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)  # a copy: layers may fill in legacy keys
        if metadata is not None:
            state_dict._metadata = metadata  # type: ignore[attr-defined]

        def load(module: Module, local_state: dict, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            module._load_from_state_dict(
                local_state, prefix, local_metadata, True, missing, unexpected, errors
            )
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = f"{prefix}{name}."
                    child_state = {
                        k: v for k, v in local_state.items() if k.startswith(child_prefix)
                    }
                    load(child, child_state, child_prefix)
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, keys) is not None:
                    raise AssertionError(
                        "Hooks registered with ``register_load_state_dict_post_hook`` are not "
                        "expected to return new values, if incompatible_keys need to be "
                        "modified, it should be done inplace."
                    )

        load(self, state_dict)
        if strict:
            if unexpected:
                names = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {names}. ")
            if missing:
                names = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {names}. ")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {self._get_name()}:\n\t" + "\n\t".join(errors)
            )
        return _IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------ repr

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr``; layers override it."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): {_addindent(repr(module), 2)}" for name, module in self._modules.items()
        ]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


def _warn_non_full_backward_hook(args: tuple, hooked: tuple, output: Any) -> None:
    """PyTorch's FutureWarning for a module call that a non-full backward hook watches: it
    misses gradients unless the module maps a tuple of tensors to one output node that takes
    exactly the inputs' nodes. ``hooked``: ``args`` as forward received them, behind the
    hook's nodes (which PyTorch's non-full hook does not add: they stand for ``args``)."""
    outputs = output if isinstance(output, tuple) else (output,)
    missing = ""
    if not all(isinstance(t, tw.Tensor) for t in outputs):
        missing = "a Module that does not return a single Tensor or a tuple of Tensors"
    elif not all(isinstance(t, tw.Tensor) for t in args):
        missing = "a Module that does not take as input a single Tensor or a tuple of Tensors"
    else:
        nodes = {t.grad_fn for t in outputs if t.grad_fn is not None}
        if len(nodes) != 1:
            missing = "outputs generated by other than one autograd Node"
        else:
            (node,) = nodes
            behind = {
                id(h.grad_fn): t.grad_fn or t  # (a leaf: an AccumulateGrad, never an input's)
                for t, h in zip(args, hooked)
                if h.grad_fn is not None
            }
            taken = {behind.get(id(f), f) for f, _ in node.next_functions}
            if {t.grad_fn for t in args if t.grad_fn is not None} != taken:
                missing = "a forward that contains multiple autograd Nodes"
    if missing:
        warnings.warn(
            f"Using a non-full backward hook on {missing} is deprecated and will be removed "
            "in future versions: the hook will miss some gradients. Use "
            "register_full_backward_hook for the documented behavior.",
            FutureWarning,
            stacklevel=3,
        )
